//! One test per way a delivery can be refused, and the error it gets.

use webhook_verify::{SIGNATURE_HEADER, SigningKey, Verifier, VerifyError, sign, verify};

use crate::helpers::{BODY, KEY};

fn good_header() -> String {
    sign(KEY, BODY)
}

fn digest() -> String {
    good_header()["sha256=".len()..].to_owned()
}

fn refused(header: impl AsRef<[u8]>) -> VerifyError {
    let header = header.as_ref();
    let err = verify(KEY, BODY, header).expect_err("must be refused");
    // The free function and the verifier always agree.
    assert_eq!(Verifier::new(KEY).verify(BODY, header), Err(err));
    err
}

#[test]
fn a_correct_signature_is_accepted() {
    assert_eq!(verify(KEY, BODY, good_header()), Ok(()));
}

#[test]
fn the_header_name_is_x_service_signature() {
    assert_eq!(SIGNATURE_HEADER, "X-Service-Signature");
}

#[test]
fn an_empty_header_is_missing() {
    assert_eq!(refused(""), VerifyError::MissingHeader);
}

#[test]
fn uppercase_hex_is_refused() {
    let header = format!("sha256={}", digest().to_uppercase());
    assert_eq!(refused(header), VerifyError::MalformedHeader);
}

#[test]
fn one_uppercase_hex_digit_is_refused() {
    let mut digest = digest();
    let at = digest
        .find(|c: char| c.is_ascii_lowercase())
        .expect("a letter in the digest");
    digest.replace_range(at..=at, &digest[at..=at].to_uppercase());
    assert_eq!(
        refused(format!("sha256={digest}")),
        VerifyError::MalformedHeader
    );
}

#[test]
fn an_uppercase_prefix_is_refused() {
    assert_eq!(
        refused(format!("SHA256={}", digest())),
        VerifyError::MalformedHeader
    );
}

#[test]
fn a_digest_without_prefix_is_refused() {
    assert_eq!(refused(digest()), VerifyError::MalformedHeader);
}

#[test]
fn another_algorithm_prefix_is_refused() {
    assert_eq!(
        refused(format!("sha1={}", digest())),
        VerifyError::MalformedHeader
    );
    assert_eq!(
        refused(format!("sha512={}", digest())),
        VerifyError::MalformedHeader
    );
}

#[test]
fn a_prefix_without_equals_sign_is_refused() {
    assert_eq!(
        refused(format!("sha256:{}", digest())),
        VerifyError::MalformedHeader
    );
}

#[test]
fn an_empty_digest_is_refused() {
    assert_eq!(refused("sha256="), VerifyError::MalformedHeader);
}

#[test]
fn a_short_digest_is_refused() {
    assert_eq!(
        refused(&good_header()[..good_header().len() - 2]),
        VerifyError::MalformedHeader
    );
    assert_eq!(
        refused(&good_header()[..good_header().len() - 1]),
        VerifyError::MalformedHeader
    );
}

#[test]
fn a_long_digest_is_refused() {
    assert_eq!(
        refused(format!("{}0", good_header())),
        VerifyError::MalformedHeader
    );
    assert_eq!(
        refused(format!("{}00", good_header())),
        VerifyError::MalformedHeader
    );
}

#[test]
fn a_non_hex_digest_is_refused() {
    let mut digest = digest();
    digest.replace_range(0..1, "g");
    assert_eq!(
        refused(format!("sha256={digest}")),
        VerifyError::MalformedHeader
    );
}

#[test]
fn leading_whitespace_is_refused() {
    assert_eq!(
        refused(format!(" {}", good_header())),
        VerifyError::MalformedHeader
    );
    assert_eq!(
        refused(format!("\t{}", good_header())),
        VerifyError::MalformedHeader
    );
}

#[test]
fn trailing_whitespace_is_refused() {
    assert_eq!(
        refused(format!("{} ", good_header())),
        VerifyError::MalformedHeader
    );
    assert_eq!(
        refused(format!("{}\n", good_header())),
        VerifyError::MalformedHeader
    );
}

#[test]
fn whitespace_after_the_prefix_is_refused() {
    assert_eq!(
        refused(format!("sha256= {}", digest())),
        VerifyError::MalformedHeader
    );
}

#[test]
fn a_comma_separated_list_is_refused() {
    let other = sign("whsec_other", BODY);
    assert_eq!(
        refused(format!("{},{other}", good_header())),
        VerifyError::MalformedHeader
    );
    assert_eq!(
        refused(format!("{other}, {}", good_header())),
        VerifyError::MalformedHeader
    );
}

#[test]
fn a_header_that_is_not_utf8_is_refused() {
    let mut header = good_header().into_bytes();
    header[10] = 0xff;
    assert_eq!(refused(header), VerifyError::MalformedHeader);
}

#[test]
fn a_signature_made_with_another_key_is_a_mismatch() {
    assert_eq!(
        refused(sign("whsec_Z9aY8bX7cW6dV5eU4fT3gS2hR1iQ0jPp", BODY)),
        VerifyError::Mismatch
    );
}

#[test]
fn a_key_without_its_whsec_prefix_is_a_mismatch() {
    let stripped = KEY.strip_prefix("whsec_").unwrap();
    assert_eq!(refused(sign(stripped, BODY)), VerifyError::Mismatch);
}

#[test]
fn a_changed_body_is_a_mismatch() {
    let header = good_header();
    let mut body = BODY.to_vec();
    body.push(b'\n');
    assert_eq!(verify(KEY, &body, &header), Err(VerifyError::Mismatch));
    assert_eq!(
        verify(KEY, &BODY[..BODY.len() - 1], &header),
        Err(VerifyError::Mismatch)
    );
}

#[test]
fn a_well_formed_wrong_digest_is_a_mismatch() {
    assert_eq!(
        refused(format!("sha256={}", "0".repeat(64))),
        VerifyError::Mismatch
    );
}

#[test]
fn a_mismatch_never_says_where() {
    let wrong = sign("whsec_other", BODY);
    let err = refused(&wrong);
    let said = format!("{err} {err:?}");
    assert!(
        !said.contains(&digest()),
        "leaks the expected digest: {said}"
    );
    assert!(
        !said.contains(&wrong["sha256=".len()..]),
        "echoes the digest: {said}"
    );
    assert!(
        !said.chars().any(|c| c.is_ascii_digit()),
        "names a position: {said}"
    );
}

#[test]
fn errors_tell_a_bad_header_apart_from_a_mismatch() {
    let missing = VerifyError::MissingHeader.to_string();
    let malformed = VerifyError::MalformedHeader.to_string();
    let mismatch = VerifyError::Mismatch.to_string();
    assert!(missing.contains("missing"), "{missing}");
    assert!(malformed.contains("malformed"), "{malformed}");
    assert!(mismatch.contains("does not match"), "{mismatch}");
}

#[test]
fn a_signing_key_never_prints_itself() {
    let key = SigningKey::from(KEY.to_owned());
    assert_eq!(format!("{key:?}"), "[redacted]");
    assert_eq!(format!("{key}"), "[redacted]");
    assert_eq!(format!("{:?}", Some(&key)), "Some([redacted])");
    assert_eq!(key.expose_secret(), KEY);
    let parsed: SigningKey = KEY.parse().unwrap();
    assert_eq!(parsed.expose_secret(), KEY);
}

#[test]
fn a_verifier_never_prints_its_keys() {
    let shown = format!("{:?}", Verifier::new(KEY));
    assert!(!shown.contains("whsec"), "{shown}");
}
