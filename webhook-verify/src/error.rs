//! Why a delivery was refused.

/// Why [`verify`](crate::verify) or a [`Verifier`](crate::Verifier) refused a
/// delivery.
///
/// The variants tell a header that is absent or badly formed (a sender or
/// proxy problem) apart from a well-formed signature that does not match (a
/// wrong key, or a body changed on the way). A mismatch never says where the
/// two digests differ, nor which key came closest: that would help a forger.
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
}
