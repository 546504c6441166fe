//! Secrets the server must be able to read back (webhook signing keys),
//! sealed with XChaCha20-Poly1305 under the server's data key.
//!
//! Digests protect API keys and tokens, but a signing key is needed in clear
//! every time a delivery is signed, so it is encrypted instead: a copy of the
//! database alone does not reveal it. The random 192-bit nonce makes nonce
//! reuse a non-issue without any counter state.

use std::fmt;

use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use rand::Rng;

/// Version tag of the sealed format, so the scheme can change later.
const TAG: &str = "v1:";
const NONCE_LEN: usize = 24;

/// The 256-bit key that seals stored secrets. `Debug` never prints it.
#[derive(Clone)]
pub struct DataKey(Key);

/// Why a data key or a sealed value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The key is not 64 hex characters.
    #[error("the data key must be 64 hex characters (32 bytes)")]
    BadKey,
    /// The stored value was not sealed by this key, or was altered.
    #[error("a stored secret cannot be opened: wrong data key, or the value was altered")]
    CannotOpen,
}

impl DataKey {
    /// A fresh random key.
    pub fn generate() -> DataKey {
        let mut bytes = [0u8; 32];
        rand::rng().fill(&mut bytes);
        DataKey(bytes.into())
    }

    /// Parses 64 hex characters.
    pub fn from_hex(hex_key: &str) -> Result<DataKey, SealError> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hex_key.trim(), &mut bytes).map_err(|_| SealError::BadKey)?;
        Ok(DataKey(bytes.into()))
    }

    /// The key as 64 hex characters (for writing a new key file).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Encrypts `plain` as `v1:<hex nonce><hex ciphertext>`.
    pub fn seal(&self, plain: &str) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill(&mut nonce);
        let sealed = XChaCha20Poly1305::new(&self.0)
            .encrypt(&XNonce::from(nonce), plain.as_bytes())
            .expect("encrypting a short string in memory cannot fail");
        format!("{TAG}{}{}", hex::encode(nonce), hex::encode(sealed))
    }

    /// Decrypts what [`DataKey::seal`] made.
    pub fn open(&self, sealed: &str) -> Result<String, SealError> {
        let bytes = sealed
            .strip_prefix(TAG)
            .and_then(|h| hex::decode(h).ok())
            .filter(|b| b.len() > NONCE_LEN)
            .ok_or(SealError::CannotOpen)?;
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| SealError::CannotOpen)?;
        let plain = XChaCha20Poly1305::new(&self.0)
            .decrypt(&XNonce::from(nonce), ciphertext)
            .map_err(|_| SealError::CannotOpen)?;
        String::from_utf8(plain).map_err(|_| SealError::CannotOpen)
    }
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DataKey([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_with_the_same_key_only() {
        let key = DataKey::generate();
        let sealed = key.seal("whsec_abc");
        assert!(sealed.starts_with("v1:"));
        assert!(!sealed.contains("whsec_abc"));
        assert_eq!(key.open(&sealed).unwrap(), "whsec_abc");
        assert_eq!(
            DataKey::generate().open(&sealed),
            Err(SealError::CannotOpen)
        );
    }

    #[test]
    fn sealing_twice_gives_different_values() {
        let key = DataKey::generate();
        assert_ne!(key.seal("x"), key.seal("x"));
    }

    #[test]
    fn altered_or_malformed_values_do_not_open() {
        let key = DataKey::generate();
        let mut sealed = key.seal("whsec_abc").into_bytes();
        let last = sealed.len() - 1;
        sealed[last] = if sealed[last] == b'0' { b'1' } else { b'0' };
        let altered = String::from_utf8(sealed).unwrap();
        assert_eq!(key.open(&altered), Err(SealError::CannotOpen));
        for bad in ["", "v1:", "v1:zz", "v2:00", "whsec_abc"] {
            assert_eq!(key.open(bad), Err(SealError::CannotOpen), "{bad}");
        }
    }

    #[test]
    fn keys_round_trip_through_hex_and_refuse_bad_input() {
        let key = DataKey::generate();
        let again = DataKey::from_hex(&key.to_hex()).unwrap();
        assert_eq!(again.open(&key.seal("s")).unwrap(), "s");
        assert_eq!(DataKey::from_hex("abc").unwrap_err(), SealError::BadKey);
        assert_eq!(format!("{key:?}"), "DataKey([redacted])");
    }
}
