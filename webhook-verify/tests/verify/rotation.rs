//! Key rotation with a `Verifier`.

use webhook_verify::{SigningKey, Verifier, VerifyError, sign};

use crate::helpers::BODY;

const OLD: &str = "whsec_Z9aY8bX7cW6dV5eU4fT3gS2hR1iQ0jPp";
const NEW: &str = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";

#[test]
fn during_rotation_both_keys_are_accepted() {
    let verifier = Verifier::from_keys([NEW, OLD]).unwrap();
    assert_eq!(verifier.verify(BODY, sign(NEW, BODY)), Ok(()));
    assert_eq!(verifier.verify(BODY, sign(OLD, BODY)), Ok(()));
}

#[test]
fn after_rotation_the_old_key_is_refused() {
    let verifier = Verifier::new(NEW);
    assert_eq!(
        verifier.verify(BODY, sign(OLD, BODY)),
        Err(VerifyError::Mismatch)
    );
}

#[test]
fn a_key_no_one_holds_is_refused_during_rotation() {
    let verifier = Verifier::new(NEW).with_key(OLD);
    assert_eq!(
        verifier.verify(BODY, sign("whsec_third", BODY)),
        Err(VerifyError::Mismatch)
    );
}

#[test]
fn a_malformed_header_is_malformed_whatever_the_keys() {
    let verifier = Verifier::from_keys([NEW, OLD]).unwrap();
    let upper = sign(OLD, BODY).to_uppercase();
    assert_eq!(
        verifier.verify(BODY, upper),
        Err(VerifyError::MalformedHeader)
    );
}

#[test]
fn a_verifier_needs_at_least_one_key() {
    assert!(Verifier::from_keys(Vec::<SigningKey>::new()).is_none());
}

#[test]
fn signing_keys_from_configuration_build_a_verifier() {
    let keys: Vec<SigningKey> = format!("{NEW},{OLD}")
        .split(',')
        .map(SigningKey::from)
        .collect();
    let verifier = Verifier::from_keys(&keys).unwrap();
    assert_eq!(verifier.key_count(), 2);
    assert_eq!(verifier.verify(BODY, sign(&keys[1], BODY)), Ok(()));
}
