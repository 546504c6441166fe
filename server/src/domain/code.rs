//! New shipment codes. The type and its parsing are the wire model's
//! ([`ShipmentCode`]); making a random one is the server's alone.

use rand::Rng;
pub use shipment_sdk::model::ShipmentCode;

/// A new random code: 8 symbols of 32, 40 bits of randomness (the store
/// retries on the rare collision).
pub(crate) fn generate() -> ShipmentCode {
    let mut rng = rand::rng();
    ShipmentCode::from_symbols(std::array::from_fn(|_| rng.random_range(0..32)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_codes_parse() {
        for _ in 0..1000 {
            let code = generate();
            assert_eq!(ShipmentCode::parse(code.as_str()), Ok(code));
        }
    }
}
