//! Webhooks of a merchant: registered (the URL checked, the signing key
//! shown once), listed, switched on and off, deleted, their delivery log
//! and its health (the dashboard's charts, the webhooks failing now),
//! redelivery on request, and a shipment's delivery history; and the
//! merchant's shipment signing key.

use chrono::{DateTime, Utc};
use shipment_sdk::model::{
    Delivery, DeliveryId, MerchantId, Page, RedeliveryQueued, ShipmentCode, SigningKey, Webhook,
    WebhookId, WebhookUrl,
};

use super::{AppState, Error, Result};
use crate::domain::FieldError;
use crate::domain::delivery_health::{self, Charts, HourCount, Span};
use crate::domain::ids::EventId;
use crate::domain::keys;
use crate::domain::validation::webhook_url;
use crate::store::StoreError;
use crate::store::outbox::{BulkRedelivery, Redelivery, RedeliveryBudget};
use crate::store::webhooks::{DeliveryRecord, WebhookInfo};
use crate::webhooks::guard;

fn view(w: WebhookInfo) -> Webhook {
    Webhook::new(WebhookId::new(w.id), w.url, w.active, w.created_at)
}

fn delivery(d: DeliveryRecord) -> Result<Delivery> {
    let code = ShipmentCode::parse(&d.shipment_code)
        .map_err(|e| StoreError::Corrupt(format!("delivery {}: {e}", d.id)))?;
    let mut out = Delivery::new(
        DeliveryId::new(d.id),
        code,
        d.version,
        d.url,
        d.duration_ms,
        d.delivered_at,
    );
    out.success = d.error.is_none();
    out.status_code = d.status_code;
    out.error = d.error;
    out.webhook_id = d.webhook_id.map(WebhookId::new);
    out.redelivery_of = d.redelivery_of.map(DeliveryId::new);
    Ok(out)
}

/// A new signing key (`whsec_` + 32 base62), and the same sealed with the
/// data key for storing: every kind of signing key (webhooks', the shipment
/// key, the listener key) is made this way.
pub(crate) fn new_signing_key(state: &AppState) -> (keys::Secret, String) {
    let key = keys::random_token(keys::SIGNING_KEY_PREFIX);
    let sealed = state.data_key.seal(key.expose());
    (key, sealed)
}

/// The merchant's webhooks.
pub(crate) async fn list_webhooks(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<Vec<Webhook>> {
    let data = state.store.webhooks(merchant_id).await?;
    Ok(data.into_iter().map(view).collect())
}

/// Checks a webhook target: a [`WebhookUrl`] (HTTPS, no credentials),
/// and (unless private targets are allowed) a host that resolves to a
/// public address.
pub(crate) async fn check_webhook_url(
    state: &AppState,
    field: &str,
    raw: &str,
) -> Result<WebhookUrl> {
    let url = webhook_url(field, raw)?;
    check_target(state, field, &url).await?;
    Ok(url)
}

/// Refuses a target the server may not deliver to, with one message
/// whatever the reason (the guard logs it): telling "does not resolve"
/// from "private" would let a merchant probe internal names.
pub(crate) async fn check_target(state: &AppState, field: &str, url: &WebhookUrl) -> Result<()> {
    guard::check_target(url.as_url(), state.allow_private_webhook_targets)
        .await
        .map_err(|why| {
            FieldError::invalid(field, format!("`{field}` cannot be used: {why}")).into()
        })
}

/// Registers a webhook for the merchant after checking its URL; returns it
/// with its signing key (shown once; stored sealed). A URL the merchant
/// has already registered is 409 `webhook_url_taken`.
pub(crate) async fn register_webhook(
    state: &AppState,
    merchant_id: MerchantId,
    url: &str,
) -> Result<(Webhook, keys::Secret)> {
    let url = check_webhook_url(state, "url", url).await?;
    let (signing_key, sealed) = new_signing_key(state);
    match state
        .store
        .create_webhook(merchant_id, url.as_str(), &sealed)
        .await
    {
        Ok(w) => Ok((view(w), signing_key)),
        Err(StoreError::WebhookUrlTaken) => Err(Error::WebhookUrlTaken),
        Err(e) => Err(e.into()),
    }
}

/// Switches one of the merchant's webhooks on or off.
pub(crate) async fn set_webhook_active(
    state: &AppState,
    merchant_id: MerchantId,
    id: WebhookId,
    active: bool,
) -> Result<Webhook> {
    state
        .store
        .set_webhook_active(merchant_id, id, active)
        .await?
        .map(view)
        .ok_or_else(no_such_webhook)
}

/// Deletes one of the merchant's webhooks.
pub(crate) async fn delete_webhook(
    state: &AppState,
    merchant_id: MerchantId,
    id: WebhookId,
) -> Result<()> {
    if state.store.delete_webhook(merchant_id, id).await? {
        Ok(())
    } else {
        Err(no_such_webhook())
    }
}

/// One of the merchant's webhooks, by id.
pub(crate) async fn get_webhook(
    state: &AppState,
    merchant_id: MerchantId,
    id: WebhookId,
) -> Result<Webhook> {
    state
        .store
        .webhook(merchant_id, id)
        .await?
        .map(view)
        .ok_or_else(no_such_webhook)
}

/// The merchant has no webhook with the id asked for.
pub(crate) fn no_such_webhook() -> Error {
    Error::NotFound("you have no webhook with this id".into())
}

/// One of the merchant's webhooks and a page of its delivery log, newest
/// first; `None` when the merchant has no such webhook.
pub(crate) async fn delivery_log(
    state: &AppState,
    merchant_id: MerchantId,
    id: WebhookId,
    page: u32,
    page_size: u32,
) -> Result<Option<(Webhook, Page<Delivery>)>> {
    let Some(webhook) = state.store.webhook(merchant_id, id).await? else {
        return Ok(None);
    };
    let offset = u64::from(page - 1) * u64::from(page_size);
    let (rows, total) = state
        .store
        .webhook_deliveries(id, page_size, offset)
        .await?;
    Ok(Some((
        view(webhook),
        Page::new(
            rows.into_iter().map(delivery).collect::<Result<_>>()?,
            page,
            page_size,
            total,
        ),
    )))
}

/// Whether the merchant has a shipment signing key.
pub(crate) async fn has_signing_key(state: &AppState, merchant_id: MerchantId) -> Result<bool> {
    Ok(state
        .store
        .shipment_signing_key(merchant_id)
        .await?
        .is_some())
}

/// Creates or replaces the merchant's shipment signing key; the new key
/// is returned once (stored sealed) and the old one stops working.
pub(crate) async fn rotate_signing_key(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<SigningKey> {
    let (signing_key, sealed) = new_signing_key(state);
    let created_at = state
        .store
        .set_shipment_signing_key(merchant_id, &sealed)
        .await?;
    Ok(SigningKey::new(signing_key, created_at))
}

/// The most redeliveries one "redeliver failures" call queues. Each is an
/// outbox row written in one transaction, and the dispatcher works through
/// them alongside every live change, so a bound keeps one call from
/// flooding the outbox (and the receiver that just came back). When more
/// failures match, the answer says `truncated`, and calling again queues
/// the rest: changes whose redelivery is still waiting are skipped. The
/// merchant's budget per minute (`--redeliveries-per-minute`) bounds it
/// further.
pub(crate) const MAX_REDELIVERIES_PER_CALL: u32 = 10_000;

/// Sends delivery `delivery_id` of the merchant's webhook `id` again,
/// through the outbox: the same snapshot (body bytes and version) to the
/// webhook's URL, signed with its current key, even if the webhook is
/// disabled now (a person asked for it). A successful delivery may be
/// sent again too. The new attempt is logged with `redelivery_of`.
///
/// Bounded, because each one is a POST to an address the merchant chose:
/// while a redelivery of the same change to the same webhook waits, another
/// is refused ([`Error::RedeliveryWaiting`], naming it), and beyond the
/// merchant's budget of redelivered changes per minute
/// ([`Error::RedeliveryBudget`]).
pub(crate) async fn redeliver(
    state: &AppState,
    merchant_id: MerchantId,
    id: WebhookId,
    delivery_id: DeliveryId,
) -> Result<RedeliveryQueued> {
    get_webhook(state, merchant_id, id).await?;
    let budget = state.redelivery_budget;
    let trace = crate::telemetry::current_traceparent();
    match state
        .store
        .redeliver(merchant_id, id, delivery_id, budget, trace.as_deref())
        .await?
    {
        Redelivery::Queued(_) => {
            state.outbox_signal.notify_one();
            Ok(RedeliveryQueued::new(1, false))
        }
        Redelivery::NoSuchDelivery => Err(Error::NotFound(
            "this webhook has no delivery with this id".into(),
        )),
        Redelivery::Waiting(w) => Err(Error::RedeliveryWaiting(format!(
            "a redelivery of {} version {} to webhook {id} is already waiting: {} (of delivery \
             {}, queued at {}); it is sent once, and may be asked for again after it has been \
             attempted",
            w.shipment_code,
            w.version,
            // The delivery id the dispatcher will send it under.
            crate::webhooks::ids::delivery_id(EventId::new(w.outbox_id), Some(id)),
            w.redelivery_of,
            shipment_sdk::model::timestamp::format(&w.queued_at),
        ))),
        Redelivery::OverBudget(wait) => Err(over_budget(budget, wait)),
    }
}

/// A bulk redelivery's outcome: what was queued, and, when the budget
/// (not the limit of one call) left changes out, how long until it has
/// room again (the answer's `Retry-After`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BulkQueued {
    /// The answer's body.
    pub queued: RedeliveryQueued,
    /// Seconds until the budget has room again, when it cut the call.
    pub retry_after_secs: Option<u64>,
}

/// Sends again, through the outbox, every change whose delivery to the
/// merchant's webhook `id` failed between `since` and `until` (now when
/// `None`), both included, and has not been delivered to it successfully
/// since: once per change however many attempts failed (naming the latest
/// failed one), oldest first, at most [`MAX_REDELIVERIES_PER_CALL`] and at
/// most what the merchant's budget per minute has left. Changes whose
/// redelivery is still waiting are skipped, so calling again never queues
/// one twice. When changes match and the budget has no room left at all:
/// [`Error::RedeliveryBudget`].
pub(crate) async fn redeliver_failures(
    state: &AppState,
    merchant_id: MerchantId,
    id: WebhookId,
    since: DateTime<Utc>,
    until: Option<DateTime<Utc>>,
) -> Result<BulkQueued> {
    // An explicit range must make sense; a `since` a little ahead of the
    // server's clock (with `until` left to now) matches nothing, no error.
    if until.is_some_and(|until| until < since) {
        return Err(FieldError::invalid(
            "failed_until",
            "`failed_until` must not be before `failed_since`",
        )
        .into());
    }
    let until = until.unwrap_or_else(crate::store::now);
    get_webhook(state, merchant_id, id).await?;
    let budget = state.redelivery_budget;
    match state
        .store
        .redeliver_failures(
            merchant_id,
            id,
            since..=until,
            MAX_REDELIVERIES_PER_CALL,
            budget,
            crate::telemetry::current_traceparent().as_deref(),
        )
        .await?
    {
        BulkRedelivery::Queued {
            queued,
            truncated,
            retry_after,
        } => {
            if queued > 0 {
                state.outbox_signal.notify_one();
            }
            Ok(BulkQueued {
                queued: RedeliveryQueued::new(queued, truncated),
                retry_after_secs: retry_after.map(|wait| wait.as_secs()),
            })
        }
        BulkRedelivery::OverBudget(wait) => Err(over_budget(budget, wait)),
    }
}

/// The merchant has used its budget; room comes after `wait`.
fn over_budget(budget: RedeliveryBudget, wait: std::time::Duration) -> Error {
    Error::RedeliveryBudget {
        per_minute: budget.get(),
        retry_after_secs: wait.as_secs().max(1),
    }
}

/// A page of the delivery history of the merchant's shipment `code`:
/// every attempt to each of its webhooks and to the shipment's own
/// `webhook_url`, newest first. Not found when the code is none of the
/// merchant's shipments (another merchant's is not told apart).
pub(crate) async fn shipment_deliveries(
    state: &AppState,
    merchant_id: MerchantId,
    code: &ShipmentCode,
    page: u32,
    page_size: u32,
) -> Result<Page<Delivery>> {
    let owned = state
        .store
        .shipment(code.as_str())
        .await?
        .is_some_and(|s| s.merchant_id == merchant_id.get());
    if !owned {
        return Err(Error::NotFound(format!(
            "you have no shipment with the code {code}"
        )));
    }
    let offset = u64::from(page - 1) * u64::from(page_size);
    let (rows, total) = state
        .store
        .shipment_deliveries(merchant_id, code.as_str(), page_size, offset)
        .await?;
    Ok(Page::new(
        rows.into_iter().map(delivery).collect::<Result<_>>()?,
        page,
        page_size,
        total,
    ))
}

/// A webhook's delivery health, for its dashboard page: its attempts in
/// the last 24 hours and 7 days, its latest attempt and its latest failure.
#[derive(Debug, Clone)]
pub(crate) struct DeliveryHealth {
    /// The hourly and daily bars, from the delivery log.
    pub charts: Charts,
    /// The latest attempt, if any: whether the webhook is failing now.
    pub latest: Option<Delivery>,
    /// The latest failed attempt, if any.
    pub last_failure: Option<Delivery>,
}

/// The delivery health of webhook `id` at `now`, counted from its delivery
/// log. Empty (no attempts) for a webhook that is not the merchant's: the
/// store's queries are bounded by merchant as well as by webhook, and the
/// page asks for its webhook first ([`delivery_log`]).
pub(crate) async fn delivery_health(
    state: &AppState,
    merchant_id: MerchantId,
    id: WebhookId,
    now: DateTime<Utc>,
) -> Result<DeliveryHealth> {
    let span = Span::at(now);
    let counts: Vec<HourCount> = state
        .store
        .hourly_delivery_counts(merchant_id, id, span.since, span.until)
        .await?
        .into_iter()
        .map(|c| HourCount {
            hour: c.hour,
            succeeded: u64::try_from(c.succeeded).unwrap_or(0),
            failed: u64::try_from(c.failed).unwrap_or(0),
        })
        .collect();
    let (latest, last_failure) = state.store.latest_deliveries(merchant_id, id).await?;
    Ok(DeliveryHealth {
        charts: delivery_health::charts(span, &counts),
        latest: latest.map(delivery).transpose()?,
        last_failure: last_failure.map(delivery).transpose()?,
    })
}

/// The most webhooks failing now that the overview lists; it says when
/// there are more (a merchant may register any number of webhooks).
pub const MAX_FAILING_SHOWN: u32 = 20;

/// The merchant's active webhooks whose latest attempt failed, each as that
/// attempt, by webhook id: at most [`MAX_FAILING_SHOWN`], and whether more
/// are failing.
pub(crate) async fn failing_webhooks(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<(Vec<Delivery>, bool)> {
    let mut rows = state
        .store
        .failing_webhooks(merchant_id, MAX_FAILING_SHOWN + 1)
        .await?;
    let more = rows.len() > MAX_FAILING_SHOWN as usize;
    rows.truncate(MAX_FAILING_SHOWN as usize);
    Ok((rows.into_iter().map(delivery).collect::<Result<_>>()?, more))
}
