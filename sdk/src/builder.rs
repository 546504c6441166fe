//! The one options builder behind [`Client::builder`] and
//! [`DashboardClient::builder`]: the settings both clients share, once.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use reqwest::Url;

use crate::client::{Client, Environment, resolve_base_url};
use crate::dashboard::DashboardClient;
use crate::error::Result;
use crate::hooks::{IncomingResponse, OutgoingRequest};
use crate::model::Secret;
use crate::network::{ClientIdentity, ProxySetting};
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
/// [`user_agent`](Self::user_agent); for a production network, a
/// [`proxy`](Self::proxy) (or [`no_proxy`](Self::no_proxy)), extra
/// [root certificates](Self::add_root_certificate_pem), a
/// [client certificate](Self::client_certificate_pem) for mutual TLS, and
/// hooks run on every attempt ([`on_request`](Self::on_request),
/// [`on_response`](Self::on_response)). What finishes the builder depends on
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

    /// Sends every request through this HTTP proxy: an `http://` proxy
    /// (https:// calls go through it in a `CONNECT` tunnel, so the proxy
    /// never sees the API key) or an `https://` one. User name and
    /// password, if the proxy wants them, go in the URL
    /// (`http://user:password@proxy.internal:3128`); `Debug` never shows
    /// them.
    ///
    /// Without this setting the client honours the standard environment
    /// variables, as curl does: `HTTPS_PROXY` for `https://` addresses,
    /// `HTTP_PROXY` for `http://` ones, `ALL_PROXY` for both, and
    /// `NO_PROXY` (a comma-separated list of hosts, domains (`.internal`
    /// covers its subdomains), IP addresses and networks, or `*`) for the
    /// addresses that go direct; lower-case names too. They are read when
    /// the client is built. That is the default because an egress proxy is
    /// usually set for every program in a container that way, and a
    /// client that ignored it could not connect. `proxy(url)` replaces
    /// them: the environment is not read, `NO_PROXY` included;
    /// [`no_proxy`](Self::no_proxy) connects directly.
    ///
    /// An address that is not `http://` or `https://` (a `socks5://`
    /// proxy, say) fails in `build()`/`login()` with
    /// [`Error::Config`](crate::Error::Config).
    ///
    /// ```no_run
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_live_...")
    ///     .environment(shipment_sdk::Environment::Production(
    ///         "https://shipments.example.com/api/v1".into(),
    ///     ))
    ///     .proxy("http://proxy.internal:3128")
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.options.network.proxy = ProxySetting::Explicit(url.into());
        self
    }

    /// Connects directly, through no proxy: the proxy environment
    /// variables are not read, and a [`proxy`](Self::proxy) set before is
    /// dropped.
    ///
    /// ```no_run
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .no_proxy()
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn no_proxy(mut self) -> Self {
        self.options.network.proxy = ProxySetting::Direct;
        self
    }

    /// Trusts the certificates in this PEM text (one or several `-----BEGIN
    /// CERTIFICATE-----` sections) as certificate authorities, besides the
    /// platform's own: for a service, or a TLS-inspecting egress proxy,
    /// whose certificate a private CA signed. May be called again to add
    /// more.
    ///
    /// A text with no certificate, or a malformed one, fails in
    /// `build()`/`login()` with
    /// [`Error::InvalidCertificate`](crate::Error::InvalidCertificate).
    ///
    /// ```no_run
    /// let ca = std::fs::read("/etc/shipments/private-ca.pem").unwrap();
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_live_...")
    ///     .environment(shipment_sdk::Environment::Production(
    ///         "https://shipments.internal/api/v1".into(),
    ///     ))
    ///     .add_root_certificate_pem(&ca)
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn add_root_certificate_pem(mut self, pem: impl AsRef<[u8]>) -> Self {
        self.options
            .network
            .root_certificates
            .push(pem.as_ref().to_vec());
        self
    }

    /// Presents this client certificate when the server asks for one
    /// (mutual TLS): `cert_chain` is the PEM of the certificate, followed
    /// by any intermediates; `private_key` the PEM of its key (PKCS#8
    /// `PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY`, unencrypted).
    /// A second call replaces the first. `Debug` never shows the key.
    ///
    /// A text without a certificate or a key, or a key that is not the
    /// certificate's, fails in `build()`/`login()` with
    /// [`Error::InvalidCertificate`](crate::Error::InvalidCertificate).
    ///
    /// ```no_run
    /// let cert = std::fs::read("/etc/shipments/client.pem").unwrap();
    /// let key = std::fs::read("/etc/shipments/client.key").unwrap();
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_live_...")
    ///     .environment(shipment_sdk::Environment::Production(
    ///         "https://shipments.example.com/api/v1".into(),
    ///     ))
    ///     .client_certificate_pem(&cert, &key)
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn client_certificate_pem(
        mut self,
        cert_chain: impl AsRef<[u8]>,
        private_key: impl AsRef<[u8]>,
    ) -> Self {
        self.options.network.identity = Some(ClientIdentity {
            cert_chain: cert_chain.as_ref().to_vec(),
            private_key: private_key.as_ref().to_vec(),
        });
        self
    }

    /// Runs `hook` on every attempt before it is sent, retries included
    /// (each attempt is a request of its own on the wire, with
    /// [`attempt()`](OutgoingRequest::attempt) counting from 1), and on the
    /// opening of an event stream. It sees the method, the URL and the
    /// headers, and may add or replace headers: a header an egress gateway
    /// wants, a correlation id.
    ///
    /// It cannot break the client's rules: the method, URL and body are not
    /// its to change, and the credential, the `Idempotency-Key`, `Accept`,
    /// an event stream's `Last-Event-ID` and the framing headers are
    /// refused
    /// ([`PROTECTED_HEADERS`](crate::hooks::PROTECTED_HEADERS);
    /// `set_header` answers [`HeaderError`](crate::hooks::HeaderError)),
    /// so a create still carries one key on every retry and only what is
    /// safe to repeat is repeated. The credential reads `[redacted]`.
    ///
    /// Hooks run in the order added, on the task sending the request: keep
    /// them quick, and a panic in one is the caller's panic.
    ///
    /// ```no_run
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .on_request(|request| {
    ///         request
    ///             .set_header("x-egress-token", "route-42")
    ///             .expect("not a protected header");
    ///     })
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn on_request(
        mut self,
        hook: impl Fn(&mut OutgoingRequest<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.options.hooks.request.push(std::sync::Arc::new(hook));
        self
    }

    /// Runs `hook` on the answer to every attempt once its headers are in
    /// (the body not yet read), a 429 or 503 the client then retries
    /// included: it sees the method, the URL, the status, the headers,
    /// the [`attempt`](IncomingResponse::attempt) and the
    /// [time it took](IncomingResponse::elapsed), for metrics. An attempt
    /// that got no answer (refused, reset, timed out) runs no response
    /// hook; the call's error says what happened.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// let throttled = Arc::new(AtomicU64::new(0));
    /// let counter = throttled.clone();
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .on_response(move |response| {
    ///         if response.status() == 429 {
    ///             counter.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     })
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn on_response(
        mut self,
        hook: impl Fn(&IncomingResponse<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.options.hooks.response.push(std::sync::Arc::new(hook));
        self
    }

    /// Runs `hook` with the text of every `X-Key-Expiry-Warning` the
    /// service sends: on each answer in the last 7 days before the API key
    /// expires, `this API key expires at 2026-12-01T00:00:00Z, in 3 days`.
    /// Each answer carrying it runs the hook once, so a program that wants
    /// to say it once keeps count itself (as `shipctl` does). The last
    /// warning is also kept: [`Client::key_expiry_warning`](crate::Client::key_expiry_warning).
    ///
    /// ```no_run
    /// use std::sync::Once;
    /// static WARNED: Once = Once::new();
    /// let client = shipment_sdk::Client::builder()
    ///     .api_key("sk_test_...")
    ///     .on_key_expiry_warning(|warning| {
    ///         WARNED.call_once(|| eprintln!("warning: {warning}: make a new key"));
    ///     })
    ///     .build()?;
    /// # Ok::<(), shipment_sdk::Error>(())
    /// ```
    pub fn on_key_expiry_warning(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.options
            .hooks
            .key_expiry
            .push(std::sync::Arc::new(hook));
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
