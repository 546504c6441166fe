//! `client.listener()`: the merchant's changes as they happen, each as a
//! signed delivery (`GET /webhooks/listen`), and the listener signing key.
//! What `shipctl listen --forward-to` is built on.

use std::pin::Pin;
use std::task::{Context, Poll};

use eventsource_stream::{Event, EventStreamError, Eventsource as _};
use futures_core::Stream;
use futures_util::StreamExt;
use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderValue};

use crate::error::{Error, Result};
use crate::model::{ListenerDelivery, SigningKey};
use crate::transport::{Call, Transport, classify};

/// The longest event a [`ListenerStream`] reads: 1 MiB, comments and field
/// names included (the service's largest is a shipment of a few KiB). A
/// longer one, such as a line that never ends, is an [`Error::Stream`]
/// that ends the stream and drops its connection, so what a stream holds
/// in memory stays bounded.
pub const MAX_EVENT_BYTES: usize = 1 << 20;

/// The listener endpoints; get one with [`Client::listener`](crate::Client::listener)
/// (API key) or [`DashboardClient::listener`](crate::DashboardClient::listener)
/// (session): both see the same merchant's changes.
#[derive(Debug, Clone, Copy)]
pub struct Listener<'a> {
    transport: &'a Transport,
}

impl<'a> Listener<'a> {
    pub(crate) fn new(transport: &'a Transport) -> Self {
        Listener { transport }
    }

    /// The merchant's listener signing key (`GET
    /// /webhooks/listener-signing-key`), or `None` when it has none yet
    /// (the first [`connect`](Self::connect) makes one). The key stays the
    /// same until [`rotate_signing_key`](Self::rotate_signing_key).
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// match client.listener().signing_key().await? {
    ///     Some(key) => println!("{}", key.signing_key.expose()),
    ///     None => println!("no listener has connected yet"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn signing_key(&self) -> Result<Option<SigningKey>> {
        let path = "/webhooks/listener-signing-key";
        match self.transport.json(Call::get(path, path)).await {
            Ok(key) => Ok(Some(key)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Makes a new listener signing key (`POST
    /// /webhooks/listener-signing-key`); the old one stops signing at once
    /// and connected listeners are disconnected (they get the new key when
    /// they connect again).
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let key = client.listener().rotate_signing_key().await?;
    /// println!("configure your local app with {}", key.signing_key.expose());
    /// # Ok(()) }
    /// ```
    pub async fn rotate_signing_key(&self) -> Result<SigningKey> {
        let path = "/webhooks/listener-signing-key";
        self.transport
            .json(Call::new(Method::POST, path, path))
            .await
    }

    /// Opens the stream of the merchant's changes (`GET /webhooks/listen`)
    /// and waits for its `ready` event, which carries the signing key
    /// (made now if the merchant had none).
    ///
    /// With `resume_after` (the [`last_event_id`](ListenerStream::last_event_id)
    /// of a stream that ended), the stream starts with the changes after
    /// that event from the last hour that this stream missed. A stream
    /// ends when the server stops, when the key is replaced or when it
    /// falls far behind: connect again, resuming.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let mut stream = client.listener().connect(None).await?;
    /// // What a receiver checks `delivery.signature` with (`webhook-verify`).
    /// let key = stream.signing_key().signing_key.clone();
    /// while let Some(event) = stream.next().await {
    ///     let delivery = event?.delivery;
    ///     println!("{} is now version {}", delivery.shipment_code, delivery.version);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn connect(&self, resume_after: Option<i64>) -> Result<ListenerStream> {
        let path = "/webhooks/listen";
        let mut headers = HeaderMap::new();
        if let Some(id) = resume_after {
            headers.insert("last-event-id", HeaderValue::from(id));
        }
        let response = self
            .transport
            .open_stream(&Call::get(path, path), headers)
            .await?;
        let request_id = response
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // The body as it comes, chunk by chunk (without reqwest's `stream`
        // feature, for one loop), each checked against the event limit
        // before the parser buffers it. Past the limit, the response (and
        // so the connection) is dropped at once.
        let chunks = futures_util::stream::unfold(
            Some((response, EventLimit::default())),
            |state| async move {
                let (mut response, mut limit) = state?;
                match response.chunk().await {
                    Ok(Some(chunk)) => match limit.read(&chunk) {
                        Ok(()) => Some((Ok(chunk), Some((response, limit)))),
                        Err(e) => Some((Err(e), None)),
                    },
                    Ok(None) => None,
                    Err(e) => Some((Err(ChunkError::Http(e)), Some((response, limit)))),
                }
            },
        );
        let mut events: Events = Box::pin(chunks.eventsource());
        // The first event says the stream is ready, with the key.
        let ready = loop {
            match events.next().await {
                Some(Ok(event)) if event.event == "ready" => break event,
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(stream_error(e)),
                None => {
                    return Err(Error::Stream(
                        "the stream ended before its `ready` event".into(),
                    ));
                }
            }
        };
        let signing_key = decode(&ready, request_id.as_deref())?;
        // The server says where the stream starts (its `ready` event's id):
        // resuming from there misses nothing, though no delivery came yet.
        // A server that does not say leaves where the caller resumed.
        let last_event_id = ready.id.parse::<i64>().ok().or(resume_after);
        Ok(ListenerStream {
            signing_key,
            events,
            request_id,
            last_event_id,
        })
    }
}

type Events =
    Pin<Box<dyn Stream<Item = std::result::Result<Event, EventStreamError<ChunkError>>> + Send>>;

/// Why the body's next chunk did not reach the parser.
#[derive(Debug)]
enum ChunkError {
    /// Reading it failed.
    Http(reqwest::Error),
    /// It made an event longer than [`MAX_EVENT_BYTES`].
    TooLong,
}

impl std::fmt::Display for ChunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkError::Http(e) => e.fmt(f),
            ChunkError::TooLong => f.write_str("an event is longer than 1 MiB"),
        }
    }
}

/// Counts the bytes of the event being read, across chunks: an event ends
/// at an empty line, and a line at CRLF, LF or CR (as Server-Sent Events
/// define them).
#[derive(Debug, Default)]
struct EventLimit {
    /// Bytes of the current event, line ends left out.
    event: usize,
    /// Bytes of the current line.
    line: usize,
    /// The last byte was a CR: an LF right after it ends the same line.
    after_cr: bool,
}

impl EventLimit {
    fn read(&mut self, chunk: &[u8]) -> std::result::Result<(), ChunkError> {
        for &b in chunk {
            let crlf = b == b'\n' && self.after_cr;
            self.after_cr = b == b'\r';
            match b {
                _ if crlf => {}
                b'\n' | b'\r' if self.line == 0 => self.event = 0,
                b'\n' | b'\r' => self.line = 0,
                _ => {
                    self.line += 1;
                    self.event += 1;
                    if self.event > MAX_EVENT_BYTES {
                        return Err(ChunkError::TooLong);
                    }
                }
            }
        }
        Ok(())
    }
}

fn stream_error(e: EventStreamError<ChunkError>) -> Error {
    match e {
        EventStreamError::Transport(ChunkError::Http(e)) => classify(e),
        EventStreamError::Transport(ChunkError::TooLong) => Error::Stream(format!(
            "an event is longer than {} MiB; the connection was dropped",
            MAX_EVENT_BYTES >> 20
        )),
        EventStreamError::Utf8(e) => Error::Stream(format!("not UTF-8: {e}")),
        EventStreamError::Parser(e) => Error::Stream(e.to_string()),
    }
}

fn decode<T: serde::de::DeserializeOwned>(event: &Event, request_id: Option<&str>) -> Result<T> {
    serde_json::from_str(&event.data).map_err(|source| Error::Decode {
        status: 200,
        request_id: request_id.map(str::to_owned),
        source,
    })
}

/// One change from the stream: the event's id (give the last one to
/// [`Listener::connect`] to resume) and the delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListenerEvent {
    /// The event id, increasing with the changes (not strictly in the
    /// order they arrive across shipments).
    pub id: i64,
    /// The delivery: body, signature and delivery id.
    pub delivery: ListenerDelivery,
}

/// An open stream of the merchant's changes: read it with
/// [`next`](Self::next) or as a [`Stream`].
pub struct ListenerStream {
    signing_key: SigningKey,
    events: Events,
    request_id: Option<String>,
    last_event_id: Option<i64>,
}

impl std::fmt::Debug for ListenerStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerStream")
            .field("last_event_id", &self.last_event_id)
            .field("request_id", &self.request_id)
            .finish_non_exhaustive()
    }
}

impl ListenerStream {
    /// The key every delivery of this stream is signed with.
    pub fn signing_key(&self) -> &SigningKey {
        &self.signing_key
    }

    /// The id of the last change received (or, before the first, where the
    /// stream started: the id of its `ready` event), for
    /// [`Listener::connect`] after the stream ended.
    pub fn last_event_id(&self) -> Option<i64> {
        self.last_event_id
    }

    /// The next change; `None` when the stream ended (connect again,
    /// resuming), an error when it broke off or sent something malformed
    /// (an event longer than [`MAX_EVENT_BYTES`] is an [`Error::Stream`],
    /// after which the stream has ended and its connection is closed).
    pub async fn next(&mut self) -> Option<Result<ListenerEvent>> {
        StreamExt::next(self).await
    }
}

impl Stream for ListenerStream {
    type Item = Result<ListenerEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            let event = match self.events.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(stream_error(e)))),
                Poll::Ready(Some(Ok(event))) => event,
            };
            // Other kinds of event are for newer clients.
            if event.event != "delivery" {
                continue;
            }
            let Ok(id) = event.id.parse::<i64>() else {
                return Poll::Ready(Some(Err(Error::Stream(format!(
                    "a delivery event has the id `{}`, not a number",
                    event.id
                )))));
            };
            let delivery = match decode(&event, self.request_id.as_deref()) {
                Ok(delivery) => delivery,
                Err(e) => return Poll::Ready(Some(Err(e))),
            };
            self.last_event_id = Some(id);
            return Poll::Ready(Some(Ok(ListenerEvent { id, delivery })));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `parts` as chunks; the event's size after each.
    fn sizes(parts: &[&str]) -> Vec<usize> {
        let mut limit = EventLimit::default();
        parts
            .iter()
            .map(|part| {
                limit.read(part.as_bytes()).unwrap();
                limit.event
            })
            .collect()
    }

    #[test]
    fn an_event_ends_at_an_empty_line_with_any_line_ending() {
        assert_eq!(sizes(&["data: a\n", "data: b\n", "\n"]), [7, 14, 0]);
        assert_eq!(sizes(&["data: a\r\n\r\n", "x"]), [0, 1]);
        assert_eq!(sizes(&["data: a\r\r", "x"]), [0, 1]);
        // A CRLF split between chunks is one line end, not an empty line.
        assert_eq!(sizes(&["data: a\r", "\ndata: b"]), [7, 14]);
        assert_eq!(sizes(&["data: a\r", "\n\r", "\n"]), [7, 0, 0]);
    }

    #[test]
    fn the_limit_is_per_event_across_chunks() {
        let mut limit = EventLimit::default();
        let half = "x".repeat(MAX_EVENT_BYTES / 2);
        limit.read(half.as_bytes()).unwrap();
        limit.read(half.as_bytes()).unwrap();
        assert!(matches!(limit.read(b"x"), Err(ChunkError::TooLong)));

        let mut limit = EventLimit::default();
        for _ in 0..4 {
            limit.read(half.as_bytes()).unwrap();
            limit.read(b"\n\n").unwrap();
        }
    }
}
