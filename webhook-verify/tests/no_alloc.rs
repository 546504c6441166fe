//! Proof that verifying allocates nothing.
//!
//! `allocation-counter` installs a counting global allocator in this test
//! binary only (its own `unsafe impl GlobalAlloc`, so this crate keeps the
//! workspace's `unsafe_code = "forbid"`) and counts the allocations made by
//! the current thread inside `measure`.

use webhook_verify::{Verifier, VerifyError, sign, verify};

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

#[test]
fn the_counter_sees_allocations() {
    // Guards the test above against a counter that counts nothing.
    let info = allocation_counter::measure(|| {
        std::hint::black_box(sign(KEY, b"body"));
    });
    assert!(info.count_total > 0, "{info:?}");
}
