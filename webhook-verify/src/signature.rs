//! The header format: making a signature, and checking one strictly.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::VerifyError;

/// The name of the header that carries the signature: `X-Service-Signature`.
///
/// HTTP header names are case-insensitive; `http::HeaderMap` and friends
/// accept this spelling as it is.
pub const SIGNATURE_HEADER: &str = "X-Service-Signature";

/// What every signature starts with: `sha256=`.
pub const SIGNATURE_PREFIX: &str = "sha256=";

pub(crate) type HmacSha256 = Hmac<Sha256>;

/// Bytes in an HMAC-SHA256 tag.
pub(crate) const TAG_LEN: usize = 32;

/// The tag a well-formed header carries, decoded.
pub(crate) type Tag = [u8; TAG_LEN];

/// An HMAC-SHA256 keyed with `key`, ready for the body.
#[inline]
pub(crate) fn keyed(key: &[u8]) -> HmacSha256 {
    // HMAC takes keys of any length (a long one is hashed first), so this
    // never fails; the `Result` exists for MACs with fixed key sizes.
    <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC-SHA256 accepts keys of any length")
}

/// Signs `body` with `key` and returns the whole header value,
/// `sha256=<64 lowercase hex characters>`.
///
/// `key` is the signing key as shown, as a `&SigningKey`, `&str` or anything
/// else that is `AsRef<[u8]>`: its UTF-8 bytes are the HMAC key. `body` must be
/// the exact bytes that go on the wire.
///
/// ```
/// use webhook_verify::sign;
///
/// let header = sign("whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA", b"");
/// assert_eq!(
///     header,
///     "sha256=c1bdc94f0ea09d47feebe2d6a8e8d371858281911b95a0d3fb7c9439f4424afd"
/// );
/// ```
pub fn sign(key: impl AsRef<[u8]>, body: &[u8]) -> String {
    let tag = keyed(key.as_ref())
        .chain_update(body)
        .finalize()
        .into_bytes();
    format!("{SIGNATURE_PREFIX}{}", hex::encode(tag))
}

/// Checks that `header` is the signature of `body` under `key`.
///
/// `key` is as for [`sign`]. `body` is the raw request body, before any
/// parsing. `header` is the value of `X-Service-Signature` as received (a
/// `&str`, or an `http::HeaderValue`, whose bytes are taken as they are).
///
/// The header must be exactly `sha256=` followed by 64 lowercase hex
/// characters; anything else is [`VerifyError::MalformedHeader`] (or
/// [`VerifyError::MissingHeader`] when empty), and no MAC is computed. The
/// comparison of the MAC is constant-time, and nothing is allocated.
///
/// With more than one valid key (while rotating), use a
/// [`Verifier`](crate::Verifier), which also keeps each key's HMAC state ready.
///
/// ```
/// use webhook_verify::{VerifyError, sign, verify};
///
/// let key = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
/// let header = sign(key, b"{\"code\":\"SHP-7K3M-Q9ZX\"}");
/// assert_eq!(verify(key, b"{\"code\":\"SHP-7K3M-Q9ZX\"}", &header), Ok(()));
/// assert_eq!(verify(key, b"{\"code\":\"SHP-0000-0000\"}", &header), Err(VerifyError::Mismatch));
/// assert_eq!(verify(key, b"{}", ""), Err(VerifyError::MissingHeader));
/// ```
pub fn verify(
    key: impl AsRef<[u8]>,
    body: &[u8],
    header: impl AsRef<[u8]>,
) -> Result<(), VerifyError> {
    let expected = parse_header(header.as_ref())?;
    check(keyed(key.as_ref()), body, &expected)
}

/// The value of each lowercase hex digit; every other byte maps to
/// `NOT_HEX`.
const HEX_VALUE: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut i = 0;
    while i < 16 {
        let digit = b"0123456789abcdef"[i];
        table[digit as usize] = i as u8;
        i += 1;
    }
    table
};
const NOT_HEX: u8 = 0xff;

/// Decodes `sha256=<64 lowercase hex>` into the tag it names, refusing every
/// other shape (`hex::decode` would also take uppercase; the interface says
/// lowercase).
///
/// The time this takes depends only on the header, which the caller sent and
/// already knows; nothing secret is involved until [`check`].
#[inline]
pub(crate) fn parse_header(header: &[u8]) -> Result<Tag, VerifyError> {
    if header.is_empty() {
        return Err(VerifyError::MissingHeader);
    }
    let digest = header
        .strip_prefix(SIGNATURE_PREFIX.as_bytes())
        .ok_or(VerifyError::MalformedHeader)?;
    let (pairs, []) = digest.as_chunks::<2>() else {
        return Err(VerifyError::MalformedHeader);
    };
    if pairs.len() != TAG_LEN {
        return Err(VerifyError::MalformedHeader);
    }
    let mut tag = [0; TAG_LEN];
    // Digit values are 0..=15, so any NOT_HEX leaves a bit above 0x0f set.
    let mut seen = 0;
    for (byte, &[high, low]) in tag.iter_mut().zip(pairs) {
        let (high, low) = (HEX_VALUE[usize::from(high)], HEX_VALUE[usize::from(low)]);
        seen |= high | low;
        *byte = (high << 4) | low;
    }
    if seen > 0x0f {
        return Err(VerifyError::MalformedHeader);
    }
    Ok(tag)
}

/// Finishes `mac` over `body` and compares it with `expected` in constant
/// time.
#[inline]
pub(crate) fn check(mut mac: HmacSha256, body: &[u8], expected: &Tag) -> Result<(), VerifyError> {
    mac.update(body);
    // `verify_slice` compares in constant time (RustCrypto `ctutils::CtEq`).
    mac.verify_slice(expected)
        .map_err(|_| VerifyError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_header_decodes_the_digest() {
        let header = format!("sha256={}", "0f".repeat(32));
        assert_eq!(parse_header(header.as_bytes()), Ok([0x0f; 32]));
    }

    #[test]
    fn every_lowercase_hex_digit_decodes() {
        let header = format!("sha256={}", "0123456789abcdef".repeat(4));
        let tag = parse_header(header.as_bytes()).unwrap();
        assert_eq!(&tag[..8], &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
    }

    #[test]
    fn only_lowercase_hex_digits_are_accepted_in_either_nibble() {
        for byte in 0..=u8::MAX {
            let is_digit = matches!(byte, b'0'..=b'9' | b'a'..=b'f');
            for at in [0, 63] {
                let mut header = format!("sha256={}", "0".repeat(64)).into_bytes();
                header[SIGNATURE_PREFIX.len() + at] = byte;
                let parsed = parse_header(&header);
                assert_eq!(
                    parsed.is_ok(),
                    is_digit,
                    "byte {byte:#04x} at {at}: {parsed:?}"
                );
            }
        }
    }

    #[test]
    fn signature_is_prefix_and_64_lowercase_hex() {
        let header = sign("k", b"body");
        let digest = header.strip_prefix(SIGNATURE_PREFIX).unwrap();
        assert_eq!(digest.len(), 64);
        assert!(
            digest
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        );
    }
}
