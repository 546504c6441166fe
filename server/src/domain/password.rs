//! Dashboard passwords: the one place that hashes and verifies them, with
//! the one set of argon2 parameters, and the lengths every way in accepts
//! (`admin create-merchant`, the fixtures file, sign-in).
//!
//! Why one place: a hash made with other parameters than sign-in checks
//! with would still verify (the PHC string carries them), but it would make
//! an unknown e-mail cost another time than a known one, which is what the
//! dummy hash exists to prevent.
//!
//! These functions are CPU-bound on purpose (tens of milliseconds); callers
//! on the async threads run them with `spawn_blocking`, and the server
//! bounds how many run at once (`app::auth`).

use std::sync::OnceLock;

use argon2::password_hash::Error;
use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};

/// Shortest password accepted for an account.
pub(crate) const MIN_LEN: usize = 8;
/// Longest e-mail or password looked at: argon2 of a huge password is a
/// denial of service.
pub(crate) const MAX_CREDENTIAL_LEN: usize = 256;

/// The hasher and its parameters (argon2id, the crate's defaults), shared
/// by [`hash`], [`verify`] and [`dummy_hash`] so the three cost the same.
fn argon2() -> Argon2<'static> {
    Argon2::default()
}

/// The PHC string of `password`, salted afresh.
pub(crate) fn hash(password: &str) -> Result<String, Error> {
    PasswordHasher::<PasswordHash>::hash_password(&argon2(), password.as_bytes())
        .map(|h| h.to_string())
}

/// Whether `password` is the one `hash` was made from; a hash that does not
/// parse matches nothing.
pub(crate) fn verify(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        argon2()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A hash of a random password, made once per process: sign-in verifies an
/// unknown e-mail's attempt against it, so timing does not tell which
/// addresses have accounts.
pub(crate) fn dummy_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| hash(super::keys::random_token("").expose()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only() {
        let made = hash("correct horse battery").unwrap();
        assert!(verify(&made, "correct horse battery"));
        assert!(!verify(&made, "correct horse batterY"));
        assert!(!verify("not a PHC string", "correct horse battery"));
    }

    #[test]
    fn the_dummy_is_a_hash_of_the_same_parameters() {
        let dummy = PasswordHash::new(dummy_hash()).unwrap();
        let real = hash("x").unwrap();
        let real = PasswordHash::new(&real).unwrap();
        assert_eq!(dummy.algorithm, real.algorithm);
        assert_eq!(dummy.params, real.params);
        assert!(!verify(dummy_hash(), ""));
    }
}
