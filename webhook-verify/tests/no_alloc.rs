//! Proof that verifying allocates nothing.
//!
//! `allocation-counter` installs a counting global allocator in this test
//! binary only (its own `unsafe impl GlobalAlloc`, so this crate keeps the
//! workspace's `unsafe_code = "forbid"`) and counts the allocations made by
//! the current thread inside `measure`.

use webhook_verify::standard::{self, Headers};
use webhook_verify::{Scheme, Verifier, VerifyError, sign, verify};

const KEY: &str = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";

#[test]
fn verifying_allocates_nothing() {
    let body = vec![b'x'; 16 * 1024];
    let good = sign(KEY, &body);
    let wrong = sign("whsec_other", &body);
    let malformed = good.to_uppercase();
    let verifier = Verifier::new("whsec_old").with_key(KEY);

    let info = allocation_counter::measure(|| {
        assert_eq!(verify(KEY, &body, &good), Ok(()));
        assert_eq!(verify(KEY, &body, &wrong), Err(VerifyError::Mismatch));
        assert_eq!(
            verify(KEY, &body, &malformed),
            Err(VerifyError::MalformedHeader)
        );
        assert_eq!(verify(KEY, &body, ""), Err(VerifyError::MissingHeader));
        assert_eq!(verifier.verify(&body, &good), Ok(()));
        assert_eq!(verifier.verify(&body, &wrong), Err(VerifyError::Mismatch));
        // A key longer than a SHA-256 block is hashed first: still no heap.
        assert!(verify([7u8; 200], &body, &good).is_err());
    });
    assert_eq!(info.count_total, 0, "verify allocated: {info:?}");
}

fn headers(signature: &str) -> Headers<'_> {
    Headers {
        id: "msg_41_w7",
        timestamp: "1764324120",
        signature,
    }
}

#[test]
fn verifying_standard_webhooks_allocates_nothing() {
    let body = vec![b'x'; 16 * 1024];
    let signed_at = 1_764_324_120;
    let good = standard::sign(KEY, "msg_41_w7", signed_at, &body).unwrap();
    let other = standard::sign(
        "whsec_Z9aY8bX7cW6dV5eU4fT3gS2hR1iQ0jPp",
        "msg_41_w7",
        signed_at,
        &body,
    )
    .unwrap();
    let rotating = format!("{other} {good}");
    let service = sign(KEY, &body);
    let verifier = Verifier::new("whsec_Z9aY8bX7cW6dV5eU4fT3gS2hR1iQ0jPp").with_key(KEY);

    let info = allocation_counter::measure(|| {
        assert_eq!(
            verifier.verify_standard_at(headers(&good), &body, signed_at),
            Ok(())
        );
        assert_eq!(
            verifier.verify_standard_at(headers(&rotating), &body, signed_at),
            Ok(())
        );
        assert!(
            verifier
                .verify_standard_at(headers(&good), &body, signed_at + 400)
                .is_err()
        );
        assert!(
            verifier
                .verify_standard_at(headers("v1,"), &body, signed_at)
                .is_err()
        );
        assert_eq!(
            Verifier::verify_standard_at(&verifier, headers(&good), b"other", signed_at),
            Err(VerifyError::NoMatchingSignature)
        );
        assert_eq!(
            verifier.verify_strongest_at(&body, &service, headers(&good), signed_at),
            Ok(Scheme::Standard)
        );
        assert_eq!(
            verifier.verify_strongest_at(&body, &service, Headers::default(), signed_at),
            Ok(Scheme::Service)
        );
    });
    assert_eq!(info.count_total, 0, "verify_standard allocated: {info:?}");
}

#[test]
fn the_counter_sees_allocations() {
    // Guards the test above against a counter that counts nothing.
    let info = allocation_counter::measure(|| {
        std::hint::black_box(sign(KEY, b"body"));
    });
    assert!(info.count_total > 0, "{info:?}");
}
