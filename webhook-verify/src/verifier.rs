//! A set of accepted keys, for receivers and for key rotation.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::VerifyError;
use crate::signature::{HmacSha256, Tag, check, keyed, parse_header};
use crate::standard::{self, DEFAULT_TOLERANCE, Headers};

/// Which scheme a delivery was verified with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scheme {
    /// `X-Service-Signature`: the body alone, no timestamp, so a captured
    /// delivery verifies forever.
    Service,
    /// Standard Webhooks: the id, a timestamp within the tolerance and the
    /// body, so a replay is refused.
    Standard,
}

/// Verifies deliveries against one or more signing keys.
///
/// A delivery is accepted when any key produced its signature, which is how a
/// key is rotated without dropping deliveries: deploy the new key beside the
/// old one, switch the sender, then deploy the new key alone.
///
/// It checks both schemes a delivery carries: `X-Service-Signature`
/// ([`verify`](Self::verify)) and Standard Webhooks
/// ([`verify_standard`](Self::verify_standard), which refuses a timestamp
/// outside the [tolerance](Self::with_tolerance), five minutes by default).
/// [`verify_strongest`](Self::verify_strongest) and the axum extractors
/// take Standard Webhooks whenever any of its headers is present, and
/// `X-Service-Signature` otherwise, unless the verifier
/// [requires](Self::require_standard) the stronger scheme.
///
/// Each key's HMAC states (one per scheme: the whole key string for
/// `X-Service-Signature`, its base64-decoded part for Standard Webhooks)
/// are computed once, at construction, and only the states are kept (not
/// the key string). Cloning is cheap (an `Arc`), so a `Verifier` can sit in
/// an axum state; `Debug` shows only how many keys it holds and its
/// settings.
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
    /// The same for Standard Webhooks, of the keys that are `whsec_` and
    /// base64 (a key that is not cannot verify that scheme).
    standard_keys: Arc<[HmacSha256]>,
    tolerance: Duration,
    require_standard: bool,
}

impl Verifier {
    /// A verifier that accepts signatures made with `key` (a `&SigningKey`, a
    /// `&str`, or anything `AsRef<[u8]>`).
    pub fn new(key: impl AsRef<[u8]>) -> Self {
        let key = key.as_ref();
        Self {
            keys: Arc::new([keyed(key)]),
            standard_keys: standard::keyed_standard(key).into_iter().collect(),
            tolerance: DEFAULT_TOLERANCE,
            require_standard: false,
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
        let (mut held, mut standard_keys) = (Vec::new(), Vec::new());
        for key in keys {
            let key = key.as_ref();
            held.push(keyed(key));
            standard_keys.extend(standard::keyed_standard(key));
        }
        (!held.is_empty()).then(|| Self {
            keys: held.into(),
            standard_keys: standard_keys.into(),
            tolerance: DEFAULT_TOLERANCE,
            require_standard: false,
        })
    }

    /// This verifier, also accepting signatures made with `key`, which is
    /// tried after the keys already held.
    #[must_use]
    pub fn with_key(self, key: impl AsRef<[u8]>) -> Self {
        let key = key.as_ref();
        let mut keys = self.keys.to_vec();
        keys.push(keyed(key));
        let mut standard_keys = self.standard_keys.to_vec();
        standard_keys.extend(standard::keyed_standard(key));
        Self {
            keys: keys.into(),
            standard_keys: standard_keys.into(),
            ..self
        }
    }

    /// This verifier, accepting a Standard Webhooks timestamp up to
    /// `tolerance` (whole seconds; the rest is dropped) before or after the
    /// receiver's clock, instead of [`standard::DEFAULT_TOLERANCE`] (five
    /// minutes). Widen it only as far as deliveries really take; a
    /// captured delivery can be replayed within it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use webhook_verify::Verifier;
    ///
    /// let verifier = Verifier::new("whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA");
    /// assert_eq!(verifier.tolerance(), Duration::from_secs(300));
    /// let verifier = verifier.with_tolerance(Duration::from_secs(60));
    /// assert_eq!(verifier.tolerance(), Duration::from_secs(60));
    /// ```
    #[must_use]
    pub fn with_tolerance(self, tolerance: Duration) -> Self {
        Self { tolerance, ..self }
    }

    /// How far a Standard Webhooks timestamp may be from the clock.
    pub fn tolerance(&self) -> Duration {
        self.tolerance
    }

    /// This verifier, refusing every delivery without the Standard Webhooks
    /// headers in [`verify_strongest`](Self::verify_strongest) and the axum
    /// extractors ([`VerifyError::MissingStandardHeader`]), instead of
    /// falling back on `X-Service-Signature`.
    ///
    /// Turn it on once the sender sends those headers on every delivery (the
    /// shipment service does): then a captured delivery replayed with the
    /// three headers stripped is refused, where the old scheme alone would
    /// accept it forever.
    #[must_use]
    pub fn require_standard(self) -> Self {
        Self {
            require_standard: true,
            ..self
        }
    }

    /// Whether [`require_standard`](Self::require_standard) is on.
    pub fn requires_standard(&self) -> bool {
        self.require_standard
    }

    /// How many keys this verifier accepts.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// How many of its keys can verify Standard Webhooks (those that are
    /// `whsec_` followed by base64, as every key the service issues is).
    pub fn standard_key_count(&self) -> usize {
        self.standard_keys.len()
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

    /// Checks a delivery's Standard Webhooks headers and body against the
    /// keys, at the system clock's time.
    ///
    /// Refused, in this order: no key of the verifier is a Standard
    /// Webhooks key; a header absent or empty (naming which); a malformed
    /// timestamp or signature header; a timestamp further than the
    /// [tolerance](Self::with_tolerance) from now, either way (checked
    /// before any MAC is computed, so a replay costs no HMAC); no `v1,`
    /// signature made by any key. MACs are compared in constant time;
    /// nothing is allocated.
    pub fn verify_standard(&self, headers: Headers<'_>, body: &[u8]) -> Result<(), VerifyError> {
        self.verify_standard_at(headers, body, standard::unix_now())
    }

    /// [`verify_standard`](Self::verify_standard) as if the clock read `now`
    /// (Unix seconds): for tests, and for checking a recorded delivery as
    /// of when it arrived.
    pub fn verify_standard_at(
        &self,
        headers: Headers<'_>,
        body: &[u8],
        now: i64,
    ) -> Result<(), VerifyError> {
        self.check_standard_headers(headers, now)?
            .verify(&self.standard_keys, body)
    }

    /// Everything [`verify_standard_at`](Self::verify_standard_at) checks
    /// before the body: what the extractor does before it reads the body.
    #[inline]
    pub(crate) fn check_standard_headers<'a>(
        &self,
        headers: Headers<'a>,
        now: i64,
    ) -> Result<standard::Checked<'a>, VerifyError> {
        if self.standard_keys.is_empty() {
            return Err(VerifyError::NotAStandardKey);
        }
        standard::check_headers(headers, now, self.tolerance)
    }

    /// Verifies a delivery with the stronger scheme it carries, at the
    /// system clock's time, and says which.
    ///
    /// `service_signature` is the `X-Service-Signature` value and
    /// `standard` the Standard Webhooks values, each empty when absent.
    /// When any of the three Standard Webhooks headers is present, they are
    /// checked ([`verify_standard`](Self::verify_standard)) and
    /// `X-Service-Signature` is not looked at: stripping one of them cannot
    /// downgrade the delivery. When none is, `X-Service-Signature` is
    /// checked, unless the verifier [requires](Self::require_standard) the
    /// Standard Webhooks headers (then [`VerifyError::MissingStandardHeader`]
    /// naming `webhook-id`), or holds no key that can verify them (then the
    /// service's scheme is all it can check, whatever the delivery carries).
    ///
    /// ```
    /// use webhook_verify::{Scheme, Verifier, VerifyError, sign, standard};
    ///
    /// let key = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
    /// let body = br#"{"code":"SHP-7K3M-Q9ZX","version":3}"#;
    /// let signature = standard::sign(key, "msg_41_w7", 1_764_320_000, body)?;
    /// let both = standard::Headers { id: "msg_41_w7", timestamp: "1764320000", signature: &signature };
    /// let old_style = sign(key, body);
    ///
    /// let verifier = Verifier::new(key);
    /// let now = 1_764_320_030;
    /// assert_eq!(verifier.verify_strongest_at(body, &old_style, both, now), Ok(Scheme::Standard));
    /// // A replay an hour later fails, whatever X-Service-Signature says...
    /// assert!(verifier.verify_strongest_at(body, &old_style, both, now + 3600).is_err());
    /// // ...but with the three headers stripped, only a verifier that
    /// // requires them refuses it.
    /// let stripped = standard::Headers::default();
    /// assert_eq!(verifier.verify_strongest_at(body, &old_style, stripped, now + 3600), Ok(Scheme::Service));
    /// assert_eq!(
    ///     verifier.require_standard().verify_strongest_at(body, &old_style, stripped, now + 3600),
    ///     Err(VerifyError::MissingStandardHeader { name: standard::ID_HEADER })
    /// );
    /// # Ok::<(), standard::KeyError>(())
    /// ```
    pub fn verify_strongest(
        &self,
        body: &[u8],
        service_signature: impl AsRef<[u8]>,
        standard: Headers<'_>,
    ) -> Result<Scheme, VerifyError> {
        self.verify_strongest_at(body, service_signature, standard, standard::unix_now())
    }

    /// [`verify_strongest`](Self::verify_strongest) as if the clock read
    /// `now` (Unix seconds).
    pub fn verify_strongest_at(
        &self,
        body: &[u8],
        service_signature: impl AsRef<[u8]>,
        standard: Headers<'_>,
        now: i64,
    ) -> Result<Scheme, VerifyError> {
        match self.scheme_for(standard.any_present()) {
            Scheme::Standard => self
                .verify_standard_at(standard, body, now)
                .map(|()| Scheme::Standard),
            Scheme::Service => self
                .verify(body, service_signature)
                .map(|()| Scheme::Service),
        }
    }

    /// The scheme [`verify_strongest`](Self::verify_strongest) checks a
    /// delivery with, given whether it claims Standard Webhooks (any of the
    /// headers present); the extractor decides before reading the body.
    pub(crate) fn scheme_for(&self, claims_standard: bool) -> Scheme {
        if self.require_standard || (claims_standard && !self.standard_keys.is_empty()) {
            Scheme::Standard
        } else {
            Scheme::Service
        }
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
            .field("standard_keys", &self.standard_keys.len())
            .field("tolerance", &self.tolerance)
            .field("require_standard", &self.require_standard)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_only_the_key_count() {
        let verifier =
            Verifier::new("whsec_secret").with_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let shown = format!("{verifier:?}");
        assert_eq!(
            shown,
            "Verifier { keys: 2, standard_keys: 1, tolerance: 300s, require_standard: false }"
        );
    }

    #[test]
    fn with_key_keeps_the_earlier_keys() {
        let verifier = Verifier::new("a").with_key("b").with_key("c");
        assert_eq!(verifier.key_count(), 3);
        for key in ["a", "b", "c"] {
            assert_eq!(verifier.verify(b"x", crate::sign(key, b"x")), Ok(()));
        }
    }

    #[test]
    fn settings_survive_adding_keys() {
        let verifier = Verifier::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .with_tolerance(Duration::from_secs(10))
            .require_standard()
            .with_key("whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA");
        assert_eq!(verifier.tolerance(), Duration::from_secs(10));
        assert!(verifier.requires_standard());
        assert_eq!(verifier.standard_key_count(), 2);
    }

    #[test]
    fn from_keys_keeps_the_standard_keys_of_every_key() {
        let verifier =
            Verifier::from_keys(["whsec_x", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]).unwrap();
        assert_eq!(
            (verifier.key_count(), verifier.standard_key_count()),
            (2, 1)
        );
    }
}
