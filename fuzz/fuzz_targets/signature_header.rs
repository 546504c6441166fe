//! `X-Service-Signature` parsing and checking: a header is accepted only
//! when it is exactly what `sign` produces for that key and body.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (&[u8], &[u8], &[u8])| {
    let (key, body, header) = input;
    let expected = webhook_verify::sign(key, body);
    match webhook_verify::verify(key, body, header) {
        Ok(()) => assert_eq!(header, expected.as_bytes()),
        Err(_) => assert_ne!(header, expected.as_bytes()),
    }
    // The header that sign made is always accepted.
    assert!(webhook_verify::verify(key, body, expected.as_bytes()).is_ok());
});
