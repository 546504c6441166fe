//! Shipment codes: `SHP-XXXX-XXXX` in the Crockford base32 alphabet.

use rand::Rng;

/// Crockford's base32 alphabet: digits and capitals without I, L, O, U.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A well-formed shipment code. Parsing only checks the shape; whether the
/// shipment exists is the store's business.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShipmentCode(String);

impl ShipmentCode {
    /// A new random code (40 bits of randomness; the store retries on the
    /// rare collision).
    pub fn generate() -> ShipmentCode {
        let mut rng = rand::rng();
        let mut code = String::with_capacity(13);
        code.push_str("SHP-");
        for i in 0..8 {
            if i == 4 {
                code.push('-');
            }
            code.push(ALPHABET[rng.random_range(0..32)] as char);
        }
        ShipmentCode(code)
    }

    /// Accepts exactly `SHP-` + 4 + `-` + 4 characters of the alphabet.
    pub fn parse(s: &str) -> Option<ShipmentCode> {
        let b = s.as_bytes();
        let ok = b.len() == 13
            && s.starts_with("SHP-")
            && b[8] == b'-'
            && b[4..8]
                .iter()
                .chain(&b[9..13])
                .all(|c| ALPHABET.contains(c));
        ok.then(|| ShipmentCode(s.to_owned()))
    }

    /// The code as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_codes_parse() {
        for _ in 0..1000 {
            let code = ShipmentCode::generate();
            assert_eq!(ShipmentCode::parse(code.as_str()), Some(code));
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
            "SHP-1234_5678",
            "XYZ-1234-5678",
            "SHP-12345678",
            "SHP-ABCD-EFGU",
        ] {
            assert_eq!(ShipmentCode::parse(s), None, "{s}");
        }
        assert!(ShipmentCode::parse("SHP-7K3M-Q9ZX").is_some());
    }
}
