//! Properties over arbitrary keys and bodies.

use proptest::prelude::*;
use webhook_verify::{Verifier, sign, verify};

fn flip(bytes: &[u8], bit: usize) -> Vec<u8> {
    let mut flipped = bytes.to_vec();
    flipped[bit / 8] ^= 1 << (bit % 8);
    flipped
}

proptest! {
    // Keys up to 100 bytes cover both HMAC key paths: padded (<= 64 bytes)
    // and hashed first (> 64 bytes).
    #[test]
    fn what_is_signed_verifies(
        key in prop::collection::vec(any::<u8>(), 0..100),
        body in prop::collection::vec(any::<u8>(), 0..2048),
    ) {
        let header = sign(&key, &body);
        prop_assert_eq!(verify(&key, &body, &header), Ok(()));
        prop_assert_eq!(Verifier::new(&key).verify(&body, &header), Ok(()));
    }

    #[test]
    fn any_one_bit_change_is_refused(
        key in prop::collection::vec(any::<u8>(), 1..100),
        body in prop::collection::vec(any::<u8>(), 1..2048),
        pick in any::<prop::sample::Index>(),
    ) {
        let header = sign(&key, &body);

        let changed_body = flip(&body, pick.index(body.len() * 8));
        prop_assert!(verify(&key, &changed_body, &header).is_err());

        let changed_key = flip(&key, pick.index(key.len() * 8));
        prop_assert!(verify(&changed_key, &body, &header).is_err());

        let changed_header = flip(header.as_bytes(), pick.index(header.len() * 8));
        prop_assert!(verify(&key, &body, &changed_header).is_err());
    }

    #[test]
    fn arbitrary_headers_never_verify_by_accident(
        body in prop::collection::vec(any::<u8>(), 0..256),
        header in prop::collection::vec(any::<u8>(), 0..100),
    ) {
        prop_assert!(verify("whsec_key", &body, &header).is_err());
    }
}
