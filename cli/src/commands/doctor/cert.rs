//! The validity period of an X.509 certificate, read from its DER bytes.
//!
//! `doctor` needs one thing from the service's certificate: when it stops
//! being valid. rustls has already parsed and verified the certificate by
//! the time we see it, but exposes no dates; a general X.509 parser
//! (x509-parser with asn1-rs, der-parser, nom, oid-registry and a proc
//! macro) would add a dozen crates to the build for two fields. So this
//! walks the few DER elements in front of `validity` (RFC 5280, 4.1) and
//! reads its two times, answering `None` for anything it does not expect.

use chrono::{DateTime, NaiveDate, Utc};

/// When a certificate starts and stops being valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// `notBefore`.
    pub not_before: DateTime<Utc>,
    /// `notAfter`.
    pub not_after: DateTime<Utc>,
}

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const VERSION: u8 = 0xA0; // [0] EXPLICIT, constructed
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// Reads `tbsCertificate.validity` of a DER certificate.
///
/// ```text
/// Certificate ::= SEQUENCE { tbsCertificate TBSCertificate, ... }
/// TBSCertificate ::= SEQUENCE {
///     version [0] EXPLICIT Version DEFAULT v1, serialNumber INTEGER,
///     signature AlgorithmIdentifier, issuer Name, validity Validity, ... }
/// Validity ::= SEQUENCE { notBefore Time, notAfter Time }
/// ```
pub fn validity(der: &[u8]) -> Option<Validity> {
    let (certificate, _) = element(der, SEQUENCE)?;
    let (tbs, _) = element(certificate, SEQUENCE)?;
    let mut rest = tbs;
    if rest.first() == Some(&VERSION) {
        rest = element(rest, VERSION)?.1;
    }
    let rest = element(rest, INTEGER)?.1; // serialNumber
    let rest = element(rest, SEQUENCE)?.1; // signature
    let rest = element(rest, SEQUENCE)?.1; // issuer
    let (validity, _) = element(rest, SEQUENCE)?;
    let (not_before, rest) = time(validity)?;
    let (not_after, _) = time(rest)?;
    Some(Validity {
        not_before,
        not_after,
    })
}

/// One DER element of tag `tag` at the start of `input`: its content and
/// what follows it.
fn element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&found, input) = input.split_first()?;
    if found != tag {
        return None;
    }
    let (&first, input) = input.split_first()?;
    let (len, input) = if first < 0x80 {
        (usize::from(first), input)
    } else {
        // Long form: the low bits count the length's bytes (DER: at most
        // what a certificate needs; 4 bytes is 4 GiB).
        let count = usize::from(first & 0x7F);
        if count == 0 || count > 4 || input.len() < count {
            return None;
        }
        let (bytes, input) = input.split_at(count);
        let len = bytes
            .iter()
            .fold(0usize, |len, &b| (len << 8) | usize::from(b));
        (len, input)
    };
    (input.len() >= len).then(|| input.split_at(len))
}

/// A `Time` (UTCTime or GeneralizedTime, in the `Z` forms RFC 5280
/// requires) at the start of `input`, and what follows it.
fn time(input: &[u8]) -> Option<(DateTime<Utc>, &[u8])> {
    let (tag, year_digits) = match *input.first()? {
        UTC_TIME => (UTC_TIME, 2),
        GENERALIZED_TIME => (GENERALIZED_TIME, 4),
        _ => return None,
    };
    let (content, rest) = element(input, tag)?;
    let text = std::str::from_utf8(content).ok()?;
    let digits = text.strip_suffix('Z')?;
    if digits.len() != year_digits + 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let number = |range: std::ops::Range<usize>| digits[range].parse::<u32>().ok();
    let year = number(0..year_digits)?;
    // RFC 5280, 4.1.2.5.1: a two-digit year of 50 or more is 19YY.
    let year = match (year_digits, year) {
        (2, y) if y >= 50 => 1900 + y,
        (2, y) => 2000 + y,
        (_, y) => y,
    };
    let at = |i: usize| number(year_digits + i..year_digits + i + 2);
    let date = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, at(0)?, at(2)?)?;
    let time = date.and_hms_opt(at(4)?, at(6)?, at(8)?)?;
    Some((time.and_utc(), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        params.self_signed(&key).unwrap().der().to_vec()
    }

    fn day(y: i32, m: u32, d: u32) -> DateTime<Utc> {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
    }

    #[test]
    fn utc_times_before_2050_are_read() {
        let v = validity(&certificate((2024, 1, 31), (2027, 12, 1))).unwrap();
        assert_eq!(v.not_before, day(2024, 1, 31));
        assert_eq!(v.not_after, day(2027, 12, 1));
    }

    #[test]
    fn generalized_times_from_2050_are_read() {
        // rcgen writes GeneralizedTime from 2050 on, as RFC 5280 says.
        let v = validity(&certificate((1999, 6, 15), (4096, 1, 1))).unwrap();
        assert_eq!(v.not_before, day(1999, 6, 15));
        assert_eq!(v.not_after, day(4096, 1, 1));
    }

    #[test]
    fn two_digit_years_of_50_and_more_are_the_1900s() {
        let (t, rest) = time(b"\x17\x0d500101000000Z").unwrap();
        assert_eq!((t, rest), (day(1950, 1, 1), &b""[..]));
        let (t, _) = time(b"\x17\x0d491231235959Z").unwrap();
        assert_eq!(t, day(2049, 12, 31) + chrono::Duration::seconds(86_399));
    }

    #[test]
    fn anything_unexpected_is_none_never_a_panic() {
        let der = certificate((2024, 1, 1), (2030, 1, 1));
        assert!(validity(&der).is_some());
        for cut in 0..der.len() {
            assert_eq!(validity(&der[..cut]), None, "cut at {cut}");
        }
        assert_eq!(validity(b"\x30\x84\xff\xff\xff\xff"), None);
        assert_eq!(validity(b"\x30\x80"), None);
        assert_eq!(validity(b"\x31\x00"), None);
        // Local times (no Z), fractions and impossible dates are refused.
        assert_eq!(time(b"\x17\x0c500101000000"), None);
        assert_eq!(time(b"\x18\x1120500101000000.5Z"), None);
        assert_eq!(time(b"\x17\x0d501301000000Z"), None);
        assert_eq!(time(b"\x17\x0d500101250000Z"), None);
    }
}
