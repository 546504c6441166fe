//! [`Fixtures`]: the accounts a [`TestServer`](crate::TestServer) starts
//! with, built in code, written as the server's fixtures file (the format
//! `shipment-server serve --fixtures FILE` reads, documented in the README).

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use shipment_server::domain::keys::{self, Environment, KeyKind};

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
pub struct Fixtures {
    #[serde(default)]
    couriers: Vec<CourierFixture>,
    #[serde(default)]
    merchants: Vec<MerchantFixture>,
}

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
        }
    }

    /// Adds a courier company.
    pub fn courier(mut self, courier: CourierFixture) -> Fixtures {
        self.couriers.push(courier);
        self
    }

    /// Adds a merchant.
    pub fn merchant(mut self, merchant: MerchantFixture) -> Fixtures {
        self.merchants.push(merchant);
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

    /// The fixtures file.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("fixtures serialize")
    }

    /// Fixtures from a fixtures file's text (the format
    /// `shipment-server serve --fixtures` reads), such as the one a CI job
    /// already uses; the server checks it in full when it starts.
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
    /// ```
    pub fn from_toml(text: &str) -> Result<Fixtures, toml::de::Error> {
        toml::from_str(text)
    }
}

/// A courier company: its name, fees, keys and drivers.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
pub struct MerchantFixture {
    name: String,
    email: String,
    password: String,
    #[serde(default)]
    api_keys: Vec<String>,
    #[serde(default)]
    couriers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shipment_signing_key: Option<String>,
    #[serde(default)]
    webhooks: Vec<WebhookFixture>,
}

/// A webhook of a merchant, registered with a known signing key.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
            password: keys::random_token("pw_").expose().to_owned(),
            api_keys: vec![new_key(KeyKind::Merchant)],
            couriers: Vec::new(),
            shipment_signing_key: None,
            webhooks: Vec::new(),
        }
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
        self.api_keys = keys.into_iter().map(Into::into).collect();
        self
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
        &self.api_keys
    }
}

/// A new staging key of `kind`.
fn new_key(kind: KeyKind) -> String {
    keys::generate(kind, Environment::Staging)
        .expose()
        .to_owned()
}

/// A new webhook signing key, `whsec_` + 32 base62, for
/// [`MerchantFixture::webhook`] and
/// [`MerchantFixture::shipment_signing_key`].
pub fn new_signing_key() -> String {
    keys::random_token("whsec_").expose().to_owned()
}
