//! The HTTP client's settings, and the checks on them that fail before
//! anything is sent.
//!
//! Every client, the one for calls and the one for event streams, is
//! built here from the same options, so a setting that matters for safety
//! (no redirects, which would carry the credential elsewhere) or for the
//! merchant's network (proxy, certificates) cannot be left off one of them.

use std::time::Duration;

use reqwest::Url;

use crate::error::{Error, Result};
use crate::hooks::Hooks;
use crate::network::NetworkOptions;
use crate::retry::RetryPolicy;

/// Settings every client shares.
#[derive(Debug, Clone)]
pub(crate) struct HttpOptions {
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub user_agent: Option<String>,
    pub retry: RetryPolicy,
    pub network: NetworkOptions,
    pub hooks: Hooks,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            user_agent: None,
            retry: RetryPolicy::default(),
            network: NetworkOptions::default(),
            hooks: Hooks::default(),
        }
    }
}

/// Longest silence on an event stream before it counts as dead: the server
/// sends a keep-alive every 15 s.
pub(crate) const STREAM_READ_TIMEOUT: Duration = Duration::from_secs(45);

/// The default `User-Agent`.
pub(crate) const USER_AGENT: &str = concat!("shipment-sdk-rust/", env!("CARGO_PKG_VERSION"));

impl HttpOptions {
    /// A connection-pooling HTTP client with these settings.
    pub fn http_client(&self) -> Result<reqwest::Client> {
        self.build(self.builder()?.timeout(self.timeout))
    }

    /// A client for event streams: no limit on the whole response (a stream
    /// lasts as long as it is read), but one on the silence between two
    /// reads, longer than the server's keep-alive interval (15 s) with room
    /// for a slow network, so a dead connection is noticed.
    pub fn stream_client(&self) -> Result<reqwest::Client> {
        self.build(
            self.builder()?
                .read_timeout(STREAM_READ_TIMEOUT.max(self.timeout)),
        )
    }

    /// The `User-Agent` every request carries.
    pub fn user_agent(&self) -> &str {
        self.user_agent.as_deref().unwrap_or(USER_AGENT)
    }

    fn builder(&self) -> Result<reqwest::ClientBuilder> {
        let builder = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            // A redirect would carry the API key (reqwest strips only the
            // standard credential headers across hosts), and a 307 or 308
            // the password or the body, to wherever `Location` points. A
            // 3xx is an `Error::Redirect` instead, naming it.
            .redirect(reqwest::redirect::Policy::none());
        self.network.apply(builder)
    }

    /// Builds the client. What fails here, once the settings parsed, is
    /// TLS refusing them (a key that is not its certificate's, a root that
    /// is not a certificate inside), so with the merchant's certificates
    /// in play the failure is theirs.
    fn build(&self, builder: reqwest::ClientBuilder) -> Result<reqwest::Client> {
        builder.build().map_err(|e| {
            let reason = error_chain(&e);
            if self.network.has_tls_settings() {
                Error::InvalidCertificate {
                    what: self.network.refused_setting(),
                    reason: format!("TLS refused the settings: {reason}"),
                }
            } else {
                Error::Config(format!("cannot build the HTTP client: {reason}"))
            }
        })
    }
}

/// `e` and its causes, `: `-separated (reqwest's own message is only
/// "builder error").
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    for cause in std::iter::successors(e.source(), |c| c.source()) {
        text.push_str(": ");
        text.push_str(&cause.to_string());
    }
    text
}

/// Checks a base URL (`http(s)://host[:port]/api/v1`) and drops any
/// trailing slash.
pub(crate) fn normalize_base_url(raw: &str) -> Result<Url> {
    let trimmed = raw.trim().trim_end_matches('/');
    let url = Url::parse(trimmed)
        .map_err(|e| Error::Config(format!("base URL `{trimmed}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(Error::Config(format!(
            "base URL `{trimmed}` must be an http:// or https:// address"
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(Error::Config(format!(
            "base URL `{trimmed}` must not carry a query or fragment"
        )));
    }
    Ok(url)
}
