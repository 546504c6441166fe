//! The API-key client: [`Client`], what finishes its
//! [`ClientBuilder`], and the [`Environment`] it talks to.

use std::fmt;

use reqwest::Url;

use crate::builder::{Builder, ClientBuilder};
use crate::error::{Error, Result};
use crate::keys::{KeyEnvironment, KeyKind, KeyPrefix};
use crate::model::CurrentKey;
use crate::resources::couriers::Couriers;
use crate::resources::shipments::Shipments;
use crate::transport::{Auth, Call, Transport, normalize_base_url};

/// Where the local reference server listens: the default staging address.
pub const STAGING_URL: &str = "http://127.0.0.1:8080/api/v1";

/// Which of the service's two environments to talk to.
///
/// Staging and production have separate addresses and separate keys:
/// `sk_test_` keys work on staging only and `sk_live_` keys on production
/// only. The operator supplies both addresses; staging defaults to the local
/// reference server ([`STAGING_URL`]) and production has no default.
///
/// ```
/// use shipment_sdk::Environment;
/// let prod = Environment::Production("https://shipments.example.com/api/v1".into());
/// assert_eq!(prod.base_url(), "https://shipments.example.com/api/v1");
/// assert_eq!(Environment::Staging.base_url(), shipment_sdk::STAGING_URL);
/// ```
///
/// `#[non_exhaustive]`: a `match` on it needs a `_` arm, so an environment
/// added later is not a breaking change.
///
/// Two types, on purpose: this one is where a client sends its requests,
/// so production carries the operator's address; [`KeyEnvironment`] is the
/// environment by name alone (what a key's prefix and a server's
/// `--environment` say), which [`Environment::key_environment`] gives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Environment {
    /// The test environment (`sk_test_` keys), by default the local
    /// reference server at [`STAGING_URL`].
    #[default]
    Staging,
    /// The live environment (`sk_live_` keys) at the address the operator
    /// gave you, e.g. `https://shipments.example.com/api/v1`.
    Production(String),
}

impl Environment {
    /// The environment's default base URL.
    pub fn base_url(&self) -> &str {
        match self {
            Environment::Staging => STAGING_URL,
            Environment::Production(url) => url,
        }
    }

    /// `"staging"` or `"production"`.
    pub fn name(&self) -> &'static str {
        self.key_environment().name()
    }

    /// The prefix of this environment's merchant API keys.
    pub fn key_prefix(&self) -> &'static str {
        KeyKind::Merchant.prefix(self.key_environment())
    }

    /// Which keys work here: the environment without its address.
    pub fn key_environment(&self) -> KeyEnvironment {
        match self {
            Environment::Staging => KeyEnvironment::Staging,
            Environment::Production(_) => KeyEnvironment::Production,
        }
    }
}

/// Refuses a key of the other environment (or not a merchant key at all)
/// before anything is sent. The key never appears in the error.
fn check_key(key: &str, environment: &Environment) -> Result<()> {
    let prefix = match KeyPrefix::parse(key) {
        Some((prefix, _)) if prefix.kind.is_merchant() => prefix,
        _ => {
            return Err(Error::Config(
                "the API key is not a merchant API key: it must start with sk_test_ or sk_live_ \
                 (or rk_test_ or rk_live_ for a restricted key)"
                    .into(),
            ));
        }
    };
    if prefix.environment != environment.key_environment() {
        let restricted = prefix.kind == KeyKind::Restricted;
        let (key_kind, expected) = match (prefix.environment, restricted) {
            (KeyEnvironment::Staging, false) => ("a test (sk_test_)", "Staging"),
            (KeyEnvironment::Staging, true) => ("a restricted test (rk_test_)", "Staging"),
            (KeyEnvironment::Production, false) => ("a live (sk_live_)", "Production(url)"),
            (KeyEnvironment::Production, true) => {
                ("a restricted live (rk_live_)", "Production(url)")
            }
        };
        return Err(Error::WrongEnvironment {
            key_kind,
            environment: environment.name(),
            expected,
        });
    }
    if key.len() == prefix.as_str().len() || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::Config(
            "the API key is malformed: a prefix followed by letters and digits".into(),
        ));
    }
    Ok(())
}

/// Production takes HTTPS only (a live key must not cross the network in
/// clear), except to the local machine.
pub(crate) fn check_production_url(url: &Url, environment: &Environment) -> Result<()> {
    if matches!(environment, Environment::Production(_)) && url.scheme() != "https" {
        let host = url.host_str().unwrap_or_default();
        let local = host == "localhost"
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if !local {
            return Err(Error::Config(format!(
                "production needs an https:// address, not `{url}`"
            )));
        }
    }
    Ok(())
}

/// Resolves the base URL from an explicit one or the environment.
pub(crate) fn resolve_base_url(base_url: Option<&str>, environment: &Environment) -> Result<Url> {
    if let Environment::Production(url) = environment
        && url.trim().is_empty()
        && base_url.is_none()
    {
        return Err(Error::Config(
            "production has no default address: give Environment::Production(url)".into(),
        ));
    }
    let url = normalize_base_url(base_url.unwrap_or(environment.base_url()))?;
    check_production_url(&url, environment)?;
    Ok(url)
}

/// A client of the merchant API, authenticated with an API key.
///
/// Cheap to clone (clones share one connection pool), and meant to be
/// built once and shared. Reach the endpoints through
/// [`shipments`](Client::shipments) and [`couriers`](Client::couriers).
///
/// ```no_run
/// # async fn run() -> shipment_sdk::Result<()> {
/// use shipment_sdk::Client;
/// let client = Client::builder().api_key("sk_test_...").build()?;
/// for courier in client.couriers().list().await? {
///     println!("{} {}", courier.id, courier.name);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) transport: Transport,
    environment: Environment,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("environment", &self.environment.name())
            .field("base_url", &self.transport.base_url())
            .field("api_key", &"[redacted]")
            .finish()
    }
}

impl Client {
    /// Starts configuring a client; only [`api_key`](ClientBuilder::api_key)
    /// is required.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use shipment_sdk::{Client, Environment};
    /// let client = Client::builder()
    ///     .api_key(std::env::var("SHIPMENT_API_KEY").unwrap())
    ///     .environment(Environment::Production("https://shipments.example.com/api/v1".into()))
    ///     .timeout(Duration::from_secs(10))
    ///     .max_retries(5)
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Shipments: create, list, fetch, cancel, rate, confirmation codes.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let shipment = client.shipments().get("SHP-7K3M-Q9ZX").await?;
    /// # Ok(()) }
    /// ```
    pub fn shipments(&self) -> Shipments<'_> {
        Shipments::new(self)
    }

    /// The courier companies linked to the merchant.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let couriers = client.couriers().list().await?;
    /// # Ok(()) }
    /// ```
    pub fn couriers(&self) -> Couriers<'_> {
        Couriers::new(self)
    }

    /// The merchant's changes as they happen, each as a signed delivery,
    /// and the listener signing key (what `shipctl listen` uses).
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let mut changes = client.listener().connect(None).await?;
    /// while let Some(change) = changes.next().await {
    ///     println!("{}", change?.delivery.shipment_code);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn listener(&self) -> crate::resources::listen::Listener<'_> {
        crate::resources::listen::Listener::new(&self.transport)
    }

    /// The base URL every path is appended to.
    pub fn base_url(&self) -> &str {
        self.transport.base_url()
    }

    /// The environment the client was built for.
    pub fn environment(&self) -> &Environment {
        &self.environment
    }

    /// The last `X-Key-Expiry-Warning` the service sent this client, if
    /// any: every answer in the last 7 days before the API key expires
    /// carries one, `this API key expires at 2026-12-01T00:00:00Z, in 3
    /// days`. Kept until a later one replaces it. To act on each as it
    /// comes, use [`on_key_expiry_warning`](crate::Builder::on_key_expiry_warning).
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// client.shipments().list().send().await?;
    /// if let Some(warning) = client.key_expiry_warning() {
    ///     eprintln!("warning: {warning}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn key_expiry_warning(&self) -> Option<String> {
        self.transport.key_expiry_warning()
    }

    /// What the client's API key is and may do (`GET /api-keys/current`):
    /// its id, name, merchant, permissions and expiry. Any key the service
    /// knows and that has not expired may ask, whatever its permissions; a
    /// full key shows every resource at its highest level. It counts as a
    /// use of the key.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::{Access, Resource};
    /// let key = client.current_key().await?;
    /// if !key.permissions.allows(Resource::Shipments, Access::Write) {
    ///     println!("key {} ({}) can only read shipments", key.id, key.name);
    /// }
    /// if let Some(at) = key.expires_at {
    ///     println!("it stops working at {at}");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ApiKeyExpired`] for a key that has expired; a 401
    /// [`Error::Api`] for one the service does not know (deleted).
    pub async fn current_key(&self) -> Result<CurrentKey> {
        let call = Call::get("/api-keys/current", "/api-keys/current");
        self.transport.json(call).await
    }
}

impl Builder<Client> {
    /// The merchant API key (`sk_test_...` for staging, `sk_live_...` for
    /// production). Required.
    ///
    /// ```no_run
    /// let client = shipment_sdk::Client::builder().api_key("sk_test_...").build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(crate::model::Secret::new(key.into().trim()));
        self
    }

    /// Checks the settings and builds the client. Fails, before anything is
    /// sent, without a key, with a key of the other environment
    /// ([`Error::WrongEnvironment`]), or with an unusable address.
    ///
    /// ```
    /// use shipment_sdk::{Client, Environment, Error};
    /// let err = Client::builder()
    ///     .api_key("sk_live_0123456789abcdefghijABCDEFGHIJKL")
    ///     .build()
    ///     .unwrap_err();
    /// assert!(matches!(err, Error::WrongEnvironment { .. }));
    /// assert!(!err.to_string().contains("0123456789"));
    /// ```
    pub fn build(self) -> Result<Client> {
        let key = self.api_key.as_ref().ok_or_else(|| {
            Error::Config("an API key is required: .api_key(\"sk_test_...\")".into())
        })?;
        let environment = self.chosen_environment();
        check_key(key.expose(), &environment)?;
        let base_url = self.resolve_base_url(&environment)?;
        let auth = Auth::ApiKey(Auth::sensitive(key.expose())?);
        Ok(Client {
            transport: self.transport(base_url, auth)?,
            environment,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_KEY: &str = "sk_test_0123456789abcdefghijABCDEFGHIJ";
    const LIVE_KEY: &str = "sk_live_0123456789abcdefghijABCDEFGHIJ";
    const PROD: &str = "https://shipments.example.com/api/v1";

    #[test]
    fn staging_is_the_default_and_points_at_the_local_server() {
        let client = Client::builder().api_key(TEST_KEY).build().unwrap();
        assert_eq!(client.base_url(), STAGING_URL);
        assert_eq!(client.environment(), &Environment::Staging);
    }

    #[test]
    fn a_live_key_is_refused_on_staging() {
        let err = Client::builder().api_key(LIVE_KEY).build().unwrap_err();
        assert!(
            matches!(
                err,
                Error::WrongEnvironment {
                    environment: "staging",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_test_key_is_refused_on_production() {
        let err = Client::builder()
            .api_key(TEST_KEY)
            .environment(Environment::Production(PROD.into()))
            .build()
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::WrongEnvironment {
                    environment: "production",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_live_key_works_on_production_with_its_address() {
        let client = Client::builder()
            .api_key(LIVE_KEY)
            .environment(Environment::Production(PROD.into()))
            .build()
            .unwrap();
        assert_eq!(client.base_url(), PROD);
    }

    #[test]
    fn production_needs_an_address_and_https() {
        let err = Client::builder()
            .api_key(LIVE_KEY)
            .environment(Environment::Production(String::new()))
            .build()
            .unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
        let err = Client::builder()
            .api_key(LIVE_KEY)
            .environment(Environment::Production(
                "http://shipments.example.com/api/v1".into(),
            ))
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("https"), "{err}");
        // Except on this machine, for tests and tunnels.
        Client::builder()
            .api_key(LIVE_KEY)
            .environment(Environment::Production("http://127.0.0.1:9/api/v1".into()))
            .build()
            .unwrap();
    }

    #[test]
    fn keys_that_are_not_merchant_keys_are_refused() {
        for key in ["", "ck_test_abc", "sk_test_", "sk_test_ab cd", "whsec_abc"] {
            let err = Client::builder().api_key(key).build().unwrap_err();
            assert!(matches!(err, Error::Config(_)), "{key}: {err}");
        }
        let err = Client::builder().build().unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
    }

    #[test]
    fn the_key_never_shows_in_debug_or_errors() {
        let builder = Client::builder().api_key(LIVE_KEY);
        assert!(!format!("{builder:?}").contains("0123456789"));
        let err = builder.build().unwrap_err();
        assert!(!format!("{err} {err:?}").contains("0123456789"));
        let client = Client::builder().api_key(TEST_KEY).build().unwrap();
        assert!(!format!("{client:?}").contains("0123456789"));
    }
}
