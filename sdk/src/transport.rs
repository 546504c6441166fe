//! Sending one call: authentication, the retry loop, the tracing span, and
//! turning answers into values or [`Error`]s. Shared by [`crate::Client`]
//! and [`crate::DashboardClient`].

mod answer;
mod call;
mod options;

use std::fmt;
use std::sync::Arc;

use reqwest::Url;
use reqwest::header::{self, HeaderName};
use serde::de::DeserializeOwned;
use tracing::Instrument as _;
use tracing::field::Empty;

pub(crate) use self::answer::classify;
use self::answer::{Answer, Reply, classify_unanswered, error_answer, request_id_of};
pub(crate) use self::call::{Auth, Call, Retry};
pub(crate) use self::options::{HttpOptions, normalize_base_url};
use crate::error::{Error, Result};
use crate::hooks::IncomingResponse;
use crate::model::Page;
use crate::retry::RetryPolicy;

const API_KEY_HEADER: HeaderName = HeaderName::from_static("x-api-key");
const IDEMPOTENCY_KEY_HEADER: HeaderName = HeaderName::from_static("idempotency-key");
const KEY_EXPIRY_WARNING_HEADER: HeaderName = HeaderName::from_static("x-key-expiry-warning");

/// The longest `X-Key-Expiry-Warning` kept: the service's sentence is
/// about 70 characters; a longer value is cut, never refused, since a
/// warning must not fail a call.
const MAX_KEY_EXPIRY_WARNING: usize = 200;

/// How to fetch another page of a paged list: the call of the first page,
/// sent again with another `page`. A [`Page`] fetched by the SDK carries
/// one, which is what lets it stream the pages after it.
#[derive(Clone)]
pub(crate) struct NextPage {
    transport: Transport,
    call: Call,
}

/// Which page [`NextPage::fetch`] fetches.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// The page after a cursor a page gave (`next_cursor`).
    Cursor(String),
    /// Page number `n`, from 1.
    Page(u32),
}

impl NextPage {
    /// Fetches the page `step` names with the same query (and filters),
    /// ready to fetch the one after it in turn. A cursor replaces the page
    /// number: the server refuses both together.
    pub async fn fetch<T: DeserializeOwned>(&self, step: Step) -> Result<Page<T>> {
        let call = match step {
            Step::Cursor(cursor) => self
                .call
                .clone()
                .remove_param("page")
                .set_param("cursor", cursor),
            Step::Page(page) => self.call.clone().set_param("page", page),
        };
        let fetched: Page<T> = self.transport.json(call.clone()).await?;
        Ok(fetched.with_next(NextPage {
            transport: self.transport.clone(),
            call,
        }))
    }

    /// Whether the page this came with was fetched by a cursor.
    pub fn by_cursor(&self) -> bool {
        self.call.query.iter().any(|(k, _)| k == "cursor")
    }
}

/// `GET /shipments?page_size=2&status=delivered`: the call without its
/// credentials, its page (or cursor) or its body.
impl fmt::Debug for NextPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.call.method, self.call.path)?;
        let mut sep = '?';
        for (k, v) in self
            .call
            .query
            .iter()
            .filter(|(k, _)| k != "page" && k != "cursor")
        {
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
    /// The last `X-Key-Expiry-Warning` of an answer to this credential.
    key_expiry_warning: std::sync::Mutex<Option<String>>,
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
                key_expiry_warning: std::sync::Mutex::default(),
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
                // Another credential: what the first one was warned of is
                // not this one's.
                key_expiry_warning: std::sync::Mutex::default(),
            }),
        }
    }

    /// The last `X-Key-Expiry-Warning` an answer carried, if any.
    pub fn key_expiry_warning(&self) -> Option<String> {
        self.inner
            .key_expiry_warning
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Keeps the answer's `X-Key-Expiry-Warning`, if it has one, and runs
    /// the key-expiry hooks with it. The text is the service's: cut to a
    /// bounded length, and a value that is not text is ignored.
    fn note_key_expiry_warning(&self, headers: &header::HeaderMap) {
        let Some(warning) = headers
            .get(KEY_EXPIRY_WARNING_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
        else {
            return;
        };
        let mut end = warning.len().min(MAX_KEY_EXPIRY_WARNING);
        while !warning.is_char_boundary(end) {
            end -= 1;
        }
        let warning = &warning[..end];
        tracing::warn!(warning, "the API key expires soon");
        *self
            .inner
            .key_expiry_warning
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(warning.to_owned());
        for hook in &self.inner.options.hooks.key_expiry {
            hook(warning);
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
        self.note_key_expiry_warning(response.headers());
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
