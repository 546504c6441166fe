//! [`WebhookUrl`]: the HTTPS address a webhook delivers to, parsed once and
//! kept in normalised form.

use std::error::Error;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An address the service may deliver webhooks to
/// (`RegisterWebhook::url`, `CreateShipment::webhook_url`): any HTTPS URL a
/// browser would open, in the normalised form of the
/// [WHATWG URL standard](https://url.spec.whatwg.org/) (the `url` crate's
/// serialisation), which is what the service stores and shows.
///
/// Accepted:
///
/// - the scheme `https`, in any case;
/// - a host name per RFC 1123 (labels of letters, digits and inner hyphens,
///   at most 63 characters each, at most 253 in all, one trailing dot
///   allowed); an internationalised name is converted to its punycode form;
/// - an IPv4 or IPv6 address (`https://[2606:4700::1111]/`);
/// - any port, path and query, percent-encoded or not (characters that need
///   it are percent-encoded).
///
/// Refused: any other scheme, credentials (`user:password@`), a fragment
/// (`#...`, never sent to a server), white space at either end or a control
/// character anywhere, and more than [`WebhookUrl::MAX_LEN`] bytes, as sent
/// or once normalised (a path of just `/` is not counted: normalising adds
/// it to `https://host?query`).
///
/// Parsing does not judge the address: the service also refuses hosts that
/// are not on the public internet, which only it can tell.
///
/// ```
/// use shipment_sdk::model::{WebhookUrl, WebhookUrlError};
///
/// let url = WebhookUrl::parse("HTTPS://Bücher.Example:8443/hooks/%7Eme?v=1").unwrap();
/// assert_eq!(url.as_str(), "https://xn--bcher-kva.example:8443/hooks/%7Eme?v=1");
///
/// let plain: WebhookUrl = "https://shop.example.com".parse().unwrap();
/// assert_eq!(plain.to_string(), "https://shop.example.com/");
///
/// assert!(matches!(
///     WebhookUrl::parse("http://shop.example.com/hooks"),
///     Err(WebhookUrlError::NotHttps { .. })
/// ));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WebhookUrl(url::Url);

impl WebhookUrl {
    /// Longest webhook URL, in bytes, as sent and once normalised.
    pub const MAX_LEN: usize = 2048;
    /// Longest host name, in characters (without a trailing dot).
    pub const MAX_HOST_NAME_LEN: usize = 253;
    /// Longest label of a host name, in characters.
    pub const MAX_LABEL_LEN: usize = 63;

    /// Parses and normalises `raw`, or says what is wrong with it.
    pub fn parse(raw: &str) -> Result<WebhookUrl, WebhookUrlError> {
        // A cheap bound before any parsing; the exact count follows.
        if raw.len() > WebhookUrl::MAX_LEN + 1 {
            return Err(WebhookUrlError::TooLong { len: raw.len() });
        }
        // The URL standard drops these silently; a URL that carries them is
        // more likely a paste gone wrong than what was meant.
        if raw.starts_with(char::is_whitespace)
            || raw.ends_with(char::is_whitespace)
            || raw.contains(char::is_control)
        {
            return Err(WebhookUrlError::StrayCharacters);
        }
        let url = url::Url::parse(raw).map_err(|e| match e {
            url::ParseError::EmptyHost => WebhookUrlError::NoHost,
            e => WebhookUrlError::Malformed(e),
        })?;
        if url.scheme() != "https" {
            return Err(WebhookUrlError::NotHttps {
                scheme: url.scheme().to_owned(),
            });
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(WebhookUrlError::Credentials);
        }
        if url.fragment().is_some() {
            return Err(WebhookUrlError::Fragment);
        }
        match url.host() {
            None => return Err(WebhookUrlError::NoHost),
            Some(url::Host::Domain(name)) => host_name(name)?,
            Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => {}
        }
        let root = usize::from(url.path() == "/");
        if raw.len() > WebhookUrl::MAX_LEN + root {
            return Err(WebhookUrlError::TooLong { len: raw.len() });
        }
        let normalised = url.as_str().len();
        if normalised > WebhookUrl::MAX_LEN + root {
            return Err(WebhookUrlError::TooLongNormalised { len: normalised });
        }
        Ok(WebhookUrl(url))
    }

    /// The normalised URL.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The parsed URL, for its host, port and path.
    pub fn as_url(&self) -> &url::Url {
        &self.0
    }

    /// The normalised URL, owned.
    pub fn into_string(self) -> String {
        self.0.into()
    }
}

/// RFC 1123 host names, checked after the URL parser has converted an
/// internationalised name to ASCII (and lowercased it).
fn host_name(name: &str) -> Result<(), WebhookUrlError> {
    let bare = name.strip_suffix('.').unwrap_or(name);
    let invalid = || WebhookUrlError::InvalidHostName {
        host: name.to_owned(),
    };
    for label in bare.split('.') {
        let b = label.as_bytes();
        if b.is_empty()
            || b[0] == b'-'
            || b[b.len() - 1] == b'-'
            || !b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        {
            return Err(invalid());
        }
        if label.len() > WebhookUrl::MAX_LABEL_LEN {
            return Err(WebhookUrlError::LabelTooLong {
                label: label.to_owned(),
            });
        }
    }
    if bare.len() > WebhookUrl::MAX_HOST_NAME_LEN {
        return Err(WebhookUrlError::HostNameTooLong { len: bare.len() });
    }
    Ok(())
}

impl fmt::Debug for WebhookUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WebhookUrl").field(&self.as_str()).finish()
    }
}

impl fmt::Display for WebhookUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WebhookUrl {
    type Err = WebhookUrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WebhookUrl::parse(s)
    }
}

impl TryFrom<&str> for WebhookUrl {
    type Error = WebhookUrlError;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        WebhookUrl::parse(s)
    }
}

impl TryFrom<String> for WebhookUrl {
    type Error = WebhookUrlError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        WebhookUrl::parse(&s)
    }
}

impl AsRef<str> for WebhookUrl {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<WebhookUrl> for String {
    fn from(url: WebhookUrl) -> String {
        url.into_string()
    }
}

impl Serialize for WebhookUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for WebhookUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        WebhookUrl::parse(&raw).map_err(serde::de::Error::custom)
    }
}

/// Why a string is not a [`WebhookUrl`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WebhookUrlError {
    /// More than [`WebhookUrl::MAX_LEN`] bytes as sent.
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// More than [`WebhookUrl::MAX_LEN`] bytes once normalised (punycode,
    /// percent-encoding).
    TooLongNormalised {
        /// The normalised length in bytes.
        len: usize,
    },
    /// White space at either end, or a control character anywhere.
    StrayCharacters,
    /// Not a URL at all.
    Malformed(url::ParseError),
    /// A scheme other than `https`.
    NotHttps {
        /// The scheme given, lowercased.
        scheme: String,
    },
    /// No host.
    NoHost,
    /// A user name or password in the URL.
    Credentials,
    /// A fragment (`#...`).
    Fragment,
    /// A host name that RFC 1123 does not allow.
    InvalidHostName {
        /// The host name (in ASCII).
        host: String,
    },
    /// A host name label longer than [`WebhookUrl::MAX_LABEL_LEN`].
    LabelTooLong {
        /// The label.
        label: String,
    },
    /// A host name longer than [`WebhookUrl::MAX_HOST_NAME_LEN`].
    HostNameTooLong {
        /// Its length in characters.
        len: usize,
    },
}

impl fmt::Display for WebhookUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let max = WebhookUrl::MAX_LEN;
        match self {
            WebhookUrlError::TooLong { len } => {
                write!(f, "the URL is {len} bytes long; at most {max} are allowed")
            }
            WebhookUrlError::TooLongNormalised { len } => write!(
                f,
                "the URL is {len} bytes long once normalised (punycode, percent-encoding); \
                 at most {max} are allowed"
            ),
            WebhookUrlError::StrayCharacters => f.write_str(
                "the URL has white space at an end or a control character (such as a tab or \
                 a line break) in it",
            ),
            WebhookUrlError::Malformed(e) => write!(f, "not a URL: {e}"),
            WebhookUrlError::NotHttps { scheme } => write!(
                f,
                "the scheme is `{scheme}`; webhooks are delivered over `https` only"
            ),
            WebhookUrlError::NoHost => f.write_str("the URL names no host"),
            WebhookUrlError::Credentials => f.write_str(
                "the URL carries credentials (`user:password@`); deliveries are signed \
                 instead, so send none",
            ),
            WebhookUrlError::Fragment => f.write_str(
                "the URL has a fragment (`#...`), which is never sent to a server; remove it",
            ),
            WebhookUrlError::InvalidHostName { host } => write!(
                f,
                "`{host}` is not a valid host name: its labels must be letters, digits and \
                 hyphens, not empty and not starting or ending with a hyphen"
            ),
            WebhookUrlError::LabelTooLong { label } => write!(
                f,
                "the host name label `{label}` is {} characters long; at most {} are allowed",
                label.len(),
                WebhookUrl::MAX_LABEL_LEN
            ),
            WebhookUrlError::HostNameTooLong { len } => write!(
                f,
                "the host name is {len} characters long; at most {} are allowed",
                WebhookUrl::MAX_HOST_NAME_LEN
            ),
        }
    }
}

impl Error for WebhookUrlError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            WebhookUrlError::Malformed(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str) -> String {
        match WebhookUrl::parse(raw) {
            Ok(url) => url.into_string(),
            Err(e) => panic!("{raw:?} refused: {e}"),
        }
    }

    fn refused(raw: &str) -> WebhookUrlError {
        match WebhookUrl::parse(raw) {
            Ok(url) => panic!("{raw:?} accepted as {url}"),
            Err(e) => e,
        }
    }

    /// `https://` and `.example` around labels of `lens` characters.
    fn with_labels(lens: &[usize]) -> String {
        let labels: Vec<String> = lens.iter().map(|&n| "a".repeat(n)).collect();
        format!("https://{}.example/h", labels.join("."))
    }

    #[test]
    fn the_urls_the_old_grammar_refused_are_accepted() {
        for raw in [
            "https://hooks.eu-west-1.prod.example.co.uk/shipments",
            "https://shop.example.com/hooks/%7Eme",
            "https://xn--bcher-kva.example/x",
            "https://a--b.example/x",
            "https://shop.example.com/hooks?token=a%20b&x=%2F",
            "https://shop.example.com:1/h",
            "https://shop.example.com:65535/h",
            "https://example.com./h",
        ] {
            assert_eq!(ok(raw), raw);
        }
    }

    #[test]
    fn a_label_may_have_63_characters_and_not_64() {
        let at = with_labels(&[63]);
        assert_eq!(ok(&at), at);
        let over = with_labels(&[64]);
        assert_eq!(
            refused(&over),
            WebhookUrlError::LabelTooLong {
                label: "a".repeat(64)
            }
        );
    }

    #[test]
    fn a_host_name_may_have_253_characters_and_not_254() {
        // Three labels of 63, one of 53, `example` and 4 dots: 253 in all.
        let at = with_labels(&[63, 63, 63, 53]);
        let host_len = at.len() - "https://".len() - "/h".len();
        assert_eq!(host_len, 253);
        assert_eq!(ok(&at), at);
        let over = with_labels(&[63, 63, 63, 54]);
        assert_eq!(
            refused(&over),
            WebhookUrlError::HostNameTooLong { len: 254 }
        );
        // A trailing dot is not counted.
        let dotted = at.replace(".example/", ".example./");
        assert_eq!(ok(&dotted), dotted);
    }

    #[test]
    fn internationalised_names_become_punycode() {
        assert_eq!(
            ok("https://bücher.example/x"),
            "https://xn--bcher-kva.example/x"
        );
        assert_eq!(
            ok("https://BÜCHER.example/x"),
            "https://xn--bcher-kva.example/x"
        );
    }

    #[test]
    fn ip_literals_are_accepted_and_normalised() {
        assert_eq!(
            ok("https://[2606:4700::1111]:8443/h"),
            "https://[2606:4700::1111]:8443/h"
        );
        assert_eq!(
            ok("https://[2606:4700:0:0:0:0:0:1111]/h"),
            "https://[2606:4700::1111]/h"
        );
        assert_eq!(ok("https://8.8.8.8/h"), "https://8.8.8.8/h");
    }

    #[test]
    fn scheme_and_host_are_matched_case_insensitively_and_normalised() {
        assert_eq!(ok("HTTPS://EXAMPLE.com"), "https://example.com/");
        assert_eq!(ok("Https://Example.COM/X"), "https://example.com/X");
        assert_eq!(ok("https://example.com:443/h"), "https://example.com/h");
        assert_eq!(ok("https://example.com/a b"), "https://example.com/a%20b");
    }

    #[test]
    fn other_schemes_are_refused() {
        for (raw, scheme) in [
            ("http://example.com/h", "http"),
            ("HTTP://example.com/h", "http"),
            ("ftp://example.com/h", "ftp"),
            ("mailto:hooks@example.com", "mailto"),
        ] {
            assert_eq!(
                refused(raw),
                WebhookUrlError::NotHttps {
                    scheme: scheme.into()
                },
                "{raw}"
            );
        }
    }

    #[test]
    fn credentials_fragments_and_missing_hosts_are_refused() {
        for raw in [
            "https://user:pw@x.com/",
            "https://user@x.com/",
            "https://:pw@x.com/",
        ] {
            assert_eq!(refused(raw), WebhookUrlError::Credentials, "{raw}");
        }
        for raw in ["https://x.com/#frag", "https://x.com/h#"] {
            assert_eq!(refused(raw), WebhookUrlError::Fragment, "{raw}");
        }
        for raw in ["https://", "https:///", "https://:443/h"] {
            assert_eq!(refused(raw), WebhookUrlError::NoHost, "{raw}");
        }
    }

    #[test]
    fn what_is_not_a_url_or_not_a_host_name_is_refused() {
        for raw in ["", "not a url", "/hooks", "https://exa mple.com/"] {
            assert!(
                matches!(refused(raw), WebhookUrlError::Malformed(_)),
                "{raw}"
            );
        }
        for raw in [
            "https://-a.example/",
            "https://a-.example/",
            "https://a..example/",
            "https://a_b.example/",
            "https://*.example/",
        ] {
            assert!(
                matches!(refused(raw), WebhookUrlError::InvalidHostName { .. }),
                "{raw}"
            );
        }
        for raw in [
            " https://example.com/",
            "https://example.com/\n",
            "https://exam\tple.com/",
        ] {
            assert_eq!(refused(raw), WebhookUrlError::StrayCharacters, "{raw:?}");
        }
        for raw in [
            "https://999.0.0.1/",
            "https://[::1/",
            "https://example.com:65536/",
        ] {
            assert!(
                matches!(refused(raw), WebhookUrlError::Malformed(_)),
                "{raw}"
            );
        }
    }

    #[test]
    fn at_most_2048_bytes_are_accepted() {
        let prefix = "https://example.com/";
        let at = format!("{prefix}{}", "a".repeat(WebhookUrl::MAX_LEN - prefix.len()));
        assert_eq!(at.len(), 2048);
        assert_eq!(ok(&at), at);
        let over = format!("{at}a");
        assert_eq!(refused(&over), WebhookUrlError::TooLong { len: 2049 });
        let far_over = "a".repeat(100_000);
        assert_eq!(
            refused(&far_over),
            WebhookUrlError::TooLong { len: 100_000 }
        );
    }

    #[test]
    fn the_root_path_that_normalising_adds_is_not_counted() {
        let prefix = "https://a?";
        let sent = format!("{prefix}{}", "0".repeat(WebhookUrl::MAX_LEN - prefix.len()));
        let stored = ok(&sent);
        assert_eq!(stored.len(), 2049);
        // What is stored and shown parses again, to itself.
        assert_eq!(ok(&stored), stored);
        assert_eq!(
            refused(&format!("{sent}0")),
            WebhookUrlError::TooLongNormalised { len: 2050 }
        );
    }

    #[test]
    fn growth_by_normalising_counts() {
        // 2,048 bytes as sent; `é` (2 bytes) becomes `%C3%A9` (6).
        let prefix = "https://example.com/é";
        let sent = format!("{prefix}{}", "a".repeat(WebhookUrl::MAX_LEN - prefix.len()));
        assert_eq!(sent.len(), 2048);
        assert_eq!(
            refused(&sent),
            WebhookUrlError::TooLongNormalised { len: 2052 }
        );
    }

    #[test]
    fn serde_writes_the_normalised_form_and_reads_through_parse() {
        let url: WebhookUrl = serde_json::from_str("\"HTTPS://Example.com\"").unwrap();
        assert_eq!(
            serde_json::to_string(&url).unwrap(),
            "\"https://example.com/\""
        );
        let err = serde_json::from_str::<WebhookUrl>("\"http://example.com/\"").unwrap_err();
        assert!(err.to_string().contains("`http`"), "{err}");
    }

    #[test]
    fn every_error_says_what_is_wrong() {
        for (raw, says) in [
            ("http://x.com/", "scheme is `http`"),
            ("https://u:p@x.com/", "credentials"),
            ("https://x.com/#f", "fragment"),
            ("not a url", "not a URL"),
            (
                "https://a_b.example/",
                "`a_b.example` is not a valid host name",
            ),
        ] {
            let message = refused(raw).to_string();
            assert!(message.contains(says), "{raw}: {message}");
        }
    }

    #[test]
    fn debug_display_and_as_ref_show_the_normalised_form() {
        let url = WebhookUrl::parse("HTTPS://Example.com/h").unwrap();
        assert_eq!(format!("{url:?}"), "WebhookUrl(\"https://example.com/h\")");
        assert_eq!(url.to_string(), "https://example.com/h");
        assert_eq!(url.as_ref(), "https://example.com/h");
        assert_eq!(url.as_url().host_str(), Some("example.com"));
    }
}
