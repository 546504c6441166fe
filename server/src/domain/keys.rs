//! API keys and courier keys: format, generation and the digest kept at rest.

use rand::Rng;
use sha2::{Digest, Sha256};

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Random characters after the prefix (32 × log2(62) ≈ 190 bits).
pub(crate) const SECRET_LEN: usize = 32;

/// Which deployment a server is, and so which keys it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    /// Keys `sk_test_…` / `ck_test_…`.
    Staging,
    /// Keys `sk_live_…` / `ck_live_…`.
    Production,
}

impl Environment {
    fn tag(self) -> &'static str {
        match self {
            Environment::Staging => "test",
            Environment::Production => "live",
        }
    }
}

/// A name that is neither `staging` nor `production`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown environment {0:?}: use staging or production")]
pub struct UnknownEnvironment(pub String);

impl std::str::FromStr for Environment {
    type Err = UnknownEnvironment;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "staging" => Ok(Environment::Staging),
            "production" => Ok(Environment::Production),
            other => Err(UnknownEnvironment(other.to_owned())),
        }
    }
}

/// Who a key belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// A merchant's API key, `sk_`.
    Merchant,
    /// A courier company's key, `ck_`.
    Courier,
}

impl KeyKind {
    fn letter(self) -> &'static str {
        match self {
            KeyKind::Merchant => "sk",
            KeyKind::Courier => "ck",
        }
    }

    /// The prefix of this kind of key in `env`, e.g. `sk_test_`.
    pub fn prefix(self, env: Environment) -> String {
        format!("{}_{}_", self.letter(), env.tag())
    }
}

pub(crate) use shipment_sdk::model::Secret;

/// `prefix` followed by `SECRET_LEN` (32) random base62 characters.
pub fn random_token(prefix: &str) -> Secret {
    let mut rng = rand::rng();
    let mut s = String::with_capacity(prefix.len() + SECRET_LEN);
    s.push_str(prefix);
    s.extend((0..SECRET_LEN).map(|_| BASE62[rng.random_range(0..62)] as char));
    Secret::new(s)
}

/// A new key of `kind` for `env`.
pub fn generate(kind: KeyKind, env: Environment) -> Secret {
    random_token(&kind.prefix(env))
}

/// What a presented key string claims to be, if it is well formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyShape {
    /// Merchant or courier.
    pub kind: KeyKind,
    /// The environment named by its prefix.
    pub environment: Environment,
}

/// Checks the shape of a key string: `sk_`/`ck_`, `test_`/`live_`, 32 base62.
pub(crate) fn shape(key: &str) -> Option<KeyShape> {
    let (kind, rest) = if let Some(rest) = key.strip_prefix("sk_") {
        (KeyKind::Merchant, rest)
    } else {
        (KeyKind::Courier, key.strip_prefix("ck_")?)
    };
    let (environment, secret) = if let Some(s) = rest.strip_prefix("test_") {
        (Environment::Staging, s)
    } else {
        (Environment::Production, rest.strip_prefix("live_")?)
    };
    let ok = secret.len() == SECRET_LEN && secret.bytes().all(|b| b.is_ascii_alphanumeric());
    ok.then_some(KeyShape { kind, environment })
}

/// Prefix of webhook signing keys (`whsec_` and [`SECRET_LEN`] base62).
pub(crate) const SIGNING_KEY_PREFIX: &str = "whsec_";

/// Whether `key` has the shape of a webhook signing key: `whsec_` followed
/// by [`SECRET_LEN`] base62 characters, as the server makes them.
pub(crate) fn is_signing_key(key: &str) -> bool {
    key.strip_prefix(SIGNING_KEY_PREFIX).is_some_and(|secret| {
        secret.len() == SECRET_LEN && secret.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Hex SHA-256 of a high-entropy secret: what is stored instead of it.
pub(crate) fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// The last four characters, shown so a person can tell keys apart.
pub(crate) fn last4(secret: &str) -> String {
    secret[secret.len().saturating_sub(4)..].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_documented_shape() {
        let key = generate(KeyKind::Merchant, Environment::Staging);
        assert!(key.expose().starts_with("sk_test_"));
        assert_eq!(key.expose().len(), 8 + 32);
        assert_eq!(
            shape(key.expose()),
            Some(KeyShape {
                kind: KeyKind::Merchant,
                environment: Environment::Staging
            })
        );
        let courier = generate(KeyKind::Courier, Environment::Production);
        assert!(courier.expose().starts_with("ck_live_"));
        assert_eq!(shape(courier.expose()).unwrap().kind, KeyKind::Courier);
    }

    #[test]
    fn malformed_keys_have_no_shape() {
        let body = "a".repeat(32);
        for key in [
            String::new(),
            format!("sk_prod_{body}"),
            format!("pk_test_{body}"),
            format!("sk_test_{}", "a".repeat(31)),
            format!("sk_test_{}!", "a".repeat(31)),
            format!("sk_test_{body} "),
        ] {
            assert_eq!(shape(&key), None, "{key}");
        }
    }

    #[test]
    fn signing_keys_are_whsec_and_32_base62() {
        let made = random_token(SIGNING_KEY_PREFIX);
        assert!(is_signing_key(made.expose()));
        let body = "a".repeat(32);
        for bad in [
            String::new(),
            "whsec_".to_owned(),
            format!("whsec_{}", "a".repeat(31)),
            format!("whsec_{body}a"),
            format!("whsec_{}-", "a".repeat(31)),
            format!("whsec{body}"),
            format!("sk_test_{body}"),
        ] {
            assert!(!is_signing_key(&bad), "{bad}");
        }
    }

    #[test]
    fn secrets_are_redacted_in_debug_and_display() {
        let key = generate(KeyKind::Merchant, Environment::Staging);
        assert_eq!(format!("{key:?} {key}"), "[redacted] [redacted]");
    }

    #[test]
    fn digest_is_hex_sha256() {
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
