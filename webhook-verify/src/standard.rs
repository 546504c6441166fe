//! Standard Webhooks (<https://www.standardwebhooks.com>, version 1): the
//! scheme every delivery carries beside `X-Service-Signature`, which the
//! official libraries of many languages verify, and which binds a
//! timestamp to the signature so a receiver can refuse a replay.
//!
//! A delivery carries three headers: [`ID_HEADER`] (the same for every
//! attempt of one change to one target, so a receiver drops repeats by
//! it), [`TIMESTAMP_HEADER`] (Unix seconds, when this attempt was signed)
//! and [`SIGNATURE_HEADER`] (`v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
//! several separated by spaces while keys rotate). The HMAC key is the
//! base64-decoded part of the `whsec_` key after its prefix: the service's
//! keys (`whsec_` and 32 base62 characters) are base64 of 24 bytes, so the
//! key shown once signs both ways.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::Mac;

use crate::signature::keyed;

/// `webhook-id`: the delivery's identifier, stable across its attempts.
pub const ID_HEADER: &str = "webhook-id";
/// `webhook-timestamp`: when this attempt was signed, in Unix seconds.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// `webhook-signature`: `v1,<base64>`, one or more, separated by spaces.
pub const SIGNATURE_HEADER: &str = "webhook-signature";
/// What a `whsec_` key starts with; the rest is base64.
pub const KEY_PREFIX: &str = "whsec_";
/// What each signature of [`SIGNATURE_HEADER`] starts with.
pub const VERSION_PREFIX: &str = "v1,";

/// The key is not `whsec_` followed by base64 (or bare base64), so it
/// cannot sign or verify Standard Webhooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("not a Standard Webhooks key: expected `whsec_` followed by base64")]
pub struct KeyError;

/// The HMAC key of a `whsec_` key: the base64 after the prefix, decoded.
/// Without the prefix, the whole key is read as base64, as the official
/// libraries do.
pub(crate) fn hmac_key(key: &[u8]) -> Result<Vec<u8>, KeyError> {
    let encoded = key.strip_prefix(KEY_PREFIX.as_bytes()).unwrap_or(key);
    match STANDARD.decode(encoded) {
        Ok(bytes) if !bytes.is_empty() => Ok(bytes),
        _ => Err(KeyError),
    }
}

/// The signature header's value for one attempt of a delivery:
/// `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed with the
/// decoded `whsec_` key.
///
/// ```
/// use webhook_verify::standard;
///
/// // The specification's example.
/// let signature = standard::sign(
///     "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
///     "msg_p5jXN8AQM9LWM0D4loKWxJek",
///     1614265330,
///     br#"{"test": 2432232314}"#,
/// );
/// assert_eq!(
///     signature.as_deref(),
///     Ok("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
/// );
/// ```
pub fn sign(
    key: impl AsRef<[u8]>,
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> Result<String, KeyError> {
    let key = hmac_key(key.as_ref())?;
    let tag = keyed(&key)
        .chain_update(id.as_bytes())
        .chain_update(b".")
        .chain_update(timestamp.to_string().as_bytes())
        .chain_update(b".")
        .chain_update(body)
        .finalize()
        .into_bytes();
    Ok(format!("{VERSION_PREFIX}{}", STANDARD.encode(tag)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_services_keys_are_standard_keys() {
        let key = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
        assert_eq!(hmac_key(key.as_bytes()).unwrap().len(), 24);
        assert!(sign(key, "msg_1", 1, b"{}").unwrap().starts_with("v1,"));
    }

    #[test]
    fn a_key_that_is_not_base64_cannot_sign() {
        assert_eq!(sign("whsec_not base64!", "msg_1", 1, b"{}"), Err(KeyError));
        assert_eq!(sign("whsec_", "msg_1", 1, b"{}"), Err(KeyError));
    }
}
