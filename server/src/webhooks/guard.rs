//! The SSRF guard at connect time: a DNS resolver that drops private
//! addresses, and the same check for URLs that name an address directly.

use std::net::{IpAddr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::domain::net::is_public;

/// Resolves names with the system resolver and keeps only public addresses
/// (or every address when private targets are allowed). Resolution happens
/// at connect time, so a name that changes to a private address after
/// registration is still refused.
#[derive(Debug, Clone, Copy)]
pub struct PublicOnlyResolver {
    /// `--allow-private-webhook-targets`: tests and local development.
    pub allow_private: bool,
}

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| allow_private || is_public(a.ip()))
                .collect();
            if allowed.is_empty() {
                let why = if found.is_empty() {
                    format!("{host} does not resolve")
                } else {
                    format!(
                        "{host} resolves only to private addresses, which webhooks may not reach"
                    )
                };
                return Err(why.into());
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// Refuses a URL whose host is a private IP literal (the resolver never sees
/// those). Names are left to [`PublicOnlyResolver`].
pub fn check_literal(url: &url::Url, allow_private: bool) -> Result<(), String> {
    let ip: Option<IpAddr> = match url.host() {
        Some(url::Host::Ipv4(v4)) => Some(v4.into()),
        Some(url::Host::Ipv6(v6)) => Some(v6.into()),
        _ => None,
    };
    match ip {
        Some(ip) if !allow_private && !is_public(ip) => Err(format!(
            "{ip} is a private address, which webhooks may not reach"
        )),
        _ => Ok(()),
    }
}

/// The registration-time check: the URL's host must resolve, and only to
/// public addresses (unless private targets are allowed).
pub async fn check_target(url: &url::Url, allow_private: bool) -> Result<(), String> {
    check_literal(url, allow_private)?;
    // Names are resolved only to find private addresses behind them; when
    // those are allowed there is nothing to find (and a name that does not
    // resolve today may tomorrow: deliveries record the failure).
    if allow_private {
        return Ok(());
    }
    let Some(url::Host::Domain(host)) = url.host() else {
        return Ok(());
    };
    let resolver = PublicOnlyResolver { allow_private };
    let name: Name = host
        .parse()
        .map_err(|_| format!("{host} is not a valid host name"))?;
    resolver
        .resolve(name)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn private_literals_and_names_are_refused_unless_allowed() {
        for raw in [
            "https://127.0.0.1/h",
            "https://[::1]/h",
            "https://localhost/h",
            "https://10.0.0.7/h",
        ] {
            let url = url::Url::parse(raw).unwrap();
            assert!(check_target(&url, false).await.is_err(), "{raw}");
            assert!(check_target(&url, true).await.is_ok(), "{raw}");
        }
    }

    #[test]
    fn public_literals_pass() {
        let url = url::Url::parse("https://8.8.8.8/h").unwrap();
        assert!(check_literal(&url, false).is_ok());
    }
}
