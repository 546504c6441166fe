//! What a key's prefix says: whose key it is (a merchant's full `sk_` or
//! restricted `rk_` key, a courier company's `ck_`) and which environment it
//! works on (`test_` on staging, `live_` on production).
//!
//! The service, its SDK and `shipctl` all read keys by their prefix: the
//! server to refuse a key of the other kind or environment before any
//! database lookup, a client to refuse to send a key to the wrong
//! environment. They share this one parser, so the three cannot disagree
//! about what a prefix means. It needs no feature of the crate (the server
//! uses the SDK with `default-features = false`).
//!
//! ```
//! use shipment_sdk::keys::{KeyEnvironment, KeyKind, KeyPrefix};
//!
//! let (prefix, secret) = KeyPrefix::parse("sk_live_0123456789abcdefghijABCDEFGHIJ").unwrap();
//! assert_eq!(prefix.kind, KeyKind::Merchant);
//! assert_eq!(prefix.environment, KeyEnvironment::Production);
//! assert_eq!(prefix.as_str(), "sk_live_");
//! assert_eq!(secret, "0123456789abcdefghijABCDEFGHIJ");
//!
//! // A restricted key is a merchant's key too.
//! let (prefix, _) = KeyPrefix::parse("rk_test_0123456789abcdefghijABCDEFGHIJ").unwrap();
//! assert_eq!(prefix.kind, KeyKind::Restricted);
//! assert!(prefix.kind.is_merchant());
//!
//! // Not a key of the service: no prefix it issues.
//! assert_eq!(KeyPrefix::parse("pk_test_abc"), None);
//! // A signing key is a secret of the service, but not an API key.
//! assert_eq!(KeyPrefix::parse("whsec_abc"), None);
//! assert!(shipment_sdk::keys::looks_like_secret("whsec_abc"));
//! ```

/// Whose key it is, and how much it may do. Not exhaustive: restricted keys
/// (`rk_`) came after the first release, and another kind may follow; keep
/// a `_` arm when matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyKind {
    /// A merchant's full API key, `sk_…`: everything the merchant may do.
    Merchant,
    /// A courier company's key, `ck_…`.
    Courier,
    /// A merchant's restricted API key, `rk_…`: only what its permissions
    /// allow, and possibly only until it expires. It is taken wherever a
    /// merchant's full key is ([`KeyKind::is_merchant`]).
    Restricted,
}

impl KeyKind {
    /// Whether it is a merchant's key, full (`sk_`) or restricted (`rk_`):
    /// the keys the merchant routes take.
    pub fn is_merchant(self) -> bool {
        matches!(self, KeyKind::Merchant | KeyKind::Restricted)
    }

    /// The prefix of this kind of key in `environment`, e.g. `sk_test_`.
    pub fn prefix(self, environment: KeyEnvironment) -> &'static str {
        KeyPrefix {
            kind: self,
            environment,
        }
        .as_str()
    }
}

/// Which deployment a key works on, and so which keys a server takes: the
/// environment by name, without an address (a client's
/// `shipment_sdk::Environment` adds the address of the server). Exhaustive
/// on purpose, as [`KeyKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyEnvironment {
    /// Keys `sk_test_…`, `rk_test_…` and `ck_test_…`.
    Staging,
    /// Keys `sk_live_…`, `rk_live_…` and `ck_live_…`.
    Production,
}

impl KeyEnvironment {
    /// `"staging"` or `"production"`, as the server's `--environment` and
    /// `shipctl`'s take it.
    pub fn name(self) -> &'static str {
        match self {
            KeyEnvironment::Staging => "staging",
            KeyEnvironment::Production => "production",
        }
    }
}

/// A name that is neither `staging` nor `production`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEnvironment(pub String);

impl std::fmt::Display for UnknownEnvironment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown environment {:?}: use staging or production",
            self.0
        )
    }
}

impl std::error::Error for UnknownEnvironment {}

impl std::str::FromStr for KeyEnvironment {
    type Err = UnknownEnvironment;

    /// Reads [`KeyEnvironment::name`] back, exactly (no other case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "staging" => Ok(KeyEnvironment::Staging),
            "production" => Ok(KeyEnvironment::Production),
            other => Err(UnknownEnvironment(other.to_owned())),
        }
    }
}

/// A key's prefix: its kind and environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyPrefix {
    /// Whose key it is.
    pub kind: KeyKind,
    /// Where it works.
    pub environment: KeyEnvironment,
}

impl KeyPrefix {
    /// Splits `key` into its prefix and what follows it, if it starts with
    /// a prefix the service issues (`sk_test_`, `sk_live_`, `rk_test_`,
    /// `rk_live_`, `ck_test_`, `ck_live_`). What follows is not checked: whether it is a well-formed
    /// secret is for whoever holds the rule (the server checks the length
    /// and the alphabet it generates).
    pub fn parse(key: &str) -> Option<(KeyPrefix, &str)> {
        let (kind, rest) = if let Some(rest) = key.strip_prefix("sk_") {
            (KeyKind::Merchant, rest)
        } else if let Some(rest) = key.strip_prefix("rk_") {
            (KeyKind::Restricted, rest)
        } else {
            (KeyKind::Courier, key.strip_prefix("ck_")?)
        };
        let (environment, secret) = if let Some(secret) = rest.strip_prefix("test_") {
            (KeyEnvironment::Staging, secret)
        } else {
            (KeyEnvironment::Production, rest.strip_prefix("live_")?)
        };
        Some((KeyPrefix { kind, environment }, secret))
    }

    /// The prefix as written in a key, e.g. `ck_live_`.
    pub fn as_str(self) -> &'static str {
        match (self.kind, self.environment) {
            (KeyKind::Merchant, KeyEnvironment::Staging) => "sk_test_",
            (KeyKind::Merchant, KeyEnvironment::Production) => "sk_live_",
            (KeyKind::Courier, KeyEnvironment::Staging) => "ck_test_",
            (KeyKind::Courier, KeyEnvironment::Production) => "ck_live_",
            (KeyKind::Restricted, KeyEnvironment::Staging) => "rk_test_",
            (KeyKind::Restricted, KeyEnvironment::Production) => "rk_live_",
        }
    }
}

/// The prefix of a webhook's signing key (`whsec_…`): a secret the
/// service issues, but not one that authenticates a caller.
pub const SIGNING_KEY_PREFIX: &str = "whsec_";

/// Whether `text` starts the way a secret the service issues does (`sk_`,
/// `rk_`, `ck_` or [`SIGNING_KEY_PREFIX`]), well formed or not: for hiding secrets
/// in messages, where a truncated or mistyped key must be hidden too.
pub fn looks_like_secret(text: &str) -> bool {
    ["sk_", "rk_", "ck_", SIGNING_KEY_PREFIX]
        .iter()
        .any(|prefix| text.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prefix_parses_back_to_itself() {
        for kind in [KeyKind::Merchant, KeyKind::Courier, KeyKind::Restricted] {
            for environment in [KeyEnvironment::Staging, KeyEnvironment::Production] {
                let prefix = kind.prefix(environment);
                let key = format!("{prefix}secret");
                let expected = KeyPrefix { kind, environment };
                assert_eq!(KeyPrefix::parse(&key), Some((expected, "secret")));
                assert_eq!(environment.name().parse(), Ok(environment));
            }
        }
    }

    #[test]
    fn other_prefixes_are_not_keys() {
        for key in [
            "",
            "sk_",
            "sk_prod_x",
            "ck_test",
            "rk_",
            "rk_prod_x",
            "SK_TEST_x",
            "whsec_x",
            "pk_live_x",
        ] {
            assert_eq!(KeyPrefix::parse(key), None, "{key}");
        }
        assert_eq!(
            "Staging".parse::<KeyEnvironment>().unwrap_err().to_string(),
            "unknown environment \"Staging\": use staging or production"
        );
    }
}
