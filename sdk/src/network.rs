//! The network settings of a production network: which proxy, which extra
//! certificate authorities, which client certificate. Kept as the merchant
//! gave them and applied to reqwest's builder in one place
//! ([`NetworkOptions::apply`]), so no reqwest type is part of the SDK's API.

use std::fmt;

use reqwest::Url;

use crate::error::{Error, Result};

/// Where requests go.
#[derive(Clone, Default)]
pub(crate) enum ProxySetting {
    /// As curl does: `HTTPS_PROXY` for https:// addresses, `HTTP_PROXY`
    /// for http:// ones, `ALL_PROXY` for both, `NO_PROXY` for exceptions
    /// (upper or lower case; `HTTP_PROXY` is ignored when `REQUEST_METHOD`
    /// is set, in a CGI program, where a request could set it). Read when
    /// the client is built.
    #[default]
    Environment,
    /// Straight to the service; the environment is not read.
    Direct,
    /// Every request through this proxy; the environment is not read.
    Explicit(String),
}

impl fmt::Debug for ProxySetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxySetting::Environment => f.write_str("Environment"),
            ProxySetting::Direct => f.write_str("Direct"),
            ProxySetting::Explicit(url) => write!(f, "Explicit({})", redacted_proxy(url)),
        }
    }
}

/// A proxy address without its user name or password, for `Debug` and
/// errors.
fn redacted_proxy(raw: &str) -> String {
    match Url::parse(raw) {
        Ok(mut url) => {
            if !url.username().is_empty() || url.password().is_some() {
                let _ = url.set_username("[redacted]");
                let _ = url.set_password(None);
            }
            url.to_string()
        }
        Err(_) => "[not a URL]".to_owned(),
    }
}

/// A client certificate and its private key, both PEM.
#[derive(Clone)]
pub(crate) struct ClientIdentity {
    pub cert_chain: Vec<u8>,
    pub private_key: Vec<u8>,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientIdentity")
            .field(
                "cert_chain",
                &format_args!("{} bytes", self.cert_chain.len()),
            )
            .field("private_key", &"[redacted]")
            .finish()
    }
}

/// The network settings of [`Builder`](crate::Builder).
#[derive(Clone, Debug, Default)]
pub(crate) struct NetworkOptions {
    pub proxy: ProxySetting,
    /// PEM texts, each with one or more certificates.
    pub root_certificates: Vec<Vec<u8>>,
    pub identity: Option<ClientIdentity>,
}

impl NetworkOptions {
    /// `builder` with these settings; the first unusable one is an error.
    pub fn apply(&self, mut builder: reqwest::ClientBuilder) -> Result<reqwest::ClientBuilder> {
        builder = match &self.proxy {
            // reqwest reads the variables itself when no proxy is given
            // (its "system proxy"; without its `system-proxy` feature,
            // which the SDK leaves off, that is the environment alone, on
            // every platform, unless another crate of the program turns
            // the feature on, and macOS's or Windows's settings count
            // too). Kept as the default because it is what
            // curl, Go's and Python's clients do: a container on a network
            // whose egress goes through a proxy gets HTTPS_PROXY for every
            // program in it, and a client that ignored it would fail to
            // connect there.
            ProxySetting::Environment => builder,
            ProxySetting::Direct => builder.no_proxy(),
            ProxySetting::Explicit(raw) => builder.proxy(explicit_proxy(raw)?),
        };
        let mut roots = Vec::new();
        for pem in &self.root_certificates {
            roots.extend(root_certificates(pem)?);
        }
        if !roots.is_empty() {
            // Added to the platform's roots, not instead of them.
            builder = builder.tls_certs_merge(roots);
        }
        if let Some(identity) = &self.identity {
            builder = builder.identity(client_identity(identity)?);
        }
        Ok(builder)
    }

    /// Whether a TLS setting of the merchant's is in play, so that a
    /// failure to build the HTTP client is most likely theirs.
    pub fn has_tls_settings(&self) -> bool {
        !self.root_certificates.is_empty() || self.identity.is_some()
    }

    /// Which TLS setting TLS refused, once building the client failed: the
    /// only one given, or, with both, the roots if a client with them
    /// alone cannot be built either (only on this failure path).
    pub fn refused_setting(&self) -> &'static str {
        if self.identity.is_none() {
            return "root certificate";
        }
        if self.root_certificates.is_empty() {
            return "client certificate";
        }
        let roots_alone = NetworkOptions {
            identity: None,
            ..self.clone()
        };
        match roots_alone
            .apply(reqwest::Client::builder())
            .map(reqwest::ClientBuilder::build)
        {
            Ok(Ok(_)) => "client certificate",
            _ => "root certificate",
        }
    }
}

fn explicit_proxy(raw: &str) -> Result<reqwest::Proxy> {
    let shown = redacted_proxy(raw);
    let url = Url::parse(raw.trim())
        .map_err(|e| Error::Config(format!("the proxy `{shown}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(Error::Config(format!(
            "the proxy `{shown}` must be an http:// or https:// address (host and port)"
        )));
    }
    reqwest::Proxy::all(url)
        .map_err(|e| Error::Config(format!("the proxy `{shown}` cannot be used: {e}")))
}

fn root_certificates(pem: &[u8]) -> Result<Vec<reqwest::Certificate>> {
    let invalid = |reason: &str| Error::InvalidCertificate {
        what: "root certificate",
        reason: reason.to_owned(),
    };
    let certs = reqwest::Certificate::from_pem_bundle(pem)
        .map_err(|_| invalid("the PEM text is malformed (bad base64 or a broken section)"))?;
    if certs.is_empty() {
        return Err(invalid(
            "the PEM text holds no certificate (no `-----BEGIN CERTIFICATE-----` section)",
        ));
    }
    Ok(certs)
}

fn client_identity(identity: &ClientIdentity) -> Result<reqwest::Identity> {
    let invalid = |reason: &str| Error::InvalidCertificate {
        what: "client certificate",
        reason: reason.to_owned(),
    };
    if !contains_section(&identity.cert_chain, "CERTIFICATE") {
        return Err(invalid(
            "the certificate PEM holds no certificate (no `-----BEGIN CERTIFICATE-----` section)",
        ));
    }
    if !contains_section(&identity.private_key, "PRIVATE KEY") {
        return Err(invalid(
            "the key PEM holds no private key (PKCS#8 `PRIVATE KEY`, `RSA PRIVATE KEY` or \
             `EC PRIVATE KEY`)",
        ));
    }
    // reqwest's rustls identity is one PEM text with the chain and the key.
    let mut both = identity.cert_chain.clone();
    both.push(b'\n');
    both.extend_from_slice(&identity.private_key);
    reqwest::Identity::from_pem(&both)
        .map_err(|_| invalid("the certificate or key PEM is malformed, or holds something else"))
}

/// Whether `pem` has a `-----BEGIN ...<kind>-----` line, so that a
/// certificate passed as the key (or the reverse) is named as such.
fn contains_section(pem: &[u8], kind: &str) -> bool {
    String::from_utf8_lossy(pem).lines().any(|line| {
        let line = line.trim();
        line.starts_with("-----BEGIN ") && line.ends_with(&format!("{kind}-----"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(options: &NetworkOptions) -> Result<reqwest::Client> {
        options
            .apply(reqwest::Client::builder())
            .map(|b| b.build().unwrap())
    }

    #[test]
    fn a_proxy_must_be_an_http_or_https_url_and_its_password_never_shows() {
        for bad in ["", "proxy.internal:3128", "socks5://proxy:1080", "ftp://p"] {
            let options = NetworkOptions {
                proxy: ProxySetting::Explicit(bad.into()),
                ..NetworkOptions::default()
            };
            let err = build(&options).unwrap_err();
            assert!(matches!(err, Error::Config(_)), "{bad}: {err}");
        }
        let options = NetworkOptions {
            proxy: ProxySetting::Explicit("http://user:hunter2@proxy.internal:3128".into()),
            ..NetworkOptions::default()
        };
        build(&options).unwrap();
        let shown = format!("{options:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("user"),
            "{shown}"
        );
        assert!(shown.contains("proxy.internal:3128"), "{shown}");
        let options = NetworkOptions {
            proxy: ProxySetting::Explicit("socks5://user:hunter2@proxy:1080".into()),
            ..NetworkOptions::default()
        };
        let err = build(&options).unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn root_certificates_that_are_not_pem_certificates_are_refused() {
        for (pem, says) in [
            (&b""[..], "no certificate"),
            (b"not a pem at all", "no certificate"),
            (
                b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                "no certificate",
            ),
            (
                b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
                "malformed",
            ),
        ] {
            let options = NetworkOptions {
                root_certificates: vec![pem.to_vec()],
                ..NetworkOptions::default()
            };
            let err = build(&options).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidCertificate { what: "root certificate", reason } if reason.contains(says)),
                "{err}"
            );
        }
    }

    #[test]
    fn a_root_that_tls_cannot_read_is_named_when_the_client_is_built() {
        let garbage = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let mut options = crate::transport::HttpOptions::default();
        options.network.root_certificates.push(garbage.to_vec());
        let err = options.http_client().unwrap_err();
        assert!(
            matches!(&err, Error::InvalidCertificate { what: "root certificate", reason } if reason.contains("TLS refused")),
            "{err:?}"
        );
        // With a client certificate as well, still the root is named.
        options.network.identity = Some(ClientIdentity {
            cert_chain: garbage.to_vec(),
            private_key: b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_vec(),
        });
        let err = options.http_client().unwrap_err();
        assert!(
            matches!(
                &err,
                Error::InvalidCertificate {
                    what: "root certificate",
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn a_client_certificate_needs_a_certificate_and_a_key() {
        let cert = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let key = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        for (cert_chain, private_key, says) in [
            (&key[..], &key[..], "no certificate"),
            (&cert[..], &cert[..], "no private key"),
            (&b""[..], &b""[..], "no certificate"),
        ] {
            let options = NetworkOptions {
                identity: Some(ClientIdentity {
                    cert_chain: cert_chain.to_vec(),
                    private_key: private_key.to_vec(),
                }),
                ..NetworkOptions::default()
            };
            let err = build(&options).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidCertificate { what: "client certificate", reason } if reason.contains(says)),
                "{err}"
            );
            assert!(!format!("{options:?}").contains("AAAA"));
        }
    }
}
