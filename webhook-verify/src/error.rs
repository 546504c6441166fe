//! Why a delivery was refused.

/// Why [`verify`](crate::verify), [`standard::verify`](crate::standard::verify)
/// or a [`Verifier`](crate::Verifier) refused a delivery.
///
/// The variants tell a header that is absent or badly formed (a sender or
/// proxy problem) apart from a timestamp outside the tolerance (a replay, a
/// delivery that waited too long, or a wrong clock) and from a well-formed
/// signature that does not match (a wrong key, or a body changed on the
/// way). A mismatch never says where the two digests differ, nor which key
/// came closest: that would help a forger.
///
/// The first three are about `X-Service-Signature`; the others about the
/// Standard Webhooks headers (module [`standard`](crate::standard)).
///
/// ```
/// use webhook_verify::{VerifyError, verify};
///
/// let err = verify("whsec_key", b"{}", "sha256=00").unwrap_err();
/// assert_eq!(err, VerifyError::MalformedHeader);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// There is no `X-Service-Signature` header, or it is empty.
    #[error("missing X-Service-Signature header")]
    MissingHeader,
    /// The header is not exactly `sha256=` followed by 64 lowercase hex
    /// characters (another algorithm, uppercase hex, a short or long digest,
    /// whitespace, a list of signatures, or the header sent twice).
    #[error(
        "malformed X-Service-Signature header: expected `sha256=` and 64 lowercase hex characters"
    )]
    MalformedHeader,
    /// The header is well formed, but no signing key produces it for this
    /// body.
    #[error("signature does not match the body")]
    Mismatch,
    /// A Standard Webhooks header is absent or empty, while another of the
    /// three is present or the verifier
    /// [requires the scheme](crate::Verifier::require_standard). `name` is
    /// which: `webhook-id`, `webhook-timestamp` or `webhook-signature`.
    #[error("missing {name} header")]
    MissingStandardHeader {
        /// The header's name, as in [`standard::ID_HEADER`](crate::standard::ID_HEADER)
        /// and its siblings.
        name: &'static str,
    },
    /// A Standard Webhooks header is present but not as the specification
    /// writes it: a `webhook-timestamp` that is not Unix seconds in decimal
    /// (no sign, leading zero or space), a `webhook-signature` without one
    /// `v1,` signature that is the base64 of 32 bytes (or with more than
    /// [`standard::MAX_SIGNATURES`](crate::standard::MAX_SIGNATURES)), or
    /// (in the extractor) a header sent twice.
    #[error("malformed {name} header: {}", expected_in(name))]
    MalformedStandardHeader {
        /// The header's name.
        name: &'static str,
    },
    /// The `webhook-timestamp` is further in the past than the tolerance:
    /// a replay of a captured delivery, or one that waited too long on
    /// the way. Nothing about the key is learnt from it.
    #[error(
        "webhook-timestamp is {age_secs} s old, beyond the tolerance of {tolerance_secs} s: \
         refused as a possible replay"
    )]
    TimestampTooOld {
        /// How many seconds before the receiver's clock it was signed.
        age_secs: u64,
        /// The verifier's tolerance, in seconds.
        tolerance_secs: u64,
    },
    /// The `webhook-timestamp` is further in the future than the
    /// tolerance: the sender's or the receiver's clock is wrong, or someone
    /// signed ahead of time to replay later.
    #[error(
        "webhook-timestamp is {ahead_secs} s in the future, beyond the tolerance of \
         {tolerance_secs} s: is a clock wrong?"
    )]
    TimestampTooNew {
        /// How many seconds after the receiver's clock it claims to be signed.
        ahead_secs: u64,
        /// The verifier's tolerance, in seconds.
        tolerance_secs: u64,
    },
    /// The Standard Webhooks headers are well formed and in time, but no
    /// key signed this id, timestamp and body as any `v1,` signature says.
    #[error("no webhook-signature matches the id, timestamp and body")]
    NoMatchingSignature,
    /// The delivery carries Standard Webhooks headers, but none of the
    /// verifier's keys is a Standard Webhooks key (`whsec_` followed by
    /// base64, as every key the service issues is): a configuration error
    /// of the receiver.
    #[error("no key of this verifier is a Standard Webhooks key (`whsec_` followed by base64)")]
    NotAStandardKey,
}

/// What a well-formed value of the header `name` looks like.
fn expected_in(name: &str) -> &'static str {
    match name {
        crate::standard::TIMESTAMP_HEADER => "expected Unix seconds in decimal digits",
        crate::standard::SIGNATURE_HEADER => {
            "expected `v1,` and the base64 of 32 bytes, several separated by spaces"
        }
        _ => "expected one value",
    }
}
