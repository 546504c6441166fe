//! Every case of the shared test vectors, through every entry point.

use webhook_verify::{SigningKey, Verifier, sign, verify};

use crate::helpers::cases;

#[test]
fn every_shared_vector_is_decided_as_documented() {
    let cases = cases();
    for case in &cases {
        let body = case.body();
        let key = SigningKey::from(case.signing_key.as_str());
        let verdicts = [
            (
                "verify(&str)",
                verify(&case.signing_key, &body, &case.header),
            ),
            ("verify(&SigningKey)", verify(&key, &body, &case.header)),
            ("Verifier", Verifier::new(&key).verify(&body, &case.header)),
            (
                "Verifier with another key first",
                Verifier::new("whsec_other")
                    .with_key(&key)
                    .verify(&body, case.header.as_bytes()),
            ),
        ];
        for (how, verdict) in verdicts {
            assert_eq!(
                verdict.is_ok(),
                case.valid,
                "case {} ({}) through {how}: got {verdict:?}",
                case.name,
                case.why
            );
        }
    }
    // The file is the contract: losing cases silently would weaken it.
    assert!(cases.len() >= 17, "only {} cases", cases.len());
}

#[test]
fn signing_reproduces_every_valid_shared_vector() {
    for case in cases().iter().filter(|c| c.valid) {
        assert_eq!(
            sign(&case.signing_key, &case.body()),
            case.header,
            "case {}",
            case.name
        );
    }
}
