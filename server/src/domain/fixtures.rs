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
//! (1 to [`MAX_NAME`] characters) and e-mails without control characters, fees (not negative, at most two
//! decimals), e-mails, passwords (as `admin create-merchant` and sign-in take
//! them), the shape and environment of every key and signing key, webhook
//! URLs ([`WebhookUrl`]), courier names a merchant links to, and values the
//! file names twice. Whether a webhook's host may be used, and how the file
//! agrees with the database, is the application's business
//! (`app::fixtures`).

use std::collections::{HashMap, HashSet};

use rust_decimal::Decimal;
use serde::Deserialize;
use shipment_sdk::model::{WebhookUrl, WebhookUrlError};
use toml::Spanned;

use super::email;
use super::fee::to_minor_units;
use super::keys::{self, Environment, KeyKind, Secret};
use super::validation::no_control_characters;

/// Longest fixtures file, in bytes (1 MiB): a file is read up to this and
/// refused past it, never read whole first.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;
/// Longest courier, driver or merchant name (as the courier routes take).
pub const MAX_NAME: usize = 500;
/// Shortest password (as `admin create-merchant` takes it).
pub const MIN_PASSWORD: usize = 8;
/// Longest e-mail or password (as sign-in looks at it).
pub const MAX_CREDENTIAL: usize = 256;
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
    /// API keys, exactly these values.
    pub api_keys: Vec<At<Secret>>,
    /// Names of courier companies of this file to link, each once.
    pub couriers: Vec<At<String>>,
    /// The shipment signing key, if the file gives one.
    pub shipment_signing_key: Option<At<Secret>>,
    /// Webhooks, matched by URL.
    pub webhooks: Vec<Webhook>,
}

/// A webhook of a merchant.
#[derive(Debug, Clone)]
pub struct Webhook {
    /// The URL, parsed and normalised as registration does.
    pub url: At<WebhookUrl>,
    /// Its signing key, exactly this value.
    pub signing_key: At<Secret>,
}

// The file as written. Every field is spanned, for the line of a message.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    #[serde(default)]
    couriers: Vec<CourierRepr>,
    #[serde(default)]
    merchants: Vec<MerchantRepr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CourierRepr {
    name: Spanned<String>,
    base_fee: Option<Spanned<Decimal>>,
    per_kg: Option<Spanned<Decimal>>,
    per_km: Option<Spanned<Decimal>>,
    #[serde(default)]
    keys: Vec<Spanned<Secret>>,
    #[serde(default)]
    drivers: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MerchantRepr {
    name: Spanned<String>,
    email: Spanned<String>,
    password: Spanned<Secret>,
    #[serde(default)]
    api_keys: Vec<Spanned<Secret>>,
    #[serde(default)]
    couriers: Vec<Spanned<String>>,
    shipment_signing_key: Option<Spanned<Secret>>,
    #[serde(default)]
    webhooks: Vec<WebhookRepr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookRepr {
    url: Spanned<String>,
    signing_key: Spanned<Secret>,
}

/// Reads and checks a fixtures file for a server of `env`. Every problem
/// found is returned (malformed TOML stops at the first), in file order.
pub fn parse(text: &str, env: Environment) -> Result<Fixtures, Vec<Problem>> {
    let lines = Lines::new(text);
    let file: FileRepr = toml::from_str(text).map_err(|e| {
        vec![Problem {
            line: e.span().map_or(1, |s| lines.of(s.start)),
            detail: describe(e),
        }]
    })?;
    let mut check = Check {
        lines,
        env,
        problems: Vec::new(),
        keys_seen: HashSet::new(),
    };
    let couriers: Vec<Courier> = file
        .couriers
        .into_iter()
        .map(|c| check.courier(c))
        .collect();
    let mut courier_names = HashMap::new();
    for c in &couriers {
        if let Some(first) = courier_names.insert(c.name.value.clone(), c.name.line) {
            check.problem(
                c.name.line,
                format!("the courier company of line {first} has this name already"),
            );
        }
    }
    let mut emails = HashMap::new();
    let merchants: Vec<Merchant> = file
        .merchants
        .into_iter()
        .map(|m| check.merchant(m, &courier_names))
        .collect();
    for m in &merchants {
        if let Some(first) = emails.insert(m.email.value.clone(), m.email.line) {
            check.problem(
                m.email.line,
                format!("this e-mail is the merchant's of line {first} already"),
            );
        }
    }
    if check.problems.is_empty() {
        Ok(Fixtures {
            couriers,
            merchants,
        })
    } else {
        check.problems.sort_by_key(|p| p.line);
        Err(check.problems)
    }
}

/// Byte offsets to line numbers.
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { starts }
    }

    /// The line (from 1) of byte `offset`.
    fn of(&self, offset: usize) -> usize {
        self.starts.partition_point(|start| *start <= offset).max(1)
    }
}

/// What the checks have found so far.
struct Check {
    lines: Lines,
    env: Environment,
    problems: Vec<Problem>,
    /// Every API and courier key of the file, by digest.
    keys_seen: HashSet<String>,
}

impl Check {
    fn problem(&mut self, line: usize, detail: impl Into<String>) {
        self.problems.push(Problem {
            line,
            detail: detail.into(),
        });
    }

    fn at<T>(&self, spanned: Spanned<T>) -> At<T> {
        At {
            line: self.lines.of(spanned.span().start),
            value: spanned.into_inner(),
        }
    }

    /// A name: trimmed, 1 to [`MAX_NAME`] characters, no control
    /// characters (as the API takes names).
    fn name(&mut self, field: &str, raw: Spanned<String>) -> At<String> {
        let at = self.at(raw);
        let value = at.value.trim().to_owned();
        if let Err(e) = no_control_characters(field, &at.value) {
            self.problem(at.line, e.detail);
        } else if value.is_empty() || value.chars().count() > MAX_NAME {
            self.problem(
                at.line,
                format!("`{field}` must be 1 to {MAX_NAME} characters"),
            );
        }
        At {
            line: at.line,
            value,
        }
    }

    fn courier(&mut self, c: CourierRepr) -> Courier {
        let name = self.name("name", c.name);
        let fees = [
            ("base_fee", c.base_fee, DEFAULT_FEES[0]),
            ("per_kg", c.per_kg, DEFAULT_FEES[1]),
            ("per_km", c.per_km, DEFAULT_FEES[2]),
        ]
        .map(|(field, given, default)| match given {
            None => At {
                line: name.line,
                value: default,
            },
            Some(amount) => self.fee(field, amount),
        });
        let keys = c
            .keys
            .into_iter()
            .map(|k| self.key("keys", KeyKind::Courier, k))
            .collect();
        let mut seen = HashSet::new();
        let mut drivers = Vec::new();
        for raw in c.drivers {
            let driver = self.name("drivers", raw);
            if !seen.insert(driver.value.clone()) {
                self.problem(
                    driver.line,
                    "this driver is named twice for the company (drivers are matched by name)",
                );
            }
            drivers.push(driver);
        }
        Courier {
            name,
            fees,
            keys,
            drivers,
        }
    }

    fn fee(&mut self, field: &str, amount: Spanned<Decimal>) -> At<i64> {
        let at = self.at(amount);
        let minor = if at.value.is_sign_negative() {
            None
        } else {
            to_minor_units(at.value)
        };
        let value = minor.unwrap_or_else(|| {
            self.problem(
                at.line,
                format!("`{field}` must be an amount of at least 0 with at most two decimals"),
            );
            0
        });
        At {
            line: at.line,
            value,
        }
    }

    /// An API or courier key: its shape, its kind, this server's
    /// environment, and once in the file. Messages name the prefix only.
    fn key(&mut self, field: &str, kind: KeyKind, raw: Spanned<Secret>) -> At<Secret> {
        let at = self.at(raw);
        let line = at.line;
        let expected = kind.prefix(self.env);
        match keys::shape(at.value.expose()) {
            None => self.problem(
                line,
                format!(
                    "`{field}`: not a key: `{expected}` and {} letters and digits expected",
                    keys::SECRET_LEN
                ),
            ),
            Some(shape) if shape.kind != kind => {
                let (other, here) = match kind {
                    KeyKind::Merchant => ("a courier key (`ck_`)", "merchants' API keys"),
                    KeyKind::Courier => ("a merchant API key (`sk_`)", "courier keys"),
                };
                self.problem(line, format!("`{field}`: {other} is not one of the {here}"));
            }
            Some(shape) if shape.environment != self.env => self.problem(
                line,
                format!(
                    "`{field}`: a `{}` key is of the other environment; this server ({}) takes \
                     `{expected}` keys",
                    kind.prefix(shape.environment),
                    environment_name(self.env),
                ),
            ),
            Some(_) => {
                if !self.keys_seen.insert(keys::digest(at.value.expose())) {
                    self.problem(line, format!("`{field}`: this key is in the file twice"));
                }
            }
        }
        at
    }

    fn signing_key(&mut self, field: &str, raw: Spanned<Secret>) -> At<Secret> {
        let at = self.at(raw);
        if !keys::is_signing_key(at.value.expose()) {
            self.problem(
                at.line,
                format!(
                    "`{field}`: not a signing key: `{}` and {} letters and digits expected",
                    keys::SIGNING_KEY_PREFIX,
                    keys::SECRET_LEN
                ),
            );
        }
        at
    }

    fn merchant(&mut self, m: MerchantRepr, courier_names: &HashMap<String, usize>) -> Merchant {
        let name = self.name("name", m.name);
        let raw_email = self.at(m.email);
        let email = At {
            line: raw_email.line,
            value: email::normalize(&raw_email.value),
        };
        if let Err(e) = no_control_characters("email", &raw_email.value) {
            self.problem(email.line, e.detail);
        } else if !email.value.contains('@') || email.value.chars().count() > MAX_CREDENTIAL {
            self.problem(
                email.line,
                format!("`email` must be an e-mail address of at most {MAX_CREDENTIAL} characters"),
            );
        }
        let password = self.at(m.password);
        let length = password.value.expose().chars().count();
        if !(MIN_PASSWORD..=MAX_CREDENTIAL).contains(&length) {
            self.problem(
                password.line,
                format!("`password` must be {MIN_PASSWORD} to {MAX_CREDENTIAL} characters"),
            );
        }
        let api_keys = m
            .api_keys
            .into_iter()
            .map(|k| self.key("api_keys", KeyKind::Merchant, k))
            .collect();
        let mut linked = HashSet::new();
        let mut couriers = Vec::new();
        for raw in m.couriers {
            let courier = self.at(raw);
            if !courier_names.contains_key(courier.value.trim()) {
                self.problem(
                    courier.line,
                    "`couriers`: no `[[couriers]]` of this file has this name",
                );
            } else if linked.insert(courier.value.trim().to_owned()) {
                couriers.push(At {
                    line: courier.line,
                    value: courier.value.trim().to_owned(),
                });
            }
        }
        let shipment_signing_key = m
            .shipment_signing_key
            .map(|k| self.signing_key("shipment_signing_key", k));
        let mut urls = HashMap::new();
        let mut webhooks = Vec::new();
        for w in m.webhooks {
            let raw_url = self.at(w.url);
            let signing_key = self.signing_key("signing_key", w.signing_key);
            match WebhookUrl::parse(&raw_url.value) {
                Ok(url) => {
                    if let Some(first) = urls.insert(url.as_str().to_owned(), raw_url.line) {
                        self.problem(
                            raw_url.line,
                            format!("`url`: the webhook of line {first} has this URL already"),
                        );
                    }
                    webhooks.push(Webhook {
                        url: At {
                            line: raw_url.line,
                            value: url,
                        },
                        signing_key,
                    });
                }
                Err(e) => self.problem(
                    raw_url.line,
                    format!("`url` cannot be used: {}", url_problem(&e)),
                ),
            }
        }
        Merchant {
            name,
            email,
            password,
            api_keys,
            couriers,
            shipment_signing_key,
            webhooks,
        }
    }
}

/// Why a URL of the file is not a [`WebhookUrl`], as registration says it
/// but without the parts of the URL some reasons quote (its scheme, its
/// host or a label of it): a key pasted into `url` is not shown either.
fn url_problem(e: &WebhookUrlError) -> String {
    match e {
        WebhookUrlError::NotHttps { .. } => {
            "its scheme is not `https`; webhooks are delivered over `https` only".to_owned()
        }
        WebhookUrlError::InvalidHostName { .. } => "its host is not a valid host name: its labels \
             must be letters, digits and hyphens, not empty and not starting or ending with a \
             hyphen"
            .to_owned(),
        WebhookUrlError::LabelTooLong { label } => format!(
            "a label of its host name is {} characters long; at most {} are allowed",
            label.len(),
            WebhookUrl::MAX_LABEL_LEN
        ),
        other => other.to_string(),
    }
}

fn environment_name(env: Environment) -> &'static str {
    match env {
        Environment::Staging => "staging",
        Environment::Production => "production",
    }
}

/// What the TOML reader says about `e`, with nothing of the file in it
/// but the names of fields: the message, rebuilt from its known forms
/// ([`without_values`]), after the path of the field it is about, when the
/// reader names one (`` `merchants.api_keys`: invalid type: … ``).
fn describe(e: toml::de::Error) -> String {
    let detail = without_values(e.message());
    match field_path(e) {
        Some(path) => format!("`{path}`: {detail}"),
        None => detail,
    }
}

/// The dotted path of the field a reader's error is about. The reader
/// only shows it after its message (`in `merchants.api_keys``); it is
/// taken only when every part of it is a plain field name.
fn field_path(mut e: toml::de::Error) -> Option<String> {
    // Without the input, the reader shows no line of the file, only the
    // message and the path.
    e.set_input(None);
    let shown = e.to_string();
    let path = shown
        .strip_prefix(e.message())?
        .trim()
        .strip_prefix("in `")?
        .strip_suffix('`')?;
    path.split('.').all(is_field_name).then(|| path.to_owned())
}

/// A name a person would give a field (`api_keys`, `colour`): at most 24
/// letters, digits, `_` and `-`. A key, signing key or password pasted
/// where a field name goes is longer, or has other characters, and is not
/// shown.
fn is_field_name(name: &str) -> bool {
    (1..=24).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A reader's message without any value of the file. serde quotes the
/// value it did not expect (``integer `8` ``, `string "…"` with the
/// string's own quotes escaped, so no scan for the closing quote can be
/// trusted) and the name of an unknown field; those forms are rebuilt
/// from their parts that come from this program (the kind of value, what
/// was expected, a field name that passes [`is_field_name`]). Every other
/// message is the reader's own wording of a syntax error, which quotes
/// nothing of the file.
fn without_values(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            // What was expected comes last and from this program's types,
            // so the last `, expected ` is serde's own, whatever the value.
            let (unexpected, expected) = split_expected(rest);
            return format!("{prefix}{}{expected}", kind_of(unexpected));
        }
    }
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (field, expected) = match rest.rfind(", there are no fields") {
            Some(at) => rest.split_at(at),
            None => split_expected(rest),
        };
        let field = field.strip_suffix('`').unwrap_or(field);
        return if is_field_name(field) {
            format!("unknown field `{field}`{expected}")
        } else {
            format!("an unknown field (its name is not shown){expected}")
        };
    }
    if message.starts_with("unknown variant `") {
        return format!("unknown variant{}", split_expected(message).1);
    }
    message.trim_end().to_owned()
}

/// `(before, ", expected …")` at the last `, expected `; `(all, "")`
/// without one.
fn split_expected(message: &str) -> (&str, &str) {
    match message.rfind(", expected ") {
        Some(at) => message.split_at(at),
        None => (message, ""),
    }
}

/// The kind of value serde names (`string "…"` is a `string`), without the
/// value; `a value` for anything else.
fn kind_of(unexpected: &str) -> &'static str {
    const KINDS: [&str; 16] = [
        "boolean",
        "integer",
        "floating point",
        "character",
        "string",
        "byte array",
        "unit value",
        "Option value",
        "newtype struct",
        "sequence",
        "map",
        "enum",
        "unit variant",
        "newtype variant",
        "tuple variant",
        "struct variant",
    ];
    KINDS
        .into_iter()
        .find(|kind| {
            unexpected == *kind
                || unexpected
                    .strip_prefix(kind)
                    .is_some_and(|rest| rest.starts_with(" `") || rest.starts_with(" \""))
        })
        .unwrap_or("a value")
}

#[cfg(test)]
mod tests;
