//! The one options builder behind [`Client::builder`] and
//! [`DashboardClient::builder`]: the settings both clients share, once.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use reqwest::Url;

use crate::client::{Client, Environment, resolve_base_url};
use crate::dashboard::DashboardClient;
use crate::error::Result;
use crate::model::Secret;
use crate::transport::{Auth, HttpOptions, Transport};

/// Configures a client: a [`Client`] (as [`ClientBuilder`], from
/// [`Client::builder`]) or a [`DashboardClient`] (as [`DashboardBuilder`],
/// from [`DashboardClient::builder`]).
///
/// The settings are the same for both: [`environment`](Self::environment),
/// [`base_url`](Self::base_url), [`timeout`](Self::timeout),
/// [`connect_timeout`](Self::connect_timeout),
/// [`max_retries`](Self::max_retries), [`retry_backoff`](Self::retry_backoff),
/// [`max_retry_after`](Self::max_retry_after) and
/// [`user_agent`](Self::user_agent). What finishes the builder depends on
/// the client: [`api_key`](Self::api_key) and [`build`](Self::build) for a
/// [`Client`]; [`login`](Self::login) or [`token`](Self::token) for a
/// [`DashboardClient`].
///
/// ```no_run
/// # async fn run() -> shipment_sdk::Result<()> {
/// use std::time::Duration;
/// use shipment_sdk::{Client, DashboardClient};
/// let client = Client::builder()
///     .api_key("sk_test_...")
///     .timeout(Duration::from_secs(10))
///     .build()?;
/// let dashboard = DashboardClient::builder()
///     .timeout(Duration::from_secs(10))
///     .login("me@example.com", "password")
///     .await?;
/// # Ok(()) }
/// ```
pub struct Builder<C> {
    /// Only a [`Client`]'s builder sets it.
    pub(crate) api_key: Option<Secret>,
    base_url: Option<String>,
    environment: Option<Environment>,
    options: HttpOptions,
    /// Which client it builds; `fn() -> C` so that the builder is `Send`
    /// and `Sync` whatever `C` is.
    client: PhantomData<fn() -> C>,
}

/// Configures a [`Client`]; see [`Client::builder`].
pub type ClientBuilder = Builder<Client>;

/// Configures a [`DashboardClient`]; see [`DashboardClient::builder`].
pub type DashboardBuilder = Builder<DashboardClient>;

impl<C> Default for Builder<C> {
    fn default() -> Self {
        Builder {
            api_key: None,
            base_url: None,
            environment: None,
            options: HttpOptions::default(),
            client: PhantomData,
        }
    }
}

impl<C> fmt::Debug for Builder<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("base_url", &self.base_url)
            .field("environment", &self.environment)
            .field("options", &self.options)
            .finish()
    }
}

impl<C> Builder<C> {
    /// Talks to this address instead of the environment's, e.g. a staging
    /// server elsewhere than on this machine. It includes `/api/v1`.
    ///
    /// ```no_run
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .base_url("http://staging.internal:8080/api/v1")
    ///     .build()?;
    /// let builder = shipment_sdk::DashboardClient::builder().base_url("http://127.0.0.1:8080/api/v1");
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Staging (the default, the local reference server) or production. A
    /// [`Client`]'s key must belong to it.
    ///
    /// ```no_run
    /// use shipment_sdk::{Client, DashboardClient, Environment};
    /// let client = Client::builder()
    ///     .api_key("sk_live_...")
    ///     .environment(Environment::Production("https://shipments.example.com/api/v1".into()))
    ///     .build()?;
    /// let builder = DashboardClient::builder()
    ///     .environment(Environment::Production("https://shipments.example.com/api/v1".into()));
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn environment(mut self, environment: Environment) -> Self {
        self.environment = Some(environment);
        self
    }

    /// Longest one attempt may take, from sending to the last body byte
    /// (default 30 s). Each retry gets the full time again.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .timeout(Duration::from_secs(5))
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = timeout;
        self
    }

    /// Longest connecting may take (default 10 s).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .connect_timeout(Duration::from_secs(2))
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.options.connect_timeout = timeout;
        self
    }

    /// Retries after a connection failure, a time-out, or a 429, 502, 503
    /// or 504 answer (default 3; 0 turns retrying off). Only reads and
    /// shipment creation (which carries an `Idempotency-Key`) are retried:
    /// other changes, and the dashboard's sign-in, never are.
    ///
    /// ```no_run
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .max_retries(0)
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.options.retry.max_retries = retries;
        self
    }

    /// The back-off between retries: the first wait is drawn from zero to
    /// `initial`, each further ceiling doubles, up to `max` (defaults 250 ms
    /// and 8 s). A `Retry-After` from the service replaces the drawn wait.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .retry_backoff(Duration::from_millis(100), Duration::from_secs(2))
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn retry_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.options.retry.initial_backoff = initial;
        self.options.retry.max_backoff = max.max(initial);
        self
    }

    /// The longest `Retry-After` the client waits out (default 60 s); when
    /// the service asks for more, the 429 or 503 is returned at once.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .max_retry_after(Duration::from_secs(5))
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn max_retry_after(mut self, max: Duration) -> Self {
        self.options.retry.max_retry_after = max;
        self
    }

    /// The `User-Agent` header (default `shipment-sdk-rust/<version>`).
    ///
    /// ```no_run
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .user_agent("my-shop/1.2")
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.options.user_agent = Some(user_agent.into());
        self
    }

    /// The environment chosen, staging by default.
    pub(crate) fn chosen_environment(&self) -> Environment {
        self.environment.clone().unwrap_or_default()
    }

    /// The base URL: the one given, else `environment`'s; checked.
    pub(crate) fn resolve_base_url(&self, environment: &Environment) -> Result<Url> {
        resolve_base_url(self.base_url.as_deref(), environment)
    }

    /// A transport with these settings to `base_url`, authenticating with
    /// `auth`.
    pub(crate) fn transport(&self, base_url: Url, auth: Auth) -> Result<Transport> {
        Transport::new(&self.options, base_url, auth)
    }
}
