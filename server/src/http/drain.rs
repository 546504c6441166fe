//! Reads what a request's handler left of its body, up to a bound, before
//! the answer goes out, so a client that writes its whole body before it
//! reads gets the answer (a 413 for an oversize body, a 401 for a create
//! with a wrong key) instead of a reset connection.
//!
//! An answer sent while the client is still writing is followed by hyper
//! closing the connection, since the rest of the request cannot be
//! skipped; the client's next writes then meet a closed socket, whose
//! reset throws away the answer waiting unread in the client's buffer.
//! Draining first keeps the connection whole (and usable for the next
//! request). Beyond [`MAX_DRAINED_BYTES`], or past the request time-out,
//! the answer goes out at once with `Connection: close`: such a client
//! may see a reset, and costs the server nothing more.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use hyper::body::{Body as HttpBody, Frame, SizeHint};

use crate::config::{MAX_BODY_BYTES, MAX_DRAINED_BYTES};

/// Whether the request declares a body longer than
/// [`MAX_BODY_BYTES`](crate::config::MAX_BODY_BYTES) (`Content-Length`),
/// which no handler takes: it is answered 413 without running one, and
/// without waiting for a body that a client may be holding back.
pub(crate) fn declares_oversize(headers: &HeaderMap) -> bool {
    declared_length(headers).is_some_and(|n| n > MAX_BODY_BYTES as u64)
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
}

/// The request's body, shared between the handler (through
/// [`Watched`]) and [`drain_unread`], which reads what is left of it once
/// the handler has answered.
#[derive(Default)]
struct Shared {
    body: Option<Body>,
    /// Whether the handler asked for any of it (so hyper has answered a
    /// client's `Expect: 100-continue`, and the client is sending it).
    polled: bool,
    /// The bytes read so far.
    read: u64,
}

/// The body as the handler sees it: the request's, read through the
/// [`Shared`] state.
struct Watched(Arc<Mutex<Shared>>);

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let mut shared = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        shared.polled = true;
        let Some(body) = shared.body.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = Pin::new(body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &frame
            && let Some(data) = frame.data_ref()
        {
            shared.read += data.len() as u64;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        let shared = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        shared.body.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    // What the body limit reads to refuse a declared length at once.
    fn size_hint(&self) -> SizeHint {
        let shared = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        shared
            .body
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

/// The middleware: runs the request, then reads and discards what its
/// handler left of the body (at most [`MAX_DRAINED_BYTES`], within
/// `within`) before answering; when that cannot be done, answers with
/// `Connection: close`. A request without a body costs one check.
pub(crate) async fn drain_unread(req: Request, next: Next, within: Duration) -> Response {
    if req.body().is_end_stream() {
        return next.run(req).await;
    }
    // A client waiting for `100 Continue` sends nothing until the body is
    // read: when the handler never asked for it, nothing is on the way.
    let waits_to_send = req
        .headers()
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let declared = declared_length(req.headers());
    let (parts, body) = req.into_parts();
    let shared = Arc::new(Mutex::new(Shared {
        body: Some(body),
        ..Shared::default()
    }));
    let req = Request::from_parts(parts, Body::new(Watched(shared.clone())));
    let mut response = next.run(req).await;
    // The handler's copy is gone once it has answered, unless it kept the
    // body for later: then it is left to it.
    let Some(shared) = Arc::into_inner(shared) else {
        return response;
    };
    let shared = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
    let Some(body) = shared.body else {
        return response;
    };
    if body.is_end_stream() || (waits_to_send && !shared.polled) {
        return response;
    }
    let left = declared.map(|n| n.saturating_sub(shared.read));
    let drained = match left {
        Some(left) if left > MAX_DRAINED_BYTES => false,
        _ => tokio::time::timeout(within, discard(body))
            .await
            .unwrap_or(false),
    };
    if !drained {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Reads `body` to its end, keeping nothing: whether it ended within
/// [`MAX_DRAINED_BYTES`] without an error.
async fn discard(mut body: Body) -> bool {
    let mut read = 0_u64;
    loop {
        match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            None => return true,
            Some(Err(_)) => return false,
            Some(Ok(frame)) => {
                read += frame.data_ref().map_or(0, |d| d.len() as u64);
                if read > MAX_DRAINED_BYTES {
                    return false;
                }
            }
        }
    }
}
