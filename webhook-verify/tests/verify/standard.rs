//! Standard Webhooks: the vectors of `test-vectors/standard-webhooks.json`
//! through every entry point, one test per way to be refused, and the
//! choice between the two schemes.

use std::time::Duration;

use webhook_verify::standard::{
    self, DEFAULT_TOLERANCE, Headers, ID_HEADER, MAX_SIGNATURES, SIGNATURE_HEADER, TIMESTAMP_HEADER,
};
use webhook_verify::{Scheme, Verifier, VerifyError, sign};

use crate::helpers::{BODY, KEY, StandardCase, standard_cases};

/// The error code of the vectors file for a refusal.
fn code(err: VerifyError) -> String {
    match err {
        VerifyError::MissingStandardHeader { name } => format!("missing:{name}"),
        VerifyError::MalformedStandardHeader { name } => format!("malformed:{name}"),
        VerifyError::TimestampTooOld { .. } => "too_old".to_owned(),
        VerifyError::TimestampTooNew { .. } => "too_new".to_owned(),
        VerifyError::NoMatchingSignature => "no_match".to_owned(),
        VerifyError::NotAStandardKey => "not_a_standard_key".to_owned(),
        other => format!("unexpected: {other:?}"),
    }
}

fn verdict(result: Result<(), VerifyError>) -> String {
    result.map_or_else(code, |()| "valid".to_owned())
}

fn headers(case: &StandardCase) -> Headers<'_> {
    Headers {
        id: &case.id,
        timestamp: &case.timestamp,
        signature: &case.signature,
    }
}

fn verifier(case: &StandardCase) -> Verifier {
    let verifier = Verifier::from_keys(&case.keys).expect("a case has keys");
    match case.tolerance_secs {
        Some(secs) => verifier.with_tolerance(Duration::from_secs(secs)),
        None => verifier,
    }
}

#[test]
fn every_standard_vector_is_decided_as_documented() {
    let cases = standard_cases();
    assert_eq!(cases[0].name, "spec_example");
    for case in &cases {
        let body = case.body();
        let verifier = verifier(case);
        let direct = verdict(verifier.verify_standard_at(headers(case), &body, case.now));
        assert_eq!(direct, case.expected, "case {} ({})", case.name, case.why);

        // Choosing the scheme changes nothing when the headers are there,
        // whatever X-Service-Signature says (here: nothing valid); but a
        // verifier without a Standard Webhooks key falls back on
        // X-Service-Signature, which these cases lack.
        let strongest = verifier.verify_strongest_at(&body, "", headers(case), case.now);
        if verifier.standard_key_count() == 0 {
            assert_eq!(
                strongest,
                Err(VerifyError::MissingHeader),
                "case {}",
                case.name
            );
        } else {
            let strongest =
                strongest.map(|scheme| assert_eq!(scheme, Scheme::Standard, "case {}", case.name));
            assert_eq!(
                verdict(strongest),
                case.expected,
                "case {} through verify_strongest",
                case.name
            );
        }

        // A receiver that requires the scheme decides the same.
        let required = verifier
            .clone()
            .require_standard()
            .verify_strongest_at(&body, "", headers(case), case.now)
            .map(drop);
        assert_eq!(
            verdict(required),
            case.expected,
            "case {} required",
            case.name
        );
    }
    // The file is the contract: losing cases silently would weaken it.
    assert!(cases.len() >= 45, "only {} cases", cases.len());
    for expected in [
        "valid",
        "too_old",
        "too_new",
        "no_match",
        "not_a_standard_key",
        "missing:webhook-id",
        "missing:webhook-timestamp",
        "missing:webhook-signature",
        "malformed:webhook-timestamp",
        "malformed:webhook-signature",
    ] {
        assert!(
            cases.iter().any(|c| c.expected == expected),
            "no case is {expected}"
        );
    }
}

#[test]
fn signing_reproduces_every_valid_single_signature_vector() {
    let mut checked = 0;
    for case in standard_cases() {
        let single = !case.signature.contains(' ');
        if case.expected != "valid" || !single || case.keys.len() != 1 {
            continue;
        }
        let timestamp: i64 = case.timestamp.parse().unwrap();
        let signed = standard::sign(&case.keys[0], &case.id, timestamp, &case.body()).unwrap();
        assert_eq!(signed, case.signature, "case {}", case.name);
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} cases signed");
}

#[test]
fn the_free_function_agrees_with_the_verifier_at_the_default_tolerance() {
    // `standard::verify` reads the system clock: only cases far from any
    // clock (too old, or refused before the clock is read) can be compared.
    for case in standard_cases() {
        let decided_without_the_clock = matches!(
            case.expected.as_str(),
            "not_a_standard_key"
                | "missing:webhook-id"
                | "missing:webhook-timestamp"
                | "missing:webhook-signature"
                | "malformed:webhook-timestamp"
                | "malformed:webhook-signature"
        );
        if decided_without_the_clock && case.keys.len() == 1 && case.tolerance_secs.is_none() {
            let got = verdict(standard::verify(
                &case.keys[0],
                headers(&case),
                &case.body(),
            ));
            assert_eq!(got, case.expected, "case {}", case.name);
        }
    }
}

const ID: &str = "msg_41_w7";
const SIGNED_AT: i64 = 1_764_324_120;

fn signature() -> String {
    standard::sign(KEY, ID, SIGNED_AT, BODY).unwrap()
}

fn refused(headers: Headers<'_>, now: i64) -> VerifyError {
    let err = Verifier::new(KEY)
        .verify_standard_at(headers, BODY, now)
        .expect_err("must be refused");
    // The same through the choice of scheme.
    assert_eq!(
        Verifier::new(KEY).verify_strongest_at(BODY, sign(KEY, BODY), headers, now),
        Err(err)
    );
    err
}

#[test]
fn a_fresh_delivery_is_accepted_with_the_system_clock() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let timestamp = now.to_string();
    let signature = standard::sign(KEY, ID, now as i64, BODY).unwrap();
    let headers = Headers {
        id: ID,
        timestamp: &timestamp,
        signature: &signature,
    };
    assert_eq!(Verifier::new(KEY).verify_standard(headers, BODY), Ok(()));
    assert_eq!(standard::verify(KEY, headers, BODY), Ok(()));
    assert_eq!(
        Verifier::new(KEY).verify_strongest(BODY, "", headers),
        Ok(Scheme::Standard)
    );
}

#[test]
fn the_default_tolerance_is_five_minutes() {
    assert_eq!(DEFAULT_TOLERANCE, Duration::from_secs(300));
    assert_eq!(Verifier::new(KEY).tolerance(), DEFAULT_TOLERANCE);
}

#[test]
fn a_replay_six_minutes_later_is_too_old_and_says_so() {
    let signature = signature();
    let headers = Headers {
        id: ID,
        timestamp: "1764324120",
        signature: &signature,
    };
    let err = refused(headers, SIGNED_AT + 360);
    assert_eq!(
        err,
        VerifyError::TimestampTooOld {
            age_secs: 360,
            tolerance_secs: 300
        }
    );
    assert_eq!(
        err.to_string(),
        "webhook-timestamp is 360 s old, beyond the tolerance of 300 s: refused as a possible replay"
    );
}

#[test]
fn a_timestamp_from_the_future_is_too_new_and_says_so() {
    let signature = signature();
    let headers = Headers {
        id: ID,
        timestamp: "1764324120",
        signature: &signature,
    };
    let err = refused(headers, SIGNED_AT - 900);
    assert_eq!(
        err.to_string(),
        "webhook-timestamp is 900 s in the future, beyond the tolerance of 300 s: is a clock wrong?"
    );
}

#[test]
fn each_missing_header_is_named() {
    let signature = signature();
    let full = Headers {
        id: ID,
        timestamp: "1764324120",
        signature: &signature,
    };
    for (headers, name) in [
        (Headers { id: "", ..full }, ID_HEADER),
        (
            Headers {
                timestamp: "",
                ..full
            },
            TIMESTAMP_HEADER,
        ),
        (
            Headers {
                signature: "",
                ..full
            },
            SIGNATURE_HEADER,
        ),
    ] {
        let err = refused(headers, SIGNED_AT);
        assert_eq!(err, VerifyError::MissingStandardHeader { name });
        assert_eq!(err.to_string(), format!("missing {name} header"));
    }
}

#[test]
fn malformed_headers_say_what_was_expected() {
    let signature = signature();
    let full = Headers {
        id: ID,
        timestamp: "1764324120",
        signature: &signature,
    };
    let err = refused(
        Headers {
            timestamp: "1764324120.0",
            ..full
        },
        SIGNED_AT,
    );
    assert_eq!(
        err.to_string(),
        "malformed webhook-timestamp header: expected Unix seconds in decimal digits"
    );
    let err = refused(
        Headers {
            signature: "sha256=00",
            ..full
        },
        SIGNED_AT,
    );
    assert_eq!(
        err.to_string(),
        "malformed webhook-signature header: expected `v1,` and the base64 of 32 bytes, several \
         separated by spaces"
    );
}

#[test]
fn a_header_with_max_signatures_is_read_and_one_more_is_refused() {
    let good = signature();
    let other = standard::sign(
        "whsec_Z9aY8bX7cW6dV5eU4fT3gS2hR1iQ0jPp",
        ID,
        SIGNED_AT,
        BODY,
    )
    .unwrap();
    let mut entries = vec![other.as_str(); MAX_SIGNATURES - 1];
    entries.push(&good);
    let full = entries.join(" ");
    let headers = Headers {
        id: ID,
        timestamp: "1764324120",
        signature: &full,
    };
    assert_eq!(
        Verifier::new(KEY).verify_standard_at(headers, BODY, SIGNED_AT),
        Ok(())
    );
    let too_many = format!("{other} {full}");
    assert_eq!(
        refused(
            Headers {
                signature: &too_many,
                ..headers
            },
            SIGNED_AT
        ),
        VerifyError::MalformedStandardHeader {
            name: SIGNATURE_HEADER
        }
    );
}

#[test]
fn a_mismatch_never_says_where() {
    let signature = standard::sign(
        "whsec_Z9aY8bX7cW6dV5eU4fT3gS2hR1iQ0jPp",
        ID,
        SIGNED_AT,
        BODY,
    )
    .unwrap();
    let err = refused(
        Headers {
            id: ID,
            timestamp: "1764324120",
            signature: &signature,
        },
        SIGNED_AT,
    );
    assert_eq!(err, VerifyError::NoMatchingSignature);
    let said = format!("{err} {err:?}");
    assert!(
        !said.contains(&signature[3..]),
        "echoes the signature: {said}"
    );
    assert!(
        !said.contains(&self::signature()[3..]),
        "leaks the expected one: {said}"
    );
    assert!(
        !said.chars().any(|c| c.is_ascii_digit()),
        "names a position: {said}"
    );
}

#[test]
fn keys_that_are_not_standard_keys_are_skipped_not_fatal() {
    let signature = signature();
    let headers = Headers {
        id: ID,
        timestamp: "1764324120",
        signature: &signature,
    };
    let verifier = Verifier::from_keys(["whsec_not base64!", KEY]).unwrap();
    assert_eq!(verifier.standard_key_count(), 1);
    assert_eq!(
        verifier.verify_standard_at(headers, BODY, SIGNED_AT),
        Ok(())
    );
    let none = Verifier::new("whsec_not base64!");
    assert_eq!(
        none.verify_standard_at(headers, BODY, SIGNED_AT),
        Err(VerifyError::NotAStandardKey)
    );
    assert_eq!(
        standard::verify("whsec_not base64!", headers, BODY),
        Err(VerifyError::NotAStandardKey)
    );
}

mod choosing_the_scheme {
    use super::*;

    fn both() -> (String, String) {
        (sign(KEY, BODY), signature())
    }

    #[test]
    fn the_standard_headers_win_when_present() {
        let (service, standard) = both();
        let headers = Headers {
            id: ID,
            timestamp: "1764324120",
            signature: &standard,
        };
        let verifier = Verifier::new(KEY);
        assert_eq!(
            verifier.verify_strongest_at(BODY, &service, headers, SIGNED_AT),
            Ok(Scheme::Standard)
        );
        // Replayed later: a valid X-Service-Signature does not rescue it.
        assert!(matches!(
            verifier.verify_strongest_at(BODY, &service, headers, SIGNED_AT + 3600),
            Err(VerifyError::TimestampTooOld { .. })
        ));
    }

    #[test]
    fn stripping_one_standard_header_does_not_fall_back() {
        let (service, standard) = both();
        let stripped = Headers {
            id: ID,
            timestamp: "",
            signature: &standard,
        };
        assert_eq!(
            Verifier::new(KEY).verify_strongest_at(BODY, &service, stripped, SIGNED_AT + 3600),
            Err(VerifyError::MissingStandardHeader {
                name: TIMESTAMP_HEADER
            })
        );
    }

    #[test]
    fn without_standard_headers_the_service_scheme_is_checked() {
        let (service, _) = both();
        let verifier = Verifier::new(KEY);
        assert_eq!(
            verifier.verify_strongest_at(BODY, &service, Headers::default(), SIGNED_AT),
            Ok(Scheme::Service)
        );
        assert_eq!(
            verifier.verify_strongest_at(BODY, sign("whsec_other", BODY), Headers::default(), 0),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn a_receiver_that_requires_the_standard_scheme_refuses_a_stripped_replay() {
        let (service, _) = both();
        let verifier = Verifier::new(KEY).require_standard();
        assert!(verifier.requires_standard());
        assert_eq!(
            verifier.verify_strongest_at(BODY, &service, Headers::default(), SIGNED_AT),
            Err(VerifyError::MissingStandardHeader { name: ID_HEADER })
        );
    }

    #[test]
    fn a_verifier_without_standard_keys_checks_the_service_scheme_unless_required() {
        // An old-style key that is not base64 cannot check the new headers;
        // refusing every delivery that carries them would break a receiver
        // that worked before they were sent.
        let key = "whsec_key";
        let (service, standard) = (sign(key, BODY), signature());
        let headers = Headers {
            id: ID,
            timestamp: "1764324120",
            signature: &standard,
        };
        assert_eq!(
            Verifier::new(key).verify_strongest_at(BODY, &service, headers, SIGNED_AT),
            Ok(Scheme::Service)
        );
        assert_eq!(
            Verifier::new(key)
                .require_standard()
                .verify_strongest_at(BODY, &service, headers, SIGNED_AT),
            Err(VerifyError::NotAStandardKey)
        );
    }
}
