//! The signing key as a secret that does not print itself.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

/// A webhook signing key (`whsec_...`), as the service showed it once.
///
/// The HMAC key is the UTF-8 bytes of the whole string, prefix included and
/// exactly as shown: never decode it, trim it or strip `whsec_`. No format is
/// enforced, so a key of any shape signs and verifies.
///
/// `Debug` and `Display` print `[redacted]`, so a key inside a config struct
/// or an error cannot end up in a log by accident. Read it on purpose with
/// [`SigningKey::expose_secret`].
///
/// [`sign`](crate::sign), [`verify`](crate::verify) and
/// [`Verifier`](crate::Verifier) take any `impl AsRef<[u8]>` as the key, so a
/// `&SigningKey` and a plain `&str` both work.
///
/// ```
/// use webhook_verify::{SigningKey, sign};
///
/// let key = SigningKey::from("whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA");
/// assert_eq!(format!("{key:?} {key}"), "[redacted] [redacted]");
/// assert_eq!(sign(&key, b"{}"), sign("whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA", b"{}"));
/// ```
#[derive(Clone)]
pub struct SigningKey(Box<str>);

impl SigningKey {
    /// Wraps a key string.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into().into_boxed_str())
    }

    /// The key itself, for storing it or handing it to code that signs.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
}

impl From<&str> for SigningKey {
    fn from(key: &str) -> Self {
        Self(key.into())
    }
}

impl From<String> for SigningKey {
    fn from(key: String) -> Self {
        Self(key.into_boxed_str())
    }
}

impl FromStr for SigningKey {
    type Err = Infallible;

    fn from_str(key: &str) -> Result<Self, Self::Err> {
        Ok(Self::from(key))
    }
}

/// The UTF-8 bytes of the whole key: the HMAC key.
impl AsRef<[u8]> for SigningKey {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}
