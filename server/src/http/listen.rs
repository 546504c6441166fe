//! Listening to the merchant's changes (`shipctl listen`): the stream of
//! signed deliveries as Server-Sent Events, and the listener signing key.
//!
//! These routes take the merchant's API key or a dashboard session: a
//! listener sees only what the API key can already list, and `shipctl`
//! uses whichever its profile holds.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{FromRef, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use axum::{Json, Router};
use futures_util::{Stream, StreamExt as _, stream};
use shipment_sdk::model::{ListenerDelivery, MerchantId, SigningKey};

use super::ApiError;
use super::extract::{API_KEY_HEADER, authenticate_key};
use super::params::Problems;
use crate::app::AppState;
use crate::app::auth::Session;
use crate::app::listen::{self, Credential};
use crate::domain::ids::EventId;

/// A comment is sent this often on a quiet stream, so proxies and the
/// server's own idle time-out (60 s) see a live connection, and a listener
/// notices a dead one.
pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/webhooks/listen", get(listen)).route(
        "/webhooks/listener-signing-key",
        get(get_listener_signing_key).post(rotate_listener_signing_key),
    )
}

/// The merchant behind an API key (`X-API-KEY`) or a dashboard session
/// (`Authorization: Bearer`), whichever the request carries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caller {
    merchant_id: MerchantId,
    /// The key or session; a stream lasts as long as it works.
    credential: Credential,
}

impl<S: Send + Sync> FromRequestParts<S> for Caller
where
    AppState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let (merchant_id, credential) = if parts.headers.contains_key(API_KEY_HEADER) {
            let owner = authenticate_key::<MerchantId>(parts, &AppState::from_ref(state)).await?;
            (owner.owner_id, Credential::ApiKey(owner.key_id))
        } else if parts.headers.contains_key(header::AUTHORIZATION) {
            let session = Session::from_request_parts(parts, state).await?;
            (session.merchant_id, Credential::Session(session.id))
        } else {
            return Err(ApiError::unauthenticated(
                "send the merchant's API key (X-API-KEY) or a dashboard session \
                 (Authorization: Bearer ...)",
            ));
        };
        Ok(Caller {
            merchant_id,
            credential,
        })
    }
}

/// `Last-Event-ID`: the id of the last event a reconnecting client saw.
fn last_event_id(headers: &HeaderMap) -> Result<Option<EventId>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|id| *id >= 0)
        .map(|id| Some(EventId::new(id)))
        .ok_or_else(|| {
            ApiError::invalid_identifier(
                "Last-Event-ID must be the id of an event of this stream (a whole number)",
            )
            .with_field("Last-Event-ID")
        })
}

#[utoipa::path(
    get,
    path = "/webhooks/listen",
    tag = "listen",
    summary = "Stream the merchant's changes as signed deliveries (Server-Sent Events)",
    description = "Every change of the merchant's shipments while the stream is open, as a \
                   webhook delivery carries it, signed with the merchant's listener signing \
                   key (made on the first connection). The first event is `ready`, whose data \
                   is the signing key and whose `id` is where the stream starts; then one \
                   `delivery` event per change, whose data is a `ListenerDelivery`, in version \
                   order per shipment; a comment every 15 s keeps the connection alive. An \
                   event's `id` is the change's listen position, which grows in the order \
                   changes reach listeners (on every server process sharing the database), \
                   so a stream's ids always increase, and a change has the same id on every \
                   stream. The server never connects to the listener: `shipctl listen \
                   --forward-to URL` makes the local POST. Nothing is kept for a listener \
                   that is not connected; one that reconnects with `Last-Event-ID` (the `id` \
                   of the last event seen, `ready` included) first gets every change after \
                   it from the last hour, on any server process, and never misses one; at \
                   most 1,000, after which the stream ends so that the listener resumes after \
                   the last. The stream ends when the server stops, when the listener signing \
                   key is replaced (through any server process: within 1 s), when the server \
                   process may have missed changes (its notification connection to \
                   PostgreSQL was lost), or when the listener falls 4,096 events behind \
                   (reconnect); and when the API key or session it was opened with stops \
                   working (the key deleted, the session signed out or expired): at once on \
                   the server process that revoked it, within 1 s on every other (a \
                   reconnection is then 401). At most 16 listeners per merchant and server \
                   process (429); 503 while the server process cannot follow changes.",
    params(("Last-Event-ID" = Option<i64>, Header, nullable = false, minimum = 0,
            description = "Resume after this event (the `id` of the last event seen, \
                           `ready` included)")),
    security(("api_key" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "The event stream: `ready` (data: SigningKey), then \
                                      `delivery` events (data: ListenerDelivery)",
         content_type = "text/event-stream", body = ListenerDelivery),
        Problems
    )
)]
async fn listen(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let after = last_event_id(&headers)?;
    let (key, start, feed) =
        listen::connect(&state, caller.merchant_id, caller.credential, after).await?;
    // Its id is where the stream starts: a client that resumes from it
    // (having seen no delivery yet) misses nothing.
    let ready = Event::default()
        .id(start.to_string())
        .event("ready")
        .json_data(&key)
        .map_err(|e| ApiError::internal(&e))?;
    let deliveries = stream::unfold(feed, |mut feed| async move {
        let event = feed.next().await?;
        let sse = Event::default()
            .id(event.id.to_string())
            .event("delivery")
            .json_data(&event.delivery)
            .expect("deliveries serialize");
        Some((sse, feed))
    });
    let events = stream::once(async { ready })
        .chain(deliveries)
        .map(Ok::<_, Infallible>);
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

#[utoipa::path(
    get,
    path = "/webhooks/listener-signing-key",
    tag = "listen",
    summary = "The key that signs the listener stream's deliveries",
    description = "The merchant's listener signing key, the same on every call until it is \
                   replaced (so a local app's configuration stays valid across `shipctl \
                   listen` runs). 404 until the first listener connected or one was made \
                   with POST.",
    security(("api_key" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "The key", body = SigningKey),
        Problems
    )
)]
async fn get_listener_signing_key(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<SigningKey>, ApiError> {
    listen::listener_key(&state, caller.merchant_id)
        .await?
        .map(Json)
        .ok_or_else(|| {
            ApiError::not_found(
                "you have no listener signing key yet: `shipctl listen` makes one, or POST \
                 /webhooks/listener-signing-key",
            )
        })
}

#[utoipa::path(
    post,
    path = "/webhooks/listener-signing-key",
    tag = "listen",
    summary = "Make or replace the listener signing key",
    description = "A new listener signing key; the previous one stops signing at once: the \
                   listeners connected to this server process are disconnected at once, and \
                   those on every other process sharing the database within 1 s (they \
                   reconnect with the new key).",
    security(("api_key" = []), ("bearer" = [])),
    responses(
        (status = 201, description = "The new key", body = SigningKey),
        Problems
    )
)]
async fn rotate_listener_signing_key(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<(StatusCode, Json<SigningKey>), ApiError> {
    let key = listen::rotate_listener_key(&state, caller.merchant_id).await?;
    Ok((StatusCode::CREATED, Json(key)))
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue};

    use super::{EventId, last_event_id};

    #[test]
    fn last_event_id_is_a_whole_number_or_absent() {
        let mut headers = HeaderMap::new();
        assert_eq!(last_event_id(&headers).unwrap(), None);
        headers.insert("last-event-id", HeaderValue::from_static(" 42 "));
        assert_eq!(last_event_id(&headers).unwrap(), Some(EventId::new(42)));
        for bad in ["-1", "x", "1.5", ""] {
            headers.insert("last-event-id", HeaderValue::from_static(bad));
            assert!(last_event_id(&headers).is_err(), "{bad:?}");
        }
    }
}
