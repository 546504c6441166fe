//! The dashboard client: sign in with the merchant's e-mail and password,
//! then manage API keys and webhooks with the session's Bearer token.

use std::fmt;

use chrono::{DateTime, Utc};
use reqwest::Method;

use crate::builder::{Builder, DashboardBuilder};
use crate::client::Environment;
use crate::error::Result;
use crate::model::{Login, Secret, Session};
use crate::resources::api_keys::ApiKeys;
use crate::resources::webhooks::Webhooks;
use crate::transport::{Auth, Call, Transport};

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

    /// Starts configuring a dashboard client: the same [`Builder`] as
    /// [`Client::builder`](crate::Client::builder), with the same settings
    /// (`environment`, `base_url`, `timeout`, `connect_timeout`,
    /// `max_retries`, `retry_backoff`, `max_retry_after`, `user_agent`,
    /// and for a production network `proxy`, `no_proxy`,
    /// `add_root_certificate_pem`, `client_certificate_pem`, `on_request`,
    /// `on_response`); instead of an API key, [`login`](Builder::login) or
    /// [`token`](Builder::token) finishes it.
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

impl Builder<DashboardClient> {
    fn transport_with(&self, auth: Auth) -> Result<(Transport, Environment)> {
        let environment = self.chosen_environment();
        let base_url = self.resolve_base_url(&environment)?;
        Ok((self.transport(base_url, auth)?, environment))
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
        let (anonymous, environment) = self.transport_with(Auth::None)?;
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
        let (transport, environment) = self.transport_with(Auth::Bearer(bearer))?;
        Ok(DashboardClient {
            transport,
            environment,
            token,
            expires_at: None,
        })
    }
}
