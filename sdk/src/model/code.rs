//! [`ShipmentCode`], the code that names a shipment in every URL, and
//! [`IdempotencyKey`], the header that makes a create safe to retry.
//!
//! Both are parsed once, where text enters (a path, a header, a command
//! line), so a value of either type is always well formed.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

/// Crockford's base32 alphabet: digits and capitals without I, L, O, U.
pub const SHIPMENT_CODE_ALPHABET: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// The regular expression of a shipment code, as the OpenAPI document
/// publishes it; a unit test checks that it says what
/// [`SHIPMENT_CODE_ALPHABET`] says.
pub const SHIPMENT_CODE_PATTERN: &str = "^SHP-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$";

/// A shipment code, `SHP-XXXX-XXXX` with the X from
/// [`SHIPMENT_CODE_ALPHABET`]. Holding one means the text is well formed
/// (whether the shipment exists is the service's business).
///
/// ```
/// use shipment_sdk::model::ShipmentCode;
/// let code: ShipmentCode = "SHP-7K3M-Q9ZX".parse().unwrap();
/// assert_eq!(code.as_str(), "SHP-7K3M-Q9ZX");
/// assert!("SHP-7K3M-Q9ZU".parse::<ShipmentCode>().is_err()); // no U
/// assert!("../api-keys".parse::<ShipmentCode>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ShipmentCode(String);

impl ShipmentCode {
    /// Accepts exactly `SHP-` + 4 + `-` + 4 characters of the alphabet.
    pub fn parse(s: &str) -> Result<ShipmentCode, InvalidShipmentCode> {
        let b = s.as_bytes();
        let in_alphabet = |c: &u8| SHIPMENT_CODE_ALPHABET.as_bytes().contains(c);
        let ok = b.len() == 13
            && s.starts_with("SHP-")
            && b[8] == b'-'
            && b[4..8].iter().chain(&b[9..13]).all(in_alphabet);
        if ok {
            Ok(ShipmentCode(s.to_owned()))
        } else {
            Err(InvalidShipmentCode(s.to_owned()))
        }
    }

    /// The code made of eight symbols, each an index into
    /// [`SHIPMENT_CODE_ALPHABET`] taken modulo 32 (for a generator with
    /// its own source of randomness, such as the reference server).
    pub fn from_symbols(symbols: [u8; 8]) -> ShipmentCode {
        let alphabet = SHIPMENT_CODE_ALPHABET.as_bytes();
        let mut code = String::with_capacity(13);
        code.push_str("SHP-");
        for (i, s) in symbols.iter().enumerate() {
            if i == 4 {
                code.push('-');
            }
            code.push(char::from(alphabet[usize::from(s % 32)]));
        }
        ShipmentCode(code)
    }

    /// The code as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for ShipmentCode {
    type Err = InvalidShipmentCode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ShipmentCode::parse(s)
    }
}

impl TryFrom<&str> for ShipmentCode {
    type Error = InvalidShipmentCode;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        ShipmentCode::parse(s)
    }
}

impl TryFrom<&String> for ShipmentCode {
    type Error = InvalidShipmentCode;

    fn try_from(s: &String) -> Result<Self, Self::Error> {
        ShipmentCode::parse(s)
    }
}

impl TryFrom<String> for ShipmentCode {
    type Error = InvalidShipmentCode;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        ShipmentCode::parse(&s)
    }
}

impl fmt::Display for ShipmentCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ShipmentCode {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ShipmentCode {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for ShipmentCode {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ShipmentCode {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl<'de> Deserialize<'de> for ShipmentCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        ShipmentCode::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Text that is not a shipment code; it carries the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidShipmentCode(pub String);

impl fmt::Display for InvalidShipmentCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a shipment code; codes look like SHP-7K3M-Q9ZX",
            self.0
        )
    }
}

impl std::error::Error for InvalidShipmentCode {}

/// Longest `Idempotency-Key` the service accepts.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

/// The `Idempotency-Key` of a create: 1 to 255 visible ASCII characters.
/// The same key and body within 24 hours answer the first shipment instead
/// of making a second one.
///
/// ```
/// use shipment_sdk::model::IdempotencyKey;
/// let key = IdempotencyKey::parse("order-10293").unwrap();
/// assert_eq!(key.as_str(), "order-10293");
/// assert!(IdempotencyKey::parse("has space").is_err());
/// assert!(IdempotencyKey::parse("").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Accepts 1 to [`MAX_IDEMPOTENCY_KEY_LEN`] visible ASCII characters.
    pub fn parse(s: &str) -> Result<IdempotencyKey, InvalidIdempotencyKey> {
        IdempotencyKey::from_bytes(s.as_bytes())
    }

    /// As [`parse`](Self::parse), from the raw bytes of a header.
    pub fn from_bytes(raw: &[u8]) -> Result<IdempotencyKey, InvalidIdempotencyKey> {
        let ok = !raw.is_empty()
            && raw.len() <= MAX_IDEMPOTENCY_KEY_LEN
            && raw.iter().all(u8::is_ascii_graphic);
        match std::str::from_utf8(raw) {
            Ok(s) if ok => Ok(IdempotencyKey(s.to_owned())),
            _ => Err(InvalidIdempotencyKey),
        }
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for IdempotencyKey {
    type Err = InvalidIdempotencyKey;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IdempotencyKey::parse(s)
    }
}

impl AsRef<str> for IdempotencyKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Text that cannot be an `Idempotency-Key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidIdempotencyKey;

impl fmt::Display for InvalidIdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} visible ASCII characters"
        )
    }
}

impl std::error::Error for InvalidIdempotencyKey {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_from_any_symbols_parse() {
        for seed in 0..=255u8 {
            let symbols = std::array::from_fn(|i| seed.wrapping_mul(31).wrapping_add(i as u8 * 7));
            let code = ShipmentCode::from_symbols(symbols);
            assert_eq!(ShipmentCode::parse(code.as_str()), Ok(code));
        }
    }

    #[test]
    fn malformed_codes_are_refused() {
        for s in [
            "",
            "SHP-1234-567",
            "SHP-1234-5678X",
            "shp-1234-5678",
            "SHP-I234-5678",
            "SHP-7K3L-Q9ZX",
            "SHP-7K3O-Q9ZX",
            "SHP-ABCD-EFGU",
            "SHP-1234_5678",
            "XYZ-1234-5678",
            "SHP-12345678",
            "SHP-7K3M-Q9Z/",
            "../../api-keys",
            "SHP-ÄK3-Q9ZX",
        ] {
            assert_eq!(
                ShipmentCode::parse(s),
                Err(InvalidShipmentCode(s.into())),
                "{s}"
            );
        }
        assert!(serde_json::from_str::<ShipmentCode>("\"SHP-7K3M-Q9ZU\"").is_err());
    }

    /// The published pattern's character class is the alphabet, exactly.
    #[test]
    fn the_pattern_names_the_alphabet() {
        let class = "[0-9A-HJKMNP-TV-Z]";
        assert_eq!(
            SHIPMENT_CODE_PATTERN,
            format!("^SHP-{class}{{4}}-{class}{{4}}$")
        );
        let mut expanded = String::new();
        let inner = class.trim_start_matches('[').trim_end_matches(']');
        let b = inner.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if i + 2 < b.len() && b[i + 1] == b'-' {
                expanded.extend((b[i]..=b[i + 2]).map(char::from));
                i += 3;
            } else {
                expanded.push(char::from(b[i]));
                i += 1;
            }
        }
        assert_eq!(expanded, SHIPMENT_CODE_ALPHABET);
    }

    #[test]
    fn idempotency_keys_are_short_visible_ascii() {
        assert!(IdempotencyKey::parse("order-10293").is_ok());
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        for bad in ["", "has space", "ünï", &"k".repeat(256)] {
            assert_eq!(
                IdempotencyKey::parse(bad),
                Err(InvalidIdempotencyKey),
                "{bad}"
            );
        }
        assert_eq!(
            IdempotencyKey::from_bytes(b"\xff\xfe"),
            Err(InvalidIdempotencyKey)
        );
    }
}
