//! A set of accepted keys, for receivers and for key rotation.

use std::fmt;
use std::sync::Arc;

use crate::VerifyError;
use crate::signature::{HmacSha256, Tag, check, keyed, parse_header};

/// Verifies deliveries against one or more signing keys.
///
/// A delivery is accepted when any key produced its signature, which is how a
/// key is rotated without dropping deliveries: deploy the new key beside the
/// old one, switch the sender, then deploy the new key alone.
///
/// Each key's HMAC state is computed once, at construction, and only the
/// state is kept (not the key string). Cloning is cheap (an `Arc`), so a
/// `Verifier` can sit in an axum state; `Debug` shows only how many keys it
/// holds.
///
/// ```
/// use webhook_verify::{Verifier, VerifyError, sign};
///
/// let old = "whsec_Z9aY8bX7cW6dV5eU4fT3gS2hR1iQ0jPp";
/// let new = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
/// let body = b"{\"code\":\"SHP-7K3M-Q9ZX\",\"version\":4}";
///
/// let rotating = Verifier::new(new).with_key(old);
/// assert_eq!(rotating.verify(body, sign(old, body)), Ok(()));
/// assert_eq!(rotating.verify(body, sign(new, body)), Ok(()));
///
/// let rotated = Verifier::new(new);
/// assert_eq!(rotated.verify(body, sign(old, body)), Err(VerifyError::Mismatch));
/// ```
#[derive(Clone)]
pub struct Verifier {
    /// Keyed, unfinished HMAC states, in the order the keys were given.
    keys: Arc<[HmacSha256]>,
}

impl Verifier {
    /// A verifier that accepts signatures made with `key` (a `&SigningKey`, a
    /// `&str`, or anything `AsRef<[u8]>`).
    pub fn new(key: impl AsRef<[u8]>) -> Self {
        Self {
            keys: Arc::new([keyed(key.as_ref())]),
        }
    }

    /// A verifier that accepts signatures made with any of `keys`, or `None`
    /// when `keys` is empty (a verifier without keys would refuse everything).
    ///
    /// Put the key most deliveries use first: keys are tried in order.
    ///
    /// ```
    /// use webhook_verify::Verifier;
    ///
    /// let configured = "whsec_new,whsec_old";
    /// let verifier = Verifier::from_keys(configured.split(',')).expect("at least one key");
    /// assert_eq!(verifier.key_count(), 2);
    /// assert!(Verifier::from_keys(Vec::<String>::new()).is_none());
    /// ```
    pub fn from_keys<I>(keys: I) -> Option<Self>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let keys: Arc<[HmacSha256]> = keys.into_iter().map(|k| keyed(k.as_ref())).collect();
        (!keys.is_empty()).then_some(Self { keys })
    }

    /// This verifier, also accepting signatures made with `key`, which is
    /// tried after the keys already held.
    #[must_use]
    pub fn with_key(self, key: impl AsRef<[u8]>) -> Self {
        let mut keys = self.keys.to_vec();
        keys.push(keyed(key.as_ref()));
        Self { keys: keys.into() }
    }

    /// How many keys this verifier accepts.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Checks that `header` is the signature of `body` under one of the keys.
    ///
    /// Same rules as [`verify`](crate::verify): `body` is the raw request
    /// body, `header` the `X-Service-Signature` value as received. A
    /// malformed header is refused before any MAC is computed; the MACs are
    /// compared in constant time; nothing is allocated. A mismatch costs one
    /// HMAC per key.
    pub fn verify(&self, body: &[u8], header: impl AsRef<[u8]>) -> Result<(), VerifyError> {
        let expected = parse_header(header.as_ref())?;
        self.verify_tag(body, &expected)
    }

    /// Checks an already parsed tag against every key, stopping at the first
    /// match. Stopping early tells a timing observer only which key signed a
    /// delivery that was valid anyway; a forgery always costs every key.
    pub(crate) fn verify_tag(&self, body: &[u8], expected: &Tag) -> Result<(), VerifyError> {
        for key in self.keys.iter() {
            if check(key.clone(), body, expected).is_ok() {
                return Ok(());
            }
        }
        Err(VerifyError::Mismatch)
    }
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_only_the_key_count() {
        let verifier = Verifier::new("whsec_secret").with_key("whsec_other");
        let shown = format!("{verifier:?}");
        assert_eq!(shown, "Verifier { keys: 2, .. }");
    }

    #[test]
    fn with_key_keeps_the_earlier_keys() {
        let verifier = Verifier::new("a").with_key("b").with_key("c");
        assert_eq!(verifier.key_count(), 3);
        for key in ["a", "b", "c"] {
            assert_eq!(verifier.verify(b"x", crate::sign(key, b"x")), Ok(()));
        }
    }
}
