//! [`Fixtures`]: the accounts a [`TestServer`](crate::TestServer) starts
//! with, built in code or read from a fixtures file, and handed to the
//! server as that file (the format `shipment-server serve --fixtures FILE`
//! reads, documented in the book's "Use it in CI" chapter,
//! `docs/src/ci.md`).
//!
//! A file is checked by the server's own reader when it is read (unknown
//! fields, keys, names: everything the server checks before touching a
//! database) and handed to the server exactly as written, so every message
//! names the merchant's file and its lines; fixtures built in code are
//! named "fixtures built in code", with the lines of [`Fixtures::to_toml`].

use std::fmt;
use std::path::Path;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use shipment_sdk::chrono::{DateTime, Utc};
use shipment_sdk::model::Permissions;
use shipment_server::Environment;
use shipment_server::FixtureError;
use shipment_server::harness::fixtures as checked;
use shipment_server::harness::{KeyKind, generate_key, random_token};

/// The courier company of [`Fixtures::default`].
pub const DEFAULT_COURIER: &str = "Swift Couriers";
/// The merchant's dashboard password in [`Fixtures::default`].
pub const DEFAULT_PASSWORD: &str = "correct horse battery staple";

/// Couriers and merchants to create at start.
///
/// The default is one merchant, "Test Shop" (`shop@example.test`, password
/// [`DEFAULT_PASSWORD`], one staging API key), linked to one courier
/// company, [`DEFAULT_COURIER`] (5.00 + 1.50/kg + 0.10/km, one key, the
/// driver "Ada").
///
/// ```
/// use shipment_testkit::{CourierFixture, Fixtures, MerchantFixture};
/// let fixtures = Fixtures::empty()
///     .courier(CourierFixture::new("Swift Couriers").fees("5.0", "1.5", "0.1").driver("Dana"))
///     .merchant(
///         MerchantFixture::new("Acme", "dev@acme.test")
///             .password("correct horse battery staple")
///             .courier("Swift Couriers"),
///     );
/// let toml = fixtures.to_toml();
/// assert!(toml.contains("name = \"Acme\""));
/// assert!(toml.contains("sk_test_")); // a key was made for the merchant
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixtures {
    #[serde(default)]
    couriers: Vec<CourierFixture>,
    #[serde(default)]
    merchants: Vec<MerchantFixture>,
    /// Where they came from; the server is given that text as it was.
    #[serde(skip)]
    source: Source,
}

/// Where [`Fixtures`] came from, for what the server reads and for the
/// name its messages give.
#[derive(Clone, Default)]
enum Source {
    /// Built (or changed) in code: the server reads [`Fixtures::to_toml`].
    #[default]
    Code,
    /// Read from a file or a text: the server reads `text` as it was.
    Text {
        /// The file, or what stands for it in messages.
        name: String,
        /// The text, unchanged.
        text: String,
    },
}

// The text holds keys and passwords: only its name is shown.
impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Code => f.write_str("Code"),
            Source::Text { name, .. } => f.debug_struct("Text").field("name", name).finish(),
        }
    }
}

/// What messages about fixtures built in code call them.
pub const BUILT_IN_CODE: &str = "fixtures built in code";
/// What messages about [`Fixtures::from_toml`]'s text call it.
pub const TOML_TEXT: &str = "fixtures text given to Fixtures::from_toml";

impl Default for Fixtures {
    fn default() -> Self {
        Fixtures::empty()
            .courier(CourierFixture::new(DEFAULT_COURIER).driver("Ada"))
            .merchant(
                MerchantFixture::new("Test Shop", "shop@example.test")
                    .password(DEFAULT_PASSWORD)
                    .courier(DEFAULT_COURIER),
            )
    }
}

impl Fixtures {
    /// No couriers, no merchants.
    pub fn empty() -> Fixtures {
        Fixtures {
            couriers: Vec::new(),
            merchants: Vec::new(),
            source: Source::Code,
        }
    }

    /// Adds a courier company. Fixtures read from a file become fixtures
    /// built in code: the server then reads [`Fixtures::to_toml`], and its
    /// messages name "fixtures built in code" and the lines of that text.
    pub fn courier(mut self, courier: CourierFixture) -> Fixtures {
        self.couriers.push(courier);
        self.source = Source::Code;
        self
    }

    /// Adds a merchant (as [`Fixtures::courier`], fixtures read from a
    /// file become fixtures built in code).
    pub fn merchant(mut self, merchant: MerchantFixture) -> Fixtures {
        self.merchants.push(merchant);
        self.source = Source::Code;
        self
    }

    /// The merchants, in the order added.
    pub fn merchants(&self) -> &[MerchantFixture] {
        &self.merchants
    }

    /// The courier companies, in the order added.
    pub fn couriers(&self) -> &[CourierFixture] {
        &self.couriers
    }

    /// The fixtures file the server reads: the text read, exactly, for
    /// fixtures from [`Fixtures::from_file`] or [`Fixtures::from_toml`];
    /// otherwise written from the values built in code.
    pub fn to_toml(&self) -> String {
        match &self.source {
            Source::Text { text, .. } => text.clone(),
            Source::Code => toml::to_string(self).expect("fixtures serialize"),
        }
    }

    /// What the server's messages about these fixtures call them: the
    /// file they were read from, [`TOML_TEXT`], or [`BUILT_IN_CODE`].
    pub fn source_name(&self) -> &str {
        match &self.source {
            Source::Text { name, .. } => name,
            Source::Code => BUILT_IN_CODE,
        }
    }

    /// Fixtures from a fixtures file's text (the format
    /// `shipment-server serve --fixtures` reads), such as the one a CI job
    /// already uses. It is checked at once as the server checks a file
    /// (on a staging server: [`TestServer`](crate::TestServer) is one),
    /// and refused as the server refuses it: an unknown field (a typo such
    /// as `api_key` for `api_keys`), a missing one, a malformed key, each
    /// named by its line, never by its value. Messages call the text
    /// [`TOML_TEXT`]; [`Fixtures::from_file`] names the file.
    ///
    /// ```
    /// use shipment_testkit::Fixtures;
    /// let fixtures = Fixtures::from_toml(r#"
    ///     [[merchants]]
    ///     name = "Acme"
    ///     email = "dev@acme.test"
    ///     password = "correct horse battery staple"
    ///     api_keys = ["sk_test_0123456789abcdefghijABCDEFGHIJ01"]
    /// "#).unwrap();
    /// assert_eq!(fixtures.merchants()[0].email(), "dev@acme.test");
    ///
    /// let typo = Fixtures::from_toml(r#"
    ///     [[merchants]]
    ///     name = "Acme"
    ///     email = "dev@acme.test"
    ///     password = "correct horse battery staple"
    ///     api_key = ["sk_test_0123456789abcdefghijABCDEFGHIJ01"]
    /// "#).unwrap_err();
    /// assert_eq!(typo.lines(), [6]);
    /// assert!(typo.to_string().contains("unknown field `api_key`"));
    /// ```
    ///
    /// # Errors
    ///
    /// [`FixtureError::Invalid`], with every problem the server would
    /// report before touching its database.
    pub fn from_toml(text: &str) -> Result<Fixtures, FixtureError> {
        Fixtures::read(TOML_TEXT, text)
    }

    /// Fixtures from the fixtures file at `path` (such as the `ci.toml`
    /// of a CI job), read as the server reads it (at most 1 MiB) and
    /// checked as [`Fixtures::from_toml`] checks a text; every message,
    /// now or when the server starts, names `path` and its lines.
    ///
    /// ```no_run
    /// let fixtures = shipment_testkit::Fixtures::from_file("ci.toml").unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// [`FixtureError::Read`] or [`FixtureError::TooLarge`] when the file
    /// cannot be read; [`FixtureError::Invalid`] as
    /// [`Fixtures::from_toml`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Fixtures, FixtureError> {
        let path = path.as_ref();
        let text = shipment_server::read_fixtures_file(path)?;
        Fixtures::read(&path.display().to_string(), &text)
    }

    /// Checks `text` (named `name`) as the server does, then reads it into
    /// the kit's own types for the accessors.
    fn read(name: &str, text: &str) -> Result<Fixtures, FixtureError> {
        let invalid = |problems| FixtureError::Invalid {
            file: name.to_owned(),
            problems,
        };
        checked::parse(text, Environment::Staging).map_err(invalid)?;
        // The server's reader accepted it, so the kit's types (the same
        // fields, unknown ones refused too) read it; if they ever do not,
        // say so without quoting the reader, whose messages show values.
        let mut fixtures: Fixtures = toml::from_str(text).map_err(|e| {
            invalid(vec![checked::Problem {
                line: e.span().map_or(1, |s| {
                    let before = &text.as_bytes()[..s.start.min(text.len())];
                    before.iter().filter(|b| **b == b'\n').count() + 1
                }),
                detail: "the server reads this, but the test kit cannot: a bug of the kit"
                    .to_owned(),
            }])
        })?;
        fixtures.source = Source::Text {
            name: name.to_owned(),
            text: text.to_owned(),
        };
        Ok(fixtures)
    }
}

/// A courier company: its name, fees, keys and drivers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CourierFixture {
    name: String,
    // Absent: the server's defaults.
    #[serde(
        default,
        with = "rust_decimal::serde::float_option",
        skip_serializing_if = "Option::is_none"
    )]
    base_fee: Option<Decimal>,
    #[serde(
        default,
        with = "rust_decimal::serde::float_option",
        skip_serializing_if = "Option::is_none"
    )]
    per_kg: Option<Decimal>,
    #[serde(
        default,
        with = "rust_decimal::serde::float_option",
        skip_serializing_if = "Option::is_none"
    )]
    per_km: Option<Decimal>,
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    drivers: Vec<String>,
}

impl CourierFixture {
    /// A company named `name` (5.00 + 1.50/kg + 0.10/km), with one new
    /// staging courier key and no drivers.
    pub fn new(name: impl Into<String>) -> CourierFixture {
        CourierFixture {
            name: name.into(),
            base_fee: Some(Decimal::new(500, 2)),
            per_kg: Some(Decimal::new(150, 2)),
            per_km: Some(Decimal::new(10, 2)),
            keys: vec![new_key(KeyKind::Courier)],
            drivers: Vec::new(),
        }
    }

    /// Its fees: fixed, per kilogram, per kilometre (decimal text, e.g.
    /// `"5.0"`).
    ///
    /// # Panics
    ///
    /// When one is not a decimal number.
    pub fn fees(mut self, base_fee: &str, per_kg: &str, per_km: &str) -> CourierFixture {
        let fee = |s: &str| s.parse::<Decimal>().expect("a decimal fee");
        self.base_fee = Some(fee(base_fee));
        self.per_kg = Some(fee(per_kg));
        self.per_km = Some(fee(per_km));
        self
    }

    /// Adds a driver.
    pub fn driver(mut self, name: impl Into<String>) -> CourierFixture {
        self.drivers.push(name.into());
        self
    }

    /// Uses exactly these courier keys (`ck_test_` + 32 base62) instead of
    /// the generated one.
    pub fn keys<I: IntoIterator<Item = S>, S: Into<String>>(mut self, keys: I) -> CourierFixture {
        self.keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its courier keys.
    pub fn key_values(&self) -> &[String] {
        &self.keys
    }
}

/// A merchant: its sign-in, API keys, linked couriers, signing keys and
/// webhooks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "MerchantEntry", into = "MerchantEntry")]
pub struct MerchantFixture {
    name: String,
    email: String,
    password: String,
    api_keys: Vec<ApiKeyFixture>,
    /// The keys of `api_keys`, kept beside them for
    /// [`MerchantFixture::api_key_values`].
    key_values: Vec<String>,
    couriers: Vec<String>,
    shipment_signing_key: Option<String>,
    webhooks: Vec<WebhookFixture>,
}

/// A merchant as the fixtures file writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MerchantEntry {
    name: String,
    email: String,
    password: String,
    #[serde(default)]
    api_keys: Vec<ApiKeyFixture>,
    #[serde(default)]
    couriers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shipment_signing_key: Option<String>,
    #[serde(default)]
    webhooks: Vec<WebhookFixture>,
}

impl From<MerchantEntry> for MerchantFixture {
    fn from(m: MerchantEntry) -> MerchantFixture {
        MerchantFixture {
            key_values: m.api_keys.iter().map(|k| k.key.clone()).collect(),
            name: m.name,
            email: m.email,
            password: m.password,
            api_keys: m.api_keys,
            couriers: m.couriers,
            shipment_signing_key: m.shipment_signing_key,
            webhooks: m.webhooks,
        }
    }
}

impl From<MerchantFixture> for MerchantEntry {
    fn from(m: MerchantFixture) -> MerchantEntry {
        MerchantEntry {
            name: m.name,
            email: m.email,
            password: m.password,
            api_keys: m.api_keys,
            couriers: m.couriers,
            shipment_signing_key: m.shipment_signing_key,
            webhooks: m.webhooks,
        }
    }
}

/// An API key of a [`MerchantFixture`]: a full key (`sk_test_`), or a
/// restricted one (`rk_test_`) with the permissions it has, either of them
/// with an expiry. In the fixtures file a key without permissions or
/// expiry is its string, as before; any other is a table:
///
/// ```toml
/// api_keys = [
///     "sk_test_0123456789abcdefghijABCDEFGHIJ01",
///     { key = "rk_test_0123456789abcdefghijABCDEFGHIJ02", permissions = { shipments = "read", couriers = "read" } },
///     { key = "sk_test_0123456789abcdefghijABCDEFGHIJ03", expires_in = "30d" },
/// ]
/// ```
///
/// ```
/// use shipment_sdk::model::Permissions;
/// use shipment_testkit::{ApiKeyFixture, MerchantFixture};
/// let merchant = MerchantFixture::new("Acme", "dev@acme.test")
///     .api_key(ApiKeyFixture::restricted(Permissions::read_only()))
///     .api_key(ApiKeyFixture::full().expires_in("30d"));
/// let keys = merchant.api_key_values();
/// assert!(keys[0].starts_with("sk_test_")); // the one `new` made
/// assert!(keys[1].starts_with("rk_test_"));
/// assert!(keys[2].starts_with("sk_test_"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKeyFixture {
    key: String,
    permissions: Option<Permissions>,
    expires_at: Option<DateTime<Utc>>,
    expires_in: Option<String>,
}

/// An entry of `api_keys` as written: the key alone, or a table.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum KeyEntry {
    Plain(String),
    Table(KeyTable),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyTable {
    key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    permissions: Option<Permissions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_in: Option<String>,
}

impl Serialize for ApiKeyFixture {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.permissions.is_none() && self.expires_at.is_none() && self.expires_in.is_none() {
            return KeyEntry::Plain(self.key.clone()).serialize(serializer);
        }
        KeyEntry::Table(KeyTable {
            key: self.key.clone(),
            permissions: self.permissions,
            expires_at: self.expires_at,
            expires_in: self.expires_in.clone(),
        })
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ApiKeyFixture {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match KeyEntry::deserialize(deserializer)? {
            KeyEntry::Plain(key) => ApiKeyFixture::with_key(key),
            KeyEntry::Table(t) => ApiKeyFixture {
                key: t.key,
                permissions: t.permissions,
                expires_at: t.expires_at,
                expires_in: t.expires_in,
            },
        })
    }
}

impl ApiKeyFixture {
    /// A new full staging key (`sk_test_` + 32 base62).
    pub fn full() -> ApiKeyFixture {
        ApiKeyFixture::with_key(new_key(KeyKind::Merchant))
    }

    /// A new restricted staging key (`rk_test_` + 32 base62) with
    /// `permissions` ([`Permissions::read_only`] for support staff).
    pub fn restricted(permissions: Permissions) -> ApiKeyFixture {
        ApiKeyFixture {
            permissions: Some(permissions),
            ..ApiKeyFixture::with_key(new_key(KeyKind::Restricted))
        }
    }

    /// Exactly this key: `sk_test_` (full) or `rk_test_` (then give it
    /// [`permissions`](Self::permissions)) + 32 base62, so a test's
    /// configuration can name it.
    pub fn with_key(key: impl Into<String>) -> ApiKeyFixture {
        ApiKeyFixture {
            key: key.into(),
            permissions: None,
            expires_at: None,
            expires_in: None,
        }
    }

    /// What a restricted key may do (resources left out: `none`).
    pub fn permissions(mut self, permissions: Permissions) -> ApiKeyFixture {
        self.permissions = Some(permissions);
        self
    }

    /// The key stops working at `at`: at most 366 days after the server
    /// starts; a time already past makes a key that starts expired, for a
    /// test of what an expired key is answered.
    pub fn expires_at(mut self, at: DateTime<Utc>) -> ApiKeyFixture {
        self.expires_at = Some(at);
        self.expires_in = None;
        self
    }

    /// The key stops working this long after the server starts: `90m`,
    /// `12h`, `30d`, `4w` (the server checks it, as in a file).
    pub fn expires_in(mut self, lifetime: impl Into<String>) -> ApiKeyFixture {
        self.expires_in = Some(lifetime.into());
        self.expires_at = None;
        self
    }

    /// The key itself.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// A restricted key's permissions; `None` for a full key.
    pub fn permissions_value(&self) -> Option<&Permissions> {
        self.permissions.as_ref()
    }
}

/// A webhook of a merchant, registered with a known signing key.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookFixture {
    url: String,
    signing_key: String,
}

impl MerchantFixture {
    /// A merchant with one new staging API key, a random password, no
    /// couriers and no webhooks.
    pub fn new(name: impl Into<String>, email: impl Into<String>) -> MerchantFixture {
        MerchantFixture {
            name: name.into(),
            email: email.into(),
            password: random_token("pw_").expose().to_owned(),
            api_keys: Vec::new(),
            key_values: Vec::new(),
            couriers: Vec::new(),
            shipment_signing_key: None,
            webhooks: Vec::new(),
        }
        .api_key(ApiKeyFixture::full())
    }

    /// Its dashboard password.
    pub fn password(mut self, password: impl Into<String>) -> MerchantFixture {
        self.password = password.into();
        self
    }

    /// Links the courier company named `name` (one of the fixtures').
    pub fn courier(mut self, name: impl Into<String>) -> MerchantFixture {
        self.couriers.push(name.into());
        self
    }

    /// Uses exactly these API keys (`sk_test_` + 32 base62) instead of the
    /// generated one.
    pub fn api_keys<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        keys: I,
    ) -> MerchantFixture {
        self.api_keys = keys.into_iter().map(ApiKeyFixture::with_key).collect();
        self.key_values = self.api_keys.iter().map(|k| k.key.clone()).collect();
        self
    }

    /// Adds an API key: a restricted or expiring one
    /// ([`ApiKeyFixture::restricted`], [`ApiKeyFixture::expires_in`]), after
    /// those it has.
    pub fn api_key(mut self, key: ApiKeyFixture) -> MerchantFixture {
        self.key_values.push(key.key.clone());
        self.api_keys.push(key);
        self
    }

    /// Adds a new restricted key with `permissions`: shorthand for
    /// `.api_key(ApiKeyFixture::restricted(permissions))`.
    pub fn restricted_key(self, permissions: Permissions) -> MerchantFixture {
        self.api_key(ApiKeyFixture::restricted(permissions))
    }

    /// Its API keys with their permissions and expiry.
    pub fn api_key_fixtures(&self) -> &[ApiKeyFixture] {
        &self.api_keys
    }

    /// Its shipment signing key (`whsec_` + 32 base62), for deliveries to
    /// shipments' own `webhook_url`.
    pub fn shipment_signing_key(mut self, key: impl Into<String>) -> MerchantFixture {
        self.shipment_signing_key = Some(key.into());
        self
    }

    /// Registers a webhook at `url` signed with `signing_key`.
    pub fn webhook(mut self, url: impl Into<String>, signing_key: impl Into<String>) -> Self {
        self.webhooks.push(WebhookFixture {
            url: url.into(),
            signing_key: signing_key.into(),
        });
        self
    }

    /// Its e-mail.
    pub fn email(&self) -> &str {
        &self.email
    }

    /// Its dashboard password.
    pub fn password_value(&self) -> &str {
        &self.password
    }

    /// Its API keys.
    pub fn api_key_values(&self) -> &[String] {
        &self.key_values
    }
}

/// A new staging key of `kind`.
fn new_key(kind: KeyKind) -> String {
    generate_key(kind, Environment::Staging).expose().to_owned()
}

/// A new webhook signing key, `whsec_` + 32 base62, for
/// [`MerchantFixture::webhook`] and
/// [`MerchantFixture::shipment_signing_key`].
pub fn new_signing_key() -> String {
    random_token("whsec_").expose().to_owned()
}
