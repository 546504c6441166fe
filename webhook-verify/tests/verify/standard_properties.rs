//! Standard Webhooks properties over arbitrary keys, ids, timestamps and
//! bodies: what is signed verifies, and any change is refused.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use proptest::prelude::*;
use webhook_verify::standard::{self, Headers};
use webhook_verify::{Verifier, VerifyError};

/// A `whsec_` key of 24 to 64 random bytes (the specification's range).
fn key() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<u8>(), 24..=64)
        .prop_map(|bytes| format!("whsec_{}", STANDARD.encode(bytes)))
}

/// Ids as senders make them: visible ASCII, dots included.
fn id() -> impl Strategy<Value = String> {
    "[!-~]{1,64}"
}

const BODY: &[u8] = br#"{"code":"SHP-7K3M-Q9ZX"}"#;

fn flip(bytes: &[u8], bit: usize) -> Vec<u8> {
    let mut flipped = bytes.to_vec();
    flipped[bit / 8] ^= 1 << (bit % 8);
    flipped
}

proptest! {
    #[test]
    fn what_is_signed_verifies_within_the_tolerance(
        key in key(),
        id in id(),
        timestamp in 0..=i64::MAX / 2,
        body in prop::collection::vec(any::<u8>(), 0..2048),
        skew in -300i64..=300,
    ) {
        let signature = standard::sign(&key, &id, timestamp, &body).unwrap();
        let timestamp_text = timestamp.to_string();
        let headers = Headers { id: &id, timestamp: &timestamp_text, signature: &signature };
        let verifier = Verifier::new(&key);
        prop_assert_eq!(verifier.verify_standard_at(headers, &body, timestamp + skew), Ok(()));
    }

    #[test]
    fn any_changed_byte_of_the_body_or_id_is_refused(
        key in key(),
        id in id(),
        timestamp in 0..=i64::MAX / 2,
        body in prop::collection::vec(any::<u8>(), 1..2048),
        pick in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let signature = standard::sign(&key, &id, timestamp, &body).unwrap();
        let timestamp_text = timestamp.to_string();
        let headers = Headers { id: &id, timestamp: &timestamp_text, signature: &signature };
        let verifier = Verifier::new(&key);

        let mut changed_body = body.clone();
        let at = pick.index(body.len());
        prop_assume!(changed_body[at] != byte);
        changed_body[at] = byte;
        prop_assert_eq!(
            verifier.verify_standard_at(headers, &changed_body, timestamp),
            Err(VerifyError::NoMatchingSignature)
        );

        let flipped_id = flip(id.as_bytes(), pick.index(id.len() * 8));
        if let Ok(changed_id) = std::str::from_utf8(&flipped_id) {
            prop_assert_eq!(
                verifier.verify_standard_at(Headers { id: changed_id, ..headers }, &body, timestamp),
                Err(VerifyError::NoMatchingSignature)
            );
        }
    }

    #[test]
    fn any_changed_timestamp_is_refused(
        key in key(),
        id in id(),
        timestamp in 0..=i64::MAX / 2,
        body in prop::collection::vec(any::<u8>(), 0..512),
        delta in prop_oneof![1i64..=300, -300i64..=-1],
    ) {
        prop_assume!(timestamp + delta >= 0);
        let signature = standard::sign(&key, &id, timestamp, &body).unwrap();
        // Within the tolerance of the clock, so only the signature decides.
        let moved = (timestamp + delta).to_string();
        let headers = Headers { id: &id, timestamp: &moved, signature: &signature };
        prop_assert_eq!(
            Verifier::new(&key).verify_standard_at(headers, &body, timestamp),
            Err(VerifyError::NoMatchingSignature)
        );
    }

    #[test]
    fn a_timestamp_beyond_the_tolerance_is_refused_whatever_the_signature(
        key in key(),
        timestamp in 1_000_000i64..=i64::MAX / 2,
        beyond in 301i64..1_000_000,
        late in any::<bool>(),
    ) {
        let signature = standard::sign(&key, "msg_1", timestamp, BODY).unwrap();
        let text = timestamp.to_string();
        let headers = Headers { id: "msg_1", timestamp: &text, signature: &signature };
        let now = if late { timestamp + beyond } else { timestamp - beyond };
        let verdict = Verifier::new(&key).verify_standard_at(headers, BODY, now);
        if late {
            prop_assert!(matches!(verdict, Err(VerifyError::TimestampTooOld { .. })), "{:?}", verdict);
        } else {
            prop_assert!(matches!(verdict, Err(VerifyError::TimestampTooNew { .. })), "{:?}", verdict);
        }
    }

    #[test]
    fn another_key_is_refused(
        key in key(),
        other in key(),
        body in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        prop_assume!(key != other);
        let signature = standard::sign(&other, "msg_1", 1000, &body).unwrap();
        let headers = Headers { id: "msg_1", timestamp: "1000", signature: &signature };
        prop_assert_eq!(
            Verifier::new(&key).verify_standard_at(headers, &body, 1000),
            Err(VerifyError::NoMatchingSignature)
        );
    }

    #[test]
    fn arbitrary_signature_headers_never_verify_by_accident(
        signature in "[ -~]{0,200}",
    ) {
        let headers = Headers { id: "msg_1", timestamp: "1000", signature: &signature };
        let verdict = Verifier::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .verify_standard_at(headers, BODY, 1000);
        prop_assert!(verdict.is_err(), "{:?}", verdict);
    }
}
