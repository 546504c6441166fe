//! The dashboard client: sign in with the merchant's e-mail and password,
//! then manage API keys and webhooks with the session's Bearer token.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::Method;

use crate::client::{Environment, resolve_base_url};
use crate::error::Result;
use crate::model::{Login, Secret, Session};
use crate::resources::api_keys::ApiKeys;
use crate::resources::webhooks::Webhooks;
use crate::transport::{Auth, Call, HttpOptions, Transport};

/// A signed-in dashboard session.
///
/// The dashboard routes take a Bearer token from `POST /auth/login`, never
/// an API key. Sign in with [`DashboardClient::login`] (or
/// [`DashboardClient::builder`] for settings), reach the endpoints through
/// [`api_keys`](Self::api_keys) and [`webhooks`](Self::webhooks), and end
/// the session with [`logout`](Self::logout). Sessions last 12 hours.
///
/// ```no_run
/// # async fn run() -> shipment_sdk::Result<()> {
/// use shipment_sdk::DashboardClient;
/// let dashboard =
///     DashboardClient::login("http://127.0.0.1:8080/api/v1", "me@example.com", "password")
///         .await?;
/// let new_key = dashboard.api_keys().create("ci").await?;
/// println!("store this now, it is shown once: {}", new_key.key.expose());
/// dashboard.logout().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DashboardClient {
    pub(crate) transport: Transport,
    environment: Environment,
    token: Secret,
    expires_at: Option<DateTime<Utc>>,
}

impl fmt::Debug for DashboardClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DashboardClient")
            .field("environment", &self.environment.name())
            .field("base_url", &self.transport.base_url())
            .field("token", &"[redacted]")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl DashboardClient {
    /// Signs in at `base_url` (including `/api/v1`) with default settings.
    ///
    /// Wrong credentials are a 401; five failures for one e-mail within 15
    /// minutes are answered 429 for the rest of that window. Sign-in is
    /// never retried automatically, since each failure counts.
    ///
    /// ```no_run
    /// # async fn run() -> shipment_sdk::Result<()> {
    /// let dashboard = shipment_sdk::DashboardClient::login(
    ///     shipment_sdk::STAGING_URL,
    ///     "me@example.com",
    ///     "correct horse battery",
    /// )
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub async fn login(base_url: &str, email: &str, password: &str) -> Result<DashboardClient> {
        DashboardClient::builder()
            .base_url(base_url)
            .login(email, password)
            .await
    }

    /// Starts configuring a dashboard client, with the settings of
    /// [`Client::builder`](crate::Client::builder) (`environment`,
    /// `base_url`, `timeout`, `connect_timeout`, `max_retries`,
    /// `retry_backoff`, `max_retry_after`, `user_agent`); instead of an API
    /// key, [`DashboardBuilder::login`] or [`DashboardBuilder::token`]
    /// finishes it.
    ///
    /// ```no_run
    /// # async fn run() -> shipment_sdk::Result<()> {
    /// use std::time::Duration;
    /// use shipment_sdk::{DashboardClient, Environment};
    /// let dashboard = DashboardClient::builder()
    ///     .environment(Environment::Production("https://shipments.example.com/api/v1".into()))
    ///     .timeout(Duration::from_secs(10))
    ///     .login("me@example.com", "password")
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn builder() -> DashboardBuilder {
        DashboardBuilder::default()
    }

    /// The API key endpoints: list, create, delete, verify.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// for key in dashboard.api_keys().list().await? {
    ///     println!("{} {}...{}", key.id, key.prefix, key.last4);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn api_keys(&self) -> ApiKeys<'_> {
        ApiKeys::new(self)
    }

    /// The webhook endpoints: list, register, enable or disable, delete,
    /// the delivery log, and the shipment signing key.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// let hook = dashboard.webhooks().register("https://shop.example.com/hooks").await?;
    /// println!("signing key, shown once: {}", hook.signing_key.expose());
    /// # Ok(()) }
    /// ```
    pub fn webhooks(&self) -> Webhooks<'_> {
        Webhooks::new(self)
    }

    /// The merchant's changes as they happen and the listener signing key,
    /// as with [`Client::listener`](crate::Client::listener), under the
    /// session.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// let key = dashboard.listener().signing_key().await?;
    /// # Ok(()) }
    /// ```
    pub fn listener(&self) -> crate::resources::listen::Listener<'_> {
        crate::resources::listen::Listener::new(&self.transport)
    }

    /// The session token, to keep and resume with
    /// [`DashboardBuilder::token`]. Treat it like a password.
    ///
    /// ```no_run
    /// # fn run(dashboard: shipment_sdk::DashboardClient) {
    /// let token: String = dashboard.token().expose().to_owned();
    /// # }
    /// ```
    pub fn token(&self) -> &Secret {
        &self.token
    }

    /// When the session ends, if known (it is after [`login`](Self::login),
    /// not after resuming from a token).
    pub fn expires_at(&self) -> Option<DateTime<Utc>> {
        self.expires_at
    }

    /// The base URL every path is appended to.
    pub fn base_url(&self) -> &str {
        self.transport.base_url()
    }

    /// The environment the client was built for.
    pub fn environment(&self) -> &Environment {
        &self.environment
    }

    /// Ends the session (`POST /auth/logout`); the token stops working.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// dashboard.logout().await?;
    /// # Ok(()) }
    /// ```
    pub async fn logout(self) -> Result<()> {
        let call = Call::new(Method::POST, "/auth/logout", "/auth/logout");
        self.transport.empty(call).await
    }
}

/// Configures a [`DashboardClient`]; see [`DashboardClient::builder`].
#[derive(Debug, Default)]
pub struct DashboardBuilder {
    base_url: Option<String>,
    environment: Option<Environment>,
    options: HttpOptions,
}

impl DashboardBuilder {
    /// The service address, including `/api/v1`; overrides the
    /// environment's.
    ///
    /// ```no_run
    /// let builder = shipment_sdk::DashboardClient::builder().base_url("http://127.0.0.1:8080/api/v1");
    /// ```
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Staging (the default, the local reference server) or production.
    ///
    /// ```no_run
    /// use shipment_sdk::{DashboardClient, Environment};
    /// let builder = DashboardClient::builder()
    ///     .environment(Environment::Production("https://shipments.example.com/api/v1".into()));
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
    /// let builder = shipment_sdk::DashboardClient::builder().timeout(Duration::from_secs(5));
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = timeout;
        self
    }

    /// Longest connecting may take (default 10 s).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// let builder = shipment_sdk::DashboardClient::builder().connect_timeout(Duration::from_secs(2));
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.options.connect_timeout = timeout;
        self
    }

    /// Retries of reads after a connection failure, a time-out, or a 429,
    /// 502, 503 or 504 (default 3; 0 turns retrying off). Changes (and
    /// sign-in) are never retried.
    ///
    /// ```no_run
    /// let builder = shipment_sdk::DashboardClient::builder().max_retries(0);
    /// ```
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.options.retry.max_retries = retries;
        self
    }

    /// The back-off between retries; see
    /// [`ClientBuilder::retry_backoff`](crate::ClientBuilder::retry_backoff).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// let builder = shipment_sdk::DashboardClient::builder()
    ///     .retry_backoff(Duration::from_millis(100), Duration::from_secs(2));
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
    /// let builder = shipment_sdk::DashboardClient::builder().max_retry_after(Duration::from_secs(5));
    /// ```
    pub fn max_retry_after(mut self, max: Duration) -> Self {
        self.options.retry.max_retry_after = max;
        self
    }

    /// The `User-Agent` header (default `shipment-sdk-rust/<version>`).
    ///
    /// ```no_run
    /// let builder = shipment_sdk::DashboardClient::builder().user_agent("shipctl/0.1");
    /// ```
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.options.user_agent = Some(user_agent.into());
        self
    }

    fn transport(&self, auth: Auth) -> Result<(Transport, Environment)> {
        let environment = self.environment.clone().unwrap_or_default();
        let base_url = resolve_base_url(self.base_url.as_deref(), &environment)?;
        Ok((Transport::new(&self.options, base_url, auth)?, environment))
    }

    /// Signs in (`POST /auth/login`) and returns the session.
    ///
    /// ```no_run
    /// # async fn run() -> shipment_sdk::Result<()> {
    /// let dashboard = shipment_sdk::DashboardClient::builder()
    ///     .login("me@example.com", "password")
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn login(self, email: &str, password: &str) -> Result<DashboardClient> {
        let (anonymous, environment) = self.transport(Auth::None)?;
        let call = Call::new(Method::POST, "/auth/login", "/auth/login").json(&Login {
            email: email.to_owned(),
            password: Secret::new(password),
        })?;
        let session: Session = anonymous.json(call).await?;
        let bearer = Auth::sensitive(&format!("Bearer {}", session.token.expose()))?;
        Ok(DashboardClient {
            transport: anonymous.with_auth(Auth::Bearer(bearer)),
            environment,
            token: session.token,
            expires_at: Some(session.expires_at),
        })
    }

    /// Resumes a session from a token kept from an earlier sign-in; nothing
    /// is sent until the first call.
    ///
    /// ```no_run
    /// let dashboard = shipment_sdk::DashboardClient::builder()
    ///     .token(std::env::var("SHIPMENT_SESSION").unwrap())?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn token(self, token: impl Into<String>) -> Result<DashboardClient> {
        let token = Secret::new(token.into().trim());
        if token.expose().is_empty() {
            return Err(crate::Error::Config("the session token is empty".into()));
        }
        let bearer = Auth::sensitive(&format!("Bearer {}", token.expose()))?;
        let (transport, environment) = self.transport(Auth::Bearer(bearer))?;
        Ok(DashboardClient {
            transport,
            environment,
            token,
            expires_at: None,
        })
    }
}
