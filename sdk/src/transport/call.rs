//! What a call is before it is sent: its route, query and body, its
//! credential, and whether it is safe to send again.
//!
//! Whether a call may be repeated is decided where the call is made (the
//! resource knows whether the service deduplicates it), not where it is
//! sent: the retry loop only reads [`Retry`], so a call that could act twice
//! is never retried by accident.

use std::fmt;

use reqwest::Method;
use reqwest::header::HeaderValue;
use serde::Serialize;

use crate::error::{Error, Result};

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
    pub(super) method: Method,
    /// The route as documented (`/shipments/{code}`), for tracing.
    pub(super) template: &'static str,
    pub(super) path: String,
    pub(super) query: Vec<(String, String)>,
    pub(super) body: Option<Vec<u8>>,
    pub(super) retry: Retry,
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

    /// Drops a query parameter, if the call has it.
    pub fn remove_param(mut self, key: &str) -> Call {
        self.query.retain(|(k, _)| k != key);
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
