//! API keys and courier keys: format, generation and the digest kept at rest.

use rand::Rng;
use sha2::{Digest, Sha256};

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Random characters after the prefix (32 × log2(62) ≈ 190 bits).
pub(crate) const SECRET_LEN: usize = 32;

/// Which deployment a server is, and so which keys it takes; and whose a
/// key is. The SDK's, so the server, the SDK and `shipctl` read a key's
/// prefix with one parser ([`KeyPrefix::parse`]).
pub use shipment_sdk::keys::{KeyEnvironment as Environment, KeyKind};
pub(crate) use shipment_sdk::keys::{KeyPrefix, SIGNING_KEY_PREFIX, UnknownEnvironment};

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
    random_token(kind.prefix(env))
}

/// What a presented key string claims to be, if it is well formed: its
/// prefix ([`KeyPrefix::parse`]) followed by [`SECRET_LEN`] base62
/// characters, as the server makes them.
pub(crate) fn shape(key: &str) -> Option<KeyPrefix> {
    let (prefix, secret) = KeyPrefix::parse(key)?;
    is_secret(secret).then_some(prefix)
}

/// Whether `secret` is what follows a prefix in the keys the server makes.
fn is_secret(secret: &str) -> bool {
    secret.len() == SECRET_LEN && secret.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Whether `key` has the shape of a webhook signing key: `whsec_` followed
/// by [`SECRET_LEN`] base62 characters, as the server makes them.
pub(crate) fn is_signing_key(key: &str) -> bool {
    key.strip_prefix(SIGNING_KEY_PREFIX).is_some_and(is_secret)
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
            Some(KeyPrefix {
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
