//! Sending one call: authentication, the retry loop, the tracing span, and
//! turning answers into values or [`Error`]s. Shared by [`crate::Client`]
//! and [`crate::DashboardClient`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{self, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::Instrument as _;
use tracing::field::Empty;

use crate::error::{ApiError, Error, Result, TransportError};
use crate::hooks::{Hooks, IncomingResponse};
use crate::model::{Page, Problem};
use crate::network::NetworkOptions;
use crate::retry::{RetryPolicy, parse_retry_after};

const API_KEY_HEADER: HeaderName = HeaderName::from_static("x-api-key");
const IDEMPOTENCY_KEY_HEADER: HeaderName = HeaderName::from_static("idempotency-key");
const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

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

/// How a call authenticates.
pub(crate) enum Auth {
    /// `X-API-KEY` (merchant API routes).
    ApiKey(HeaderValue),
    /// `Authorization: Bearer` (dashboard routes).
    Bearer(HeaderValue),
    /// Nothing (sign-in).
    None,
}

impl Auth {
    /// A header value that `Debug` never shows.
    pub fn sensitive(value: &str) -> Result<HeaderValue> {
        let mut v = HeaderValue::from_str(value).map_err(|_| {
            Error::Config("the credential contains characters a header cannot carry".into())
        })?;
        v.set_sensitive(true);
        Ok(v)
    }
}

/// Whether a call may be sent again after a retryable failure
/// ([`Error::is_retryable`]): idempotent calls only, since the service may
/// have acted on an attempt whose answer was lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Not safe to repeat (rate, cancel, sign-in...).
    Never,
    /// Safe to repeat (reads).
    Safe,
    /// Safe to repeat because the server deduplicates on this key.
    WithIdempotencyKey(String),
}

/// One call of the API.
#[derive(Clone)]
pub(crate) struct Call {
    method: Method,
    /// The route as documented (`/shipments/{code}`), for tracing.
    template: &'static str,
    path: String,
    query: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    retry: Retry,
}

impl Call {
    /// A call without body or query that is never repeated.
    pub fn new(method: Method, template: &'static str, path: impl Into<String>) -> Call {
        Call {
            method,
            template,
            path: path.into(),
            query: Vec::new(),
            body: None,
            retry: Retry::Never,
        }
    }

    /// A `GET`, repeated on retryable failures.
    pub fn get(template: &'static str, path: impl Into<String>) -> Call {
        Call::new(Method::GET, template, path).retry(Retry::Safe)
    }

    /// Sets the retry rule.
    pub fn retry(mut self, retry: Retry) -> Call {
        self.retry = retry;
        self
    }

    /// Adds a JSON body.
    pub fn json(mut self, body: &impl Serialize) -> Result<Call> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| Error::Config(format!("cannot encode the request body: {e}")))?;
        self.body = Some(bytes);
        Ok(self)
    }

    /// Adds one query parameter.
    pub fn param(mut self, key: &str, value: impl fmt::Display) -> Call {
        self.query.push((key.to_owned(), value.to_string()));
        self
    }

    /// Sets a query parameter, replacing any value it had (in place, so
    /// the parameters keep their order).
    pub fn set_param(mut self, key: &str, value: impl fmt::Display) -> Call {
        let value = value.to_string();
        match self.query.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.query.push((key.to_owned(), value)),
        }
        self
    }

    /// Adds query parameters from a struct whose fields are scalars; `None`
    /// fields are left out.
    pub fn query(mut self, query: &impl Serialize) -> Result<Call> {
        let value = serde_json::to_value(query)
            .map_err(|e| Error::Config(format!("cannot encode the query: {e}")))?;
        if let serde_json::Value::Object(map) = value {
            for (k, v) in map {
                let text = match v {
                    serde_json::Value::Null => continue,
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                self.query.push((k, text));
            }
        }
        Ok(self)
    }
}

/// A success answer, body unread.
struct Answer {
    status: u16,
    request_id: Option<String>,
    headers: header::HeaderMap,
    body: Vec<u8>,
}

/// A decoded success answer with the response headers, for the calls whose
/// headers say more than the body (`Idempotent-Replayed`).
pub(crate) struct Reply<T> {
    pub value: T,
    headers: header::HeaderMap,
}

impl<T> Reply<T> {
    /// A response header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `Retry-After` of a success answer (a bulk redelivery the
    /// budget cut), if any and readable.
    pub fn retry_after(&self) -> Option<Duration> {
        retry_after_of(&self.headers)
    }
}

/// How to fetch another page of a paged list: the call of the first page,
/// sent again with another `page`. A [`Page`] fetched by the SDK carries
/// one, which is what lets it stream the pages after it.
#[derive(Clone)]
pub(crate) struct NextPage {
    transport: Transport,
    call: Call,
}

impl NextPage {
    /// Fetches page `page` (from 1) with the same query, ready to fetch the
    /// one after it in turn.
    pub async fn fetch<T: DeserializeOwned>(&self, page: u32) -> Result<Page<T>> {
        let call = self.call.clone().set_param("page", page);
        let fetched: Page<T> = self.transport.json(call).await?;
        Ok(fetched.with_next(self.clone()))
    }
}

/// `GET /shipments?page_size=2&status=delivered`: the call without its
/// credentials, its page or its body.
impl fmt::Debug for NextPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.call.method, self.call.path)?;
        let mut sep = '?';
        for (k, v) in self.call.query.iter().filter(|(k, _)| k != "page") {
            write!(f, "{sep}{k}={v}")?;
            sep = '&';
        }
        Ok(())
    }
}

/// Sends calls to one base URL with one set of credentials. Cheap to clone:
/// clones share the connection pool.
#[derive(Clone)]
pub(crate) struct Transport {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    /// For event streams, made on first use (most programs never open one).
    streams: std::sync::OnceLock<reqwest::Client>,
    options: HttpOptions,
    base_url: Url,
    auth: Auth,
    retry: RetryPolicy,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match self.inner.auth {
            Auth::ApiKey(_) => "X-API-KEY [redacted]",
            Auth::Bearer(_) => "Bearer [redacted]",
            Auth::None => "none",
        };
        f.debug_struct("Transport")
            .field("base_url", &self.inner.base_url.as_str())
            .field("auth", &auth)
            .field("retry", &self.inner.retry)
            .finish()
    }
}

impl Transport {
    pub fn new(options: &HttpOptions, base_url: Url, auth: Auth) -> Result<Transport> {
        Ok(Transport {
            inner: Arc::new(Inner {
                http: options.http_client()?,
                streams: std::sync::OnceLock::new(),
                options: options.clone(),
                base_url,
                auth,
                retry: options.retry,
            }),
        })
    }

    /// The same connection pool and settings with other credentials.
    pub fn with_auth(&self, auth: Auth) -> Transport {
        Transport {
            inner: Arc::new(Inner {
                http: self.inner.http.clone(),
                streams: self.inner.streams.clone(),
                options: self.inner.options.clone(),
                base_url: self.inner.base_url.clone(),
                auth,
                retry: self.inner.retry,
            }),
        }
    }

    pub fn base_url(&self) -> &str {
        self.inner.base_url.as_str()
    }

    /// Sends `call` and reads a JSON body of type `T`.
    pub async fn json<T: DeserializeOwned>(&self, call: Call) -> Result<T> {
        self.reply(call).await.map(|reply| reply.value)
    }

    /// Sends `call` and reads a JSON body of type `T`, keeping the
    /// response headers.
    pub async fn reply<T: DeserializeOwned>(&self, call: Call) -> Result<Reply<T>> {
        let answer = self.execute(&call).await?;
        match serde_json::from_slice(&answer.body) {
            Ok(value) => Ok(Reply {
                value,
                headers: answer.headers,
            }),
            Err(source) => Err(Error::Decode {
                status: answer.status,
                request_id: answer.request_id,
                source,
            }),
        }
    }

    /// Sends `call`, a paged list, and reads the page; the page can fetch
    /// the ones after it with the same query.
    pub async fn page<T: DeserializeOwned>(&self, call: Call) -> Result<Page<T>> {
        let page: Page<T> = self.json(call.clone()).await?;
        Ok(page.with_next(NextPage {
            transport: self.clone(),
            call,
        }))
    }

    /// Sends `call` (a `GET` of an event stream, never retried here: a
    /// stream's reader reconnects) with `headers`, and returns the response
    /// once its headers are in, for the body to be read as it comes. An
    /// answer that is not 2xx is the same [`Error`] as for other calls.
    pub async fn open_stream(
        &self,
        call: &Call,
        headers: header::HeaderMap,
    ) -> Result<reqwest::Response> {
        let http = match self.inner.streams.get() {
            Some(http) => http,
            None => {
                let made = self.inner.options.stream_client()?;
                self.inner.streams.get_or_init(|| made)
            }
        };
        let request = http
            .request(call.method.clone(), self.url(call))
            .headers(headers)
            .header(header::ACCEPT, "text/event-stream");
        let response = self.send(http, self.authorized(request), 1).await?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let url = response.url().clone();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(classify)?;
        Err(error_answer(status, &url, &headers, &body))
    }

    /// Sends one attempt of a request: the `User-Agent`, the merchant's
    /// request hooks (which may add headers, never the credential or the
    /// `Idempotency-Key`), then the response hooks once the answer's
    /// headers are in. An attempt that gets no answer is an error sorted
    /// by [`classify_unanswered`], and no response hook sees it.
    async fn send(
        &self,
        http: &reqwest::Client,
        request: reqwest::RequestBuilder,
        attempt: u32,
    ) -> Result<reqwest::Response> {
        let options = &self.inner.options;
        let mut request = request
            .header(header::USER_AGENT, options.user_agent())
            .build()
            .map_err(classify)?;
        let hooks = &options.hooks;
        // Copies for the hooks, whose request hooks change the headers the
        // request owns; none without hooks, the common case.
        let seen = hooks
            .any()
            .then(|| (request.method().clone(), request.url().clone()));
        if let Some((method, url)) = &seen {
            hooks.before(method, url, request.headers_mut(), attempt);
        }
        let started = std::time::Instant::now();
        let response = http.execute(request).await.map_err(classify_unanswered)?;
        if let Some((method, url)) = &seen {
            hooks.after(&IncomingResponse {
                method,
                url,
                status: response.status().as_u16(),
                headers: response.headers(),
                attempt,
                elapsed: started.elapsed(),
            });
        }
        Ok(response)
    }

    /// `request` with this transport's credential.
    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.inner.auth {
            Auth::ApiKey(v) => request.header(API_KEY_HEADER, v.clone()),
            Auth::Bearer(v) => request.header(header::AUTHORIZATION, v.clone()),
            Auth::None => request,
        }
    }

    /// Sends `call` and ignores any body (204 answers).
    pub async fn empty(&self, call: Call) -> Result<()> {
        self.execute(&call).await.map(drop)
    }

    fn url(&self, call: &Call) -> Url {
        let mut url = self.inner.base_url.clone();
        let path = format!("{}{}", url.path().trim_end_matches('/'), call.path);
        url.set_path(&path);
        if !call.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&call.query);
        }
        url
    }

    async fn execute(&self, call: &Call) -> Result<Answer> {
        let url = self.url(call);
        // The OpenTelemetry HTTP client attributes beside the SDK's own
        // names (`method`, `path`, `attempt`, `status`), which stay for the
        // merchants who read them already.
        let span = tracing::info_span!(
            "shipment_sdk.request",
            otel.name = %format_args!("{} {}", call.method, call.template),
            otel.kind = "client",
            method = %call.method,
            path = call.template,
            attempt = Empty,
            status = Empty,
            request_id = Empty,
            http.request.method = %call.method,
            url.full = %url,
            server.address = url.host_str().unwrap_or_default(),
            server.port = url.port_or_known_default(),
            http.route = call.template,
            http.response.status_code = Empty,
            http.request.resend_count = Empty,
        );
        let policy = self.inner.retry;
        async {
            let mut attempt: u32 = 0;
            loop {
                attempt += 1;
                let span = tracing::Span::current();
                span.record("attempt", attempt);
                if attempt > 1 {
                    // OpenTelemetry's name for the retries before this one.
                    span.record("http.request.resend_count", attempt - 1);
                }
                let error = match self.attempt(call, url.clone(), attempt, &span).await {
                    Ok(answer) => return Ok(answer),
                    Err(e) => e,
                };
                let repeatable = call.retry != Retry::Never && error.is_retryable();
                if !repeatable || attempt > policy.max_retries {
                    tracing::debug!(error = %error, "request failed");
                    return Err(error);
                }
                let retry_after = error.retry_after();
                let Some(delay) = policy.delay(attempt, retry_after) else {
                    tracing::debug!(error = %error, "the service asked for a longer pause than we wait");
                    return Err(error);
                };
                tracing::debug!(error = %error, delay_ms = delay.as_millis(), "retrying");
                tokio::time::sleep(delay).await;
            }
        }
        .instrument(span)
        .await
    }

    async fn attempt(
        &self,
        call: &Call,
        url: Url,
        attempt: u32,
        span: &tracing::Span,
    ) -> Result<Answer> {
        let mut request = self.authorized(self.inner.http.request(call.method.clone(), url));
        if let Retry::WithIdempotencyKey(key) = &call.retry {
            request = request.header(IDEMPOTENCY_KEY_HEADER, key.as_str());
        }
        if let Some(body) = &call.body {
            request = request
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.clone());
        }
        #[cfg(feature = "opentelemetry")]
        {
            request = trace_context::inject(request, span);
        }
        let mut response = self.send(&self.inner.http, request, attempt).await?;
        let status = response.status().as_u16();
        span.record("status", status);
        span.record("http.response.status_code", status);
        let request_id = request_id_of(response.headers());
        if let Some(id) = &request_id {
            span.record("request_id", id.as_str());
        }
        let url = response.url().clone();
        let headers = std::mem::take(response.headers_mut());
        let body = response.bytes().await.map_err(classify)?.to_vec();
        if (200..300).contains(&status) {
            return Ok(Answer {
                status,
                request_id,
                headers,
                body,
            });
        }
        Err(error_answer(status, &url, &headers, &body))
    }
}

fn request_id_of(headers: &header::HeaderMap) -> Option<String> {
    headers
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn retry_after_of(headers: &header::HeaderMap) -> Option<Duration> {
    headers
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, chrono::Utc::now()))
}

/// The error of an answer to a request to `url` that is not 2xx: a
/// redirect for a 3xx (followed by nobody), else an API error. A proxy's
/// HTML error page is still an error of its status; only the problem
/// fields are missing.
fn error_answer(status: u16, url: &Url, headers: &header::HeaderMap, body: &[u8]) -> Error {
    let request_id = request_id_of(headers);
    if (300..400).contains(&status) {
        // The address it names in full, a relative reference resolved as a
        // browser would, so the merchant sees which base URL to set.
        let location = headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(|raw| url.join(raw).map_or_else(|_| raw.to_owned(), String::from));
        return Error::Redirect {
            status,
            location,
            request_id,
        };
    }
    let problem = serde_json::from_slice::<Problem>(body).ok();
    Error::Api(Box::new(ApiError::new(
        status,
        problem,
        request_id,
        retry_after_of(headers),
    )))
}

/// Sorts reqwest's failures into the SDK's kinds.
pub(crate) fn classify(e: reqwest::Error) -> Error {
    let (timeout, connect) = (e.is_timeout(), e.is_connect());
    let e = TransportError::new(e);
    if timeout {
        Error::Timeout(e)
    } else if connect {
        Error::Connect(e)
    } else {
        Error::Transport(e)
    }
}

/// Sorts the failures of sending a request, before any answer arrived:
/// as [`classify`], and a connection that ended without an answer (closed,
/// reset, an incomplete message) is marked [`retryable`](Error::is_retryable),
/// like a 503.
pub(crate) fn classify_unanswered(e: reqwest::Error) -> Error {
    if e.is_timeout() || e.is_connect() || !connection_lost(&e) {
        return classify(e);
    }
    Error::Transport(TransportError::unanswered(e))
}

/// Whether a cause of `e` is a connection that ended under the request:
/// the peer closed it before the whole answer (hyper's incomplete message),
/// hyper gave up on it (closed, canceled), or the network reset it.
fn connection_lost(e: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind;
    std::iter::successors(Some(e), |e| e.source()).any(|cause| {
        if let Some(e) = cause.downcast_ref::<hyper::Error>() {
            return e.is_incomplete_message() || e.is_closed() || e.is_canceled();
        }
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| {
            matches!(
                e.kind(),
                ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
            )
        })
    })
}

/// W3C Trace Context out (feature `opentelemetry`).
#[cfg(feature = "opentelemetry")]
mod trace_context {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;

    /// `request` with `traceparent` (and `tracestate`, when not empty)
    /// naming `span`, the SDK's span of the call, when it is an
    /// OpenTelemetry span (the subscriber has tracing-opentelemetry's
    /// layer); unchanged otherwise. Written by hand rather than through a
    /// propagator: the W3C format is the contract with the server,
    /// whatever global propagator the application set.
    pub(super) fn inject(
        request: reqwest::RequestBuilder,
        span: &tracing::Span,
    ) -> reqwest::RequestBuilder {
        let cx = span.context();
        let otel = cx.span();
        let sc = otel.span_context();
        if !sc.is_valid() {
            return request;
        }
        let parent = format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        );
        let request = request.header("traceparent", parent);
        let state = sc.trace_state().header();
        if state.is_empty() {
            request
        } else {
            request.header("tracestate", state)
        }
    }
}

#[cfg(test)]
mod tests;
