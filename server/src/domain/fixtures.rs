//! Declared fixtures: the TOML file of `--fixtures FILE` and `admin
//! apply-fixtures FILE`, read and checked without I/O.
//!
//! [`parse`] turns the text into [`Fixtures`], every value with the line it
//! came from, or into the [`Problem`]s that stop the start, each naming its
//! line. Secrets (keys, signing keys, the password) are [`Secret`]s from the
//! moment they are read, and no message quotes a value of the file: a key
//! is named by its line and its prefix only.
//!
//! What is checked here: the TOML itself, unknown and missing fields, names
//! (1 to [`MAX_NAME`] characters) and e-mails without control characters,
//! fees (not negative, at most two decimals), e-mails, passwords (as `admin
//! create-merchant` and sign-in take them), the shape and environment of
//! every key and signing key, webhook URLs ([`WebhookUrl`]), courier names a
//! merchant links to, and values the file names twice. Whether a webhook's
//! host may be used, and how the file agrees with the database, is the
//! business of `testing::fixtures`, which asks the database.
//!
//! This file holds what the rest of the server uses: the limits and the
//! checked types, every value [`At`] its line. The work is in two files
//! beside it, each readable on its own:
//!
//! - `check.rs`: the file as written (every field spanned, for the line of
//!   a message) and the checks that turn it into [`Fixtures`]; the rules of
//!   each field, in one place.
//! - `reader.rs`: the TOML reader's messages, rebuilt without any value of
//!   the file. Apart because its reason is different (a secret pasted in
//!   the wrong place must not reach a log) and it is tested on its own.

use chrono::{DateTime, Utc};
use shipment_sdk::model::{Permissions, WebhookUrl};

use super::keys::Secret;

mod check;
mod reader;

pub use check::{parse, parse_at};

/// Longest fixtures file, in bytes (1 MiB): a file is read up to this and
/// refused past it, never read whole first.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;
/// Longest courier, driver or merchant name (as the courier routes take).
pub const MAX_NAME: usize = 500;
/// The units `expires_in` takes (`90m`, `12h`, `30d`, `4w`), each with its
/// length in minutes.
pub const EXPIRES_IN_UNITS: [(char, i64); 4] =
    [('m', 1), ('h', 60), ('d', 24 * 60), ('w', 7 * 24 * 60)];
/// Fees of a courier that does not name them, as `admin create-courier`:
/// 5.00 + 1.00 per kg + 0.10 per km, in minor units.
pub const DEFAULT_FEES: [i64; 3] = [500, 100, 10];

/// A value of the file and the line (from 1) it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At<T> {
    /// The line.
    pub line: usize,
    /// The value, checked.
    pub value: T,
}

/// Why the file is refused, at one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The line (from 1).
    pub line: usize,
    /// A sentence for a person; it never quotes a secret.
    pub detail: String,
}

/// The whole file, checked.
#[derive(Debug, Clone, Default)]
pub struct Fixtures {
    /// `[[couriers]]`, in file order.
    pub couriers: Vec<Courier>,
    /// `[[merchants]]`, in file order.
    pub merchants: Vec<Merchant>,
}

/// A courier company, matched by name.
#[derive(Debug, Clone)]
pub struct Courier {
    /// Its name, trimmed.
    pub name: At<String>,
    /// `base_fee`, `per_kg`, `per_km` in minor units (the name's line when
    /// the file leaves them to their defaults).
    pub fees: [At<i64>; 3],
    /// Courier keys, exactly these values.
    pub keys: Vec<At<Secret>>,
    /// Drivers, matched by name within the company.
    pub drivers: Vec<At<String>>,
}

/// A merchant, matched by its normalised e-mail.
#[derive(Debug, Clone)]
pub struct Merchant {
    /// Display name, trimmed.
    pub name: At<String>,
    /// Sign-in e-mail, normalised (`email::normalize`).
    pub email: At<String>,
    /// Sign-in password.
    pub password: At<Secret>,
    /// API keys, exactly these values, with their terms.
    pub api_keys: Vec<ApiKey>,
    /// Names of courier companies of this file to link, each once.
    pub couriers: Vec<At<String>>,
    /// The shipment signing key, if the file gives one.
    pub shipment_signing_key: Option<At<Secret>>,
    /// Webhooks, matched by URL.
    pub webhooks: Vec<Webhook>,
}

/// An API key of a merchant: a full key (`sk_`), or a restricted one
/// (`rk_`) with its permissions; either may expire.
#[derive(Debug, Clone)]
pub struct ApiKey {
    /// The key, exactly this value.
    pub key: At<Secret>,
    /// A restricted key's permissions (checked as `POST /api-keys` checks
    /// them); `None` for a full key.
    pub permissions: Option<At<Permissions>>,
    /// When the key stops working: `expires_at` as written, or `expires_in`
    /// after the time the file was read. It may be past already: a test
    /// may start with an expired key.
    pub expires_at: Option<At<DateTime<Utc>>>,
}

/// A webhook of a merchant.
#[derive(Debug, Clone)]
pub struct Webhook {
    /// The URL, parsed and normalised as registration does.
    pub url: At<WebhookUrl>,
    /// Its signing key, exactly this value.
    pub signing_key: At<Secret>,
}

#[cfg(test)]
mod tests;
