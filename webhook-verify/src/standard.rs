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
//!
//! Receivers verify with a [`Verifier`](crate::Verifier):
//! [`Verifier::verify_standard`](crate::Verifier::verify_standard) for the
//! three values, [`Verifier::verify_strongest`](crate::Verifier::verify_strongest)
//! to take whichever scheme a delivery carries (Standard Webhooks when any
//! of its headers is present), or the axum extractors, which do the latter.
//! A timestamp further than the verifier's tolerance ([`DEFAULT_TOLERANCE`],
//! five minutes) from the receiver's clock, in either direction, is
//! refused: a captured delivery cannot be replayed later.
//!
//! ```
//! use webhook_verify::{Verifier, VerifyError, standard};
//!
//! let key = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
//! let body = br#"{"code":"SHP-7K3M-Q9ZX","version":3}"#;
//! let signed_at = 1_764_320_000;
//! let signature = standard::sign(key, "msg_41_w7", signed_at, body)?;
//! let headers = standard::Headers {
//!     id: "msg_41_w7",
//!     timestamp: "1764320000",
//!     signature: &signature,
//! };
//!
//! let verifier = Verifier::new(key);
//! // Received a minute after it was signed: accepted.
//! assert_eq!(verifier.verify_standard_at(headers, body, signed_at + 60), Ok(()));
//! // The same request replayed six minutes later: refused.
//! assert_eq!(
//!     verifier.verify_standard_at(headers, body, signed_at + 360),
//!     Err(VerifyError::TimestampTooOld { age_secs: 360, tolerance_secs: 300 })
//! );
//! # Ok::<(), standard::KeyError>(())
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::Mac;

use crate::VerifyError;
use crate::signature::{HmacSha256, TAG_LEN, Tag, keyed};

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

/// How far a `webhook-timestamp` may be from the receiver's clock, either
/// way, unless a [`Verifier`](crate::Verifier) is given another tolerance:
/// five minutes, as the specification recommends.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(5 * 60);

/// The most `v1,` signatures one `webhook-signature` header may carry: a
/// sender holds one key, two while it rotates; a header with more is
/// refused as malformed rather than compared against every key.
pub const MAX_SIGNATURES: usize = 16;

/// The three Standard Webhooks header values of one delivery, exactly as
/// received. An empty value counts as absent.
///
/// ```
/// use webhook_verify::standard::Headers;
///
/// let headers = Headers {
///     id: "msg_41_w7",
///     timestamp: "1764320000",
///     signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
/// };
/// assert!(headers.any_present());
/// assert!(!Headers::default().any_present());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Headers<'a> {
    /// `webhook-id`.
    pub id: &'a str,
    /// `webhook-timestamp`: Unix seconds, in decimal.
    pub timestamp: &'a str,
    /// `webhook-signature`: `v1,<base64>`, one or more, separated by spaces.
    pub signature: &'a str,
}

impl Headers<'_> {
    /// Whether any of the three is present: then the delivery claims the
    /// Standard Webhooks scheme, and a missing one is an error rather than
    /// a reason to fall back on `X-Service-Signature` (stripping one header
    /// must not downgrade a delivery).
    pub fn any_present(&self) -> bool {
        !(self.id.is_empty() && self.timestamp.is_empty() && self.signature.is_empty())
    }
}

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

/// The Unix time now, in seconds, from the system clock (negative before
/// 1970, should a clock be that wrong; never a panic).
pub(crate) fn unix_now() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(since) => i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
}

/// A `webhook-timestamp` as the sender must write it: decimal digits, no
/// sign, no leading zero, no whitespace, within `i64`. The official
/// libraries sign the canonical form of the number, so accepting `+12` or
/// `012` here would only make signatures that no one else checks alike.
fn parse_timestamp(text: &str) -> Result<i64, VerifyError> {
    let malformed = VerifyError::MalformedStandardHeader {
        name: TIMESTAMP_HEADER,
    };
    let bytes = text.as_bytes();
    if bytes.is_empty() || (bytes[0] == b'0' && bytes.len() > 1) {
        return Err(malformed);
    }
    let mut value: i64 = 0;
    for &byte in bytes {
        if !byte.is_ascii_digit() {
            return Err(malformed);
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i64::from(byte - b'0')))
            .ok_or(malformed)?;
    }
    Ok(value)
}

/// The `v1,` signatures of a `webhook-signature` header, decoded onto the
/// stack.
pub(crate) struct Signatures {
    tags: [Tag; MAX_SIGNATURES],
    len: usize,
}

impl Signatures {
    fn as_slice(&self) -> &[Tag] {
        &self.tags[..self.len]
    }
}

/// Bytes of `id.timestamp.` assembled on the stack before hashing; a
/// longer id is hashed in pieces.
const PREFIX_BUFFER: usize = 96;

/// Base64 characters of one 32-byte tag, padding included.
const ENCODED_TAG_LEN: usize = 44;

/// Splits the header at spaces and decodes every `v1,` signature.
///
/// Entries of other versions are ignored, as the specification says (a
/// sender may add a newer scheme beside v1), and so is a `v1,` entry that
/// is not the canonical base64 of 32 bytes: it cannot match. A header with
/// no usable `v1,` entry, or with more than [`MAX_SIGNATURES`], is
/// malformed.
#[inline]
fn parse_signatures(header: &str) -> Result<Signatures, VerifyError> {
    let malformed = VerifyError::MalformedStandardHeader {
        name: SIGNATURE_HEADER,
    };
    let mut found = Signatures {
        tags: [[0; TAG_LEN]; MAX_SIGNATURES],
        len: 0,
    };
    for entry in header.split(' ') {
        let Some(encoded) = entry.strip_prefix(VERSION_PREFIX) else {
            continue;
        };
        if encoded.len() != ENCODED_TAG_LEN {
            continue;
        }
        // One byte of room: the decoder estimates 33 for 44 characters.
        let mut decoded = [0; TAG_LEN + 1];
        if STANDARD.decode_slice(encoded, &mut decoded) != Ok(TAG_LEN) {
            continue;
        }
        let slot = found.tags.get_mut(found.len).ok_or(malformed)?;
        slot.copy_from_slice(&decoded[..TAG_LEN]);
        found.len += 1;
    }
    if found.len == 0 {
        return Err(malformed);
    }
    Ok(found)
}

/// A delivery's Standard Webhooks headers, checked in every way that does
/// not need the body: present, well formed, and within the tolerance of
/// `now`. Cheap, so a receiver can refuse a replay before reading the body.
pub(crate) struct Checked<'a> {
    id: &'a str,
    timestamp: &'a str,
    signatures: Signatures,
}

/// Checks `headers` against `now` (Unix seconds) and `tolerance`.
///
/// The order is the order of the errors' usefulness: a missing header
/// first (naming which), then a malformed one, then the clock.
#[inline]
pub(crate) fn check_headers<'a>(
    headers: Headers<'a>,
    now: i64,
    tolerance: Duration,
) -> Result<Checked<'a>, VerifyError> {
    for (name, value) in [
        (ID_HEADER, headers.id),
        (TIMESTAMP_HEADER, headers.timestamp),
        (SIGNATURE_HEADER, headers.signature),
    ] {
        if value.is_empty() {
            return Err(VerifyError::MissingStandardHeader { name });
        }
    }
    let timestamp = parse_timestamp(headers.timestamp)?;
    let signatures = parse_signatures(headers.signature)?;
    let tolerance_secs = tolerance.as_secs();
    let distance = now.abs_diff(timestamp);
    if distance > tolerance_secs {
        return Err(if timestamp < now {
            VerifyError::TimestampTooOld {
                age_secs: distance,
                tolerance_secs,
            }
        } else {
            VerifyError::TimestampTooNew {
                ahead_secs: distance,
                tolerance_secs,
            }
        });
    }
    Ok(Checked {
        id: headers.id,
        timestamp: headers.timestamp,
        signatures,
    })
}

impl Checked<'_> {
    /// Whether any of `keys` signed `id.timestamp.body` as any of the
    /// signatures says. Each key costs one HMAC; each signature one
    /// constant-time comparison. Stopping at the first match tells a timing
    /// observer only which key and signature matched a valid delivery.
    #[inline]
    pub(crate) fn verify(&self, keys: &[HmacSha256], body: &[u8]) -> Result<(), VerifyError> {
        if keys.is_empty() {
            return Err(VerifyError::NotAStandardKey);
        }
        // "id.timestamp." in one piece when it fits (the service's ids do):
        // one update instead of four is most of this scheme's fixed cost
        // beyond X-Service-Signature's.
        let mut prefix = [0; PREFIX_BUFFER];
        let prefix_len = self.id.len() + self.timestamp.len() + 2;
        let joined = prefix.get_mut(..prefix_len).map(|buf| {
            let (id, rest) = buf.split_at_mut(self.id.len());
            id.copy_from_slice(self.id.as_bytes());
            let (dot, rest) = rest.split_at_mut(1);
            dot[0] = b'.';
            let (timestamp, dot) = rest.split_at_mut(self.timestamp.len());
            timestamp.copy_from_slice(self.timestamp.as_bytes());
            dot[0] = b'.';
            &*buf
        });
        for key in keys {
            let mut mac = key.clone();
            match joined {
                Some(prefix) => mac.update(prefix),
                None => {
                    mac.update(self.id.as_bytes());
                    mac.update(b".");
                    mac.update(self.timestamp.as_bytes());
                    mac.update(b".");
                }
            }
            let tag = mac.chain_update(body).finalize();
            for expected in self.signatures.as_slice() {
                // `CtOutput`'s equality is constant-time.
                if tag == hmac::digest::CtOutput::new((*expected).into()) {
                    return Ok(());
                }
            }
        }
        Err(VerifyError::NoMatchingSignature)
    }
}

/// The keyed HMAC state of a key for this scheme, or `None` when the key is
/// not `whsec_` and base64.
pub(crate) fn keyed_standard(key: &[u8]) -> Option<HmacSha256> {
    hmac_key(key).ok().map(|decoded| keyed(&decoded))
}

/// Checks one delivery's Standard Webhooks headers against one key, with
/// the [`DEFAULT_TOLERANCE`] and the system clock.
///
/// For several keys, another tolerance, a time of your choosing, or both
/// schemes at once, use a [`Verifier`](crate::Verifier). A key that is not
/// `whsec_` and base64 is [`VerifyError::NotAStandardKey`].
///
/// ```
/// use webhook_verify::{VerifyError, standard};
///
/// let key = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
/// let body = br#"{"code":"SHP-7K3M-Q9ZX","version":3}"#;
/// let now = std::time::SystemTime::now()
///     .duration_since(std::time::UNIX_EPOCH)
///     .unwrap()
///     .as_secs();
/// let timestamp = now.to_string();
/// let signature = standard::sign(key, "msg_41_w7", now as i64, body)?;
/// let headers = standard::Headers { id: "msg_41_w7", timestamp: &timestamp, signature: &signature };
/// assert_eq!(standard::verify(key, headers, body), Ok(()));
///
/// let old = standard::Headers { timestamp: "1614265330", ..headers };
/// assert!(matches!(
///     standard::verify(key, old, body),
///     Err(VerifyError::TimestampTooOld { .. })
/// ));
/// # Ok::<(), standard::KeyError>(())
/// ```
pub fn verify(key: impl AsRef<[u8]>, headers: Headers<'_>, body: &[u8]) -> Result<(), VerifyError> {
    // The key first, as a `Verifier` does: a receiver's configuration
    // error says so whatever the delivery holds.
    let key = keyed_standard(key.as_ref()).ok_or(VerifyError::NotAStandardKey)?;
    check_headers(headers, unix_now(), DEFAULT_TOLERANCE)?.verify(&[key], body)
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

    #[test]
    fn timestamps_are_canonical_decimal() {
        assert_eq!(parse_timestamp("0"), Ok(0));
        assert_eq!(parse_timestamp("1614265330"), Ok(1_614_265_330));
        assert_eq!(parse_timestamp("9223372036854775807"), Ok(i64::MAX));
        for bad in [
            "",
            "01",
            "+1",
            "-1",
            " 1",
            "1 ",
            "1.5",
            "1e9",
            "0x10",
            "9223372036854775808",
            "99999999999999999999",
        ] {
            assert_eq!(
                parse_timestamp(bad),
                Err(VerifyError::MalformedStandardHeader {
                    name: TIMESTAMP_HEADER
                }),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn signatures_of_other_versions_and_bad_v1_entries_are_skipped() {
        let good = format!("v1,{}", STANDARD.encode([7; 32]));
        let header = format!(
            "v2,{} v1,short v1a,x  {good} v1,{}",
            STANDARD.encode([1; 32]),
            "A".repeat(44)
        );
        let parsed = parse_signatures(&header).unwrap();
        // "A" * 44 is not canonical: 44 characters without padding are 33 bytes.
        assert_eq!(parsed.as_slice(), &[[7; 32]]);
    }

    #[test]
    fn a_header_without_a_usable_v1_signature_is_malformed() {
        let malformed = Err(VerifyError::MalformedStandardHeader {
            name: SIGNATURE_HEADER,
        });
        for header in [
            "v1,",
            "v2,abc",
            "v1,dawfeoifkpqwoekfpqoekf",
            " ",
            &STANDARD.encode([7; 32]),
        ] {
            assert_eq!(
                parse_signatures(header).map(|s| s.len),
                malformed.clone(),
                "{header:?}"
            );
        }
    }

    #[test]
    fn at_most_max_signatures_are_taken() {
        let one = format!("v1,{}", STANDARD.encode([7; 32]));
        let enough = vec![one.as_str(); MAX_SIGNATURES].join(" ");
        assert_eq!(parse_signatures(&enough).map(|s| s.len), Ok(MAX_SIGNATURES));
        let too_many = vec![one.as_str(); MAX_SIGNATURES + 1].join(" ");
        assert_eq!(
            parse_signatures(&too_many).map(|s| s.len),
            Err(VerifyError::MalformedStandardHeader {
                name: SIGNATURE_HEADER
            })
        );
    }

    #[test]
    fn the_tolerance_is_inclusive_both_ways() {
        let signature = sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_1", 1000, b"").unwrap();
        let headers = Headers {
            id: "msg_1",
            timestamp: "1000",
            signature: &signature,
        };
        let tolerance = Duration::from_secs(300);
        assert!(check_headers(headers, 1300, tolerance).is_ok());
        assert!(check_headers(headers, 700, tolerance).is_ok());
        assert_eq!(
            check_headers(headers, 1301, tolerance).err(),
            Some(VerifyError::TimestampTooOld {
                age_secs: 301,
                tolerance_secs: 300
            })
        );
        assert_eq!(
            check_headers(headers, 699, tolerance).err(),
            Some(VerifyError::TimestampTooNew {
                ahead_secs: 301,
                tolerance_secs: 300
            })
        );
        // The extremes of the clock neither overflow nor pass.
        assert!(matches!(
            check_headers(headers, i64::MIN, tolerance),
            Err(VerifyError::TimestampTooNew { .. })
        ));
        assert!(matches!(
            check_headers(headers, i64::MAX, tolerance),
            Err(VerifyError::TimestampTooOld { .. })
        ));
    }

    #[test]
    fn ids_longer_than_the_prefix_buffer_are_hashed_in_pieces_alike() {
        let key = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let keyed = [keyed_standard(key.as_bytes()).unwrap()];
        // "id.1000." around the buffer's size: one byte short, exact, over,
        // and far over.
        for id_len in [PREFIX_BUFFER - 7, PREFIX_BUFFER - 6, PREFIX_BUFFER - 5, 500] {
            let id = "m".repeat(id_len);
            let signature = sign(key, &id, 1000, b"{}").unwrap();
            let headers = Headers {
                id: &id,
                timestamp: "1000",
                signature: &signature,
            };
            let checked = check_headers(headers, 1000, DEFAULT_TOLERANCE).unwrap();
            assert_eq!(checked.verify(&keyed, b"{}"), Ok(()), "id of {id_len}");
            assert_eq!(
                checked.verify(&keyed, b"{ }"),
                Err(VerifyError::NoMatchingSignature),
                "id of {id_len}"
            );
        }
    }

    #[test]
    fn the_system_clock_is_after_this_code_was_written() {
        assert!(unix_now() > 1_764_000_000);
    }
}
