//! Shipments: create (idempotently), read, list, and every change of the
//! lifecycle, for the merchant and for the courier company.

use chrono::{DateTime, Utc};
use rand::Rng;
use sha2::{Digest, Sha256};
use shipment_sdk::model::{
    ConfirmationCode, CourierId, CreateShipment, DriverId, IdempotencyKey, MerchantId, Page,
    Shipment, ShipmentCode, Status,
};

use super::{AppState, Error, Result};
use crate::cache::listed::ListedShipment;
use crate::domain::actor::Actor;
use crate::domain::fee::{self, total_fee};
use crate::domain::lifecycle::{self, Operation};
use crate::domain::list_query::Listing;
use crate::domain::validation::{NewShipment, courier_text};
use crate::domain::{FieldError, Refusal, confirmation, keys};
use crate::store::now;
use crate::store::shipments::{Created, ShipmentRecord, ShipmentUpdate};

/// What a create answers the merchant: the front ends tell a new shipment
/// from a replay (the same status, but a replay's body is the first
/// answer's, verbatim, and says so in a header).
#[derive(Debug)]
pub(crate) enum CreateOutcome {
    /// A new shipment.
    Created(Box<Shipment>),
    /// The same `Idempotency-Key` and body were seen within the window
    /// (`store::shipments::IDEMPOTENCY_WINDOW`): the first answer's body.
    Replayed(String),
}

/// Reads an `Idempotency-Key` header value.
pub(crate) fn idempotency_key(raw: &[u8]) -> Result<IdempotencyKey> {
    IdempotencyKey::from_bytes(raw)
        .map_err(|e| FieldError::invalid("Idempotency-Key", e.to_string()).into())
}

/// Creates a shipment for the merchant: validated, priced by its linked
/// courier, and (with an idempotency key) at most once per key and body.
pub(crate) async fn create_shipment(
    state: &AppState,
    merchant_id: MerchantId,
    request: CreateShipment,
    idempotency_key: Option<&IdempotencyKey>,
) -> Result<CreateOutcome> {
    // With a key, the digest of the parsed request, so formatting and key
    // order do not make "the same body" look different; without one, no
    // body is compared, and none is written out to be hashed.
    let idempotency = match idempotency_key {
        Some(key) => {
            let request =
                serde_json::to_vec(&request).map_err(|e| Error::Internal(e.to_string()))?;
            Some((key.as_str(), hex::encode(Sha256::digest(request))))
        }
        None => None,
    };
    let new = NewShipment::parse(request)?;
    if let Some(url) = &new.webhook_url {
        super::webhooks::check_target(state, "webhook_url", url).await?;
        if state
            .store
            .shipment_signing_key(merchant_id)
            .await?
            .is_none()
        {
            return Err(FieldError::invalid(
                "webhook_url",
                "a shipment with its own webhook_url needs your shipment signing key first: \
                 create it in the dashboard or with POST /webhooks/shipment-signing-key, then retry",
            )
            .into());
        }
    }
    let pricing = super::couriers::linked_pricing(state, merchant_id, new.courier_company_id)
        .await?
        .ok_or_else(|| {
            FieldError::invalid(
                "courier_company_id",
                format!(
                    "courier company {} is not linked to your account; GET /merchant-couriers lists those that are",
                    new.courier_company_id
                ),
            )
        })?;
    let fee = total_fee(
        pricing,
        new.weight_kg,
        new.start_address.as_deref(),
        new.end_address.as_deref(),
    );
    let fee_minor = fee::to_minor_units(fee).ok_or_else(|| {
        FieldError::invalid("weight_kg", "the fee for this shipment is too large")
    })?;
    let idempotency = idempotency.as_ref().map(|(k, d)| (*k, d.as_str()));
    let trace = crate::telemetry::current_traceparent();
    let created = state
        .store
        .create_shipment(merchant_id, new, fee_minor, idempotency, trace)
        .await?;
    match created {
        Created::New(shipment) => {
            state.outbox_signal.notify_one();
            Ok(CreateOutcome::Created(shipment))
        }
        Created::Replayed(body) => Ok(CreateOutcome::Replayed(body)),
        Created::KeyReused => Err(Error::IdempotencyKeyReused),
    }
}

/// One page of `actor`'s shipments in the list envelope, with the cursor
/// of the page after it (`null` on the last page). A cursor made for
/// another account or other filters is refused.
pub(crate) async fn list_shipments(
    state: &AppState,
    actor: Actor,
    listing: &Listing,
) -> Result<Page<ListedShipment>> {
    listing.check_cursor(actor)?;
    let listed = state.listed.page(&state.store, actor, listing).await?;
    let next_cursor = listed.next.map(|last| {
        listing
            .next_cursor(actor, last, listed.rows.len())
            .to_string()
    });
    let mut page = Page::new(
        listed.rows,
        listing.page_number(),
        listing.query.page_size,
        listed.total,
    );
    page.next_cursor = next_cursor;
    Ok(page)
}

/// How many of the merchant's shipments are in each status, from the kept
/// counts: the statuses that have any, in lifecycle order (a status this
/// version does not know, last).
pub(crate) async fn shipments_by_status(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<Vec<(Status, u64)>> {
    let mut counts: Vec<(Status, u64)> = state
        .store
        .shipments_by_status(merchant_id)
        .await?
        .into_iter()
        .filter_map(|(status, n)| {
            let n = u64::try_from(n).ok().filter(|n| *n > 0)?;
            let status = Status::parse_known(&status).unwrap_or(Status::Unknown(status));
            Some((status, n))
        })
        .collect();
    let place = |s: &Status| {
        Status::KNOWN
            .iter()
            .position(|k| k == s)
            .unwrap_or(Status::KNOWN.len())
    };
    counts.sort_by(|(a, _), (b, _)| {
        place(a)
            .cmp(&place(b))
            .then_with(|| a.as_str().cmp(b.as_str()))
    });
    Ok(counts)
}

/// The merchant's shipment with this code: not found when no shipment has
/// it, refused when another merchant's does.
pub(crate) async fn get_shipment(
    state: &AppState,
    merchant_id: MerchantId,
    code: &ShipmentCode,
) -> Result<Shipment> {
    Ok(owned_record(state, merchant_id, code).await?.into_model()?)
}

/// The merchant's shipment with this code, as [`get_shipment`], and every
/// change it went through, oldest first, each as the shipment stood after
/// it (the first is its creation): what its timeline is drawn from.
pub(crate) async fn get_shipment_history(
    state: &AppState,
    merchant_id: MerchantId,
    code: &ShipmentCode,
) -> Result<(Shipment, Vec<Shipment>)> {
    let record = owned_record(state, merchant_id, code).await?;
    let changes = state.store.shipment_changes(&record).await?;
    Ok((record.into_model()?, changes))
}

/// The stored row of the merchant's shipment with this code: not found
/// when no shipment has it, refused when another merchant's does.
async fn owned_record(
    state: &AppState,
    merchant_id: MerchantId,
    code: &ShipmentCode,
) -> Result<ShipmentRecord> {
    let record = state
        .store
        .shipment(code.as_str())
        .await?
        .ok_or_else(|| not_found(code))?;
    if record.merchant_id != merchant_id.get() {
        return Err(Refusal::Forbidden.into());
    }
    Ok(record)
}

fn not_found(code: &ShipmentCode) -> Error {
    Error::NotFound(format!("no shipment has the code {code}"))
}

/// The shipment after an update, or why not; wakes the dispatcher when the
/// update wrote an outbox row.
fn updated(state: &AppState, code: &ShipmentCode, update: ShipmentUpdate) -> Result<Shipment> {
    match update {
        ShipmentUpdate::Done(shipment) => {
            state.outbox_signal.notify_one();
            Ok(shipment)
        }
        ShipmentUpdate::Unchanged(shipment) => Ok(shipment),
        ShipmentUpdate::NotFound => Err(not_found(code)),
        ShipmentUpdate::Refused(refusal) => Err(refusal.into()),
    }
}

/// Updates the shipment as `actor` with `decide`, in one transaction.
async fn update(
    state: &AppState,
    code: &ShipmentCode,
    actor: Actor,
    decide: impl Fn(&mut Shipment, DateTime<Utc>) -> Result<bool, Refusal> + Send + Sync + 'static,
) -> Result<Shipment> {
    let trace = crate::telemetry::current_traceparent();
    let update = state
        .store
        .update_shipment(code.as_str(), actor, trace, decide)
        .await?;
    updated(state, code, update)
}

/// Cancels the merchant's shipment before pickup (again: unchanged).
pub(crate) async fn cancel_shipment(
    state: &AppState,
    merchant_id: MerchantId,
    code: &ShipmentCode,
) -> Result<Shipment> {
    update(state, code, Actor::Merchant(merchant_id), move |r, at| {
        lifecycle::transition(r, Operation::Cancel, at)
    })
    .await
}

/// Rates the merchant's delivered shipment, once, 1 to 10.
pub(crate) async fn rate_shipment(
    state: &AppState,
    merchant_id: MerchantId,
    code: &ShipmentCode,
    rating: u8,
) -> Result<Shipment> {
    if !(1..=10).contains(&rating) {
        return Err(
            FieldError::invalid("rating", "`rating` must be an integer from 1 to 10").into(),
        );
    }
    update(state, code, Actor::Merchant(merchant_id), move |s, at| {
        lifecycle::rate(s, rating, at)
    })
    .await
}

/// Makes a new six-digit confirmation code for the merchant's shipment,
/// replacing any earlier one; it lasts [`confirmation::CODE_TTL`]. Not a
/// change of the shipment: no version, no delivery.
pub(crate) async fn generate_confirmation_code(
    state: &AppState,
    merchant_id: MerchantId,
    code: &ShipmentCode,
) -> Result<ConfirmationCode> {
    let confirmation_code = format!("{:06}", rand::rng().random_range(0..1_000_000));
    let expires_at = now() + confirmation::CODE_TTL;
    let update = state
        .store
        .set_confirmation_code(
            code.as_str(),
            merchant_id,
            &keys::digest(&confirmation_code),
            expires_at,
            |r| {
                lifecycle::apply(&r.status(), Operation::GenerateConfirmationCode)?;
                Ok(())
            },
        )
        .await?;
    match update {
        ShipmentUpdate::Done(()) | ShipmentUpdate::Unchanged(()) => Ok(ConfirmationCode::new(
            code.clone(),
            confirmation_code,
            expires_at,
        )),
        ShipmentUpdate::NotFound => Err(not_found(code)),
        ShipmentUpdate::Refused(refusal) => Err(refusal.into()),
    }
}

/// Assigns (or reassigns) one of the courier's drivers; the same driver
/// again changes nothing.
pub(crate) async fn assign_driver(
    state: &AppState,
    courier_id: CourierId,
    code: &ShipmentCode,
    driver_id: DriverId,
) -> Result<Shipment> {
    let driver = state.store.driver(driver_id).await?;
    if driver.is_none_or(|d| d.courier_company_id != courier_id.get()) {
        return Err(FieldError::invalid(
            "driver_id",
            format!("driver {driver_id} is not one of your drivers"),
        )
        .into());
    }
    update(state, code, Actor::Courier(courier_id), move |r, at| {
        if r.assigned_driver_id == Some(driver_id) {
            return Ok(false);
        }
        lifecycle::transition(r, Operation::AssignDriver, at)?;
        r.assigned_driver_id = Some(driver_id);
        Ok(true)
    })
    .await
}

/// A courier operation that needs nothing but the code (unassign, pickup,
/// return).
pub(crate) async fn courier_operation(
    state: &AppState,
    courier_id: CourierId,
    code: &ShipmentCode,
    op: Operation,
) -> Result<Shipment> {
    update(state, code, Actor::Courier(courier_id), move |r, at| {
        lifecycle::transition(r, op, at)
    })
    .await
}

/// Records a failed delivery attempt with its reason.
pub(crate) async fn fail_shipment(
    state: &AppState,
    courier_id: CourierId,
    code: &ShipmentCode,
    reason: &str,
) -> Result<Shipment> {
    let reason = courier_text("reason", reason)?;
    update(state, code, Actor::Courier(courier_id), move |r, at| {
        lifecycle::transition(r, Operation::Fail, at)?;
        r.failure_reason = Some(reason.clone());
        Ok(true)
    })
    .await
}

/// Delivers, with the confirmation code when the merchant generated one.
pub(crate) async fn deliver_shipment(
    state: &AppState,
    courier_id: CourierId,
    code: &ShipmentCode,
    confirmation_code: Option<&str>,
) -> Result<Shipment> {
    if let Some(c) = confirmation_code
        && (c.len() != 6 || !c.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(Refusal::Field(FieldError::invalid(
            "confirmation_code",
            "`confirmation_code` is six digits",
        ))
        .into());
    }
    let trace = crate::telemetry::current_traceparent();
    let update = state
        .store
        .deliver_shipment(
            code.as_str(),
            courier_id,
            confirmation_code,
            trace,
            |r, at| lifecycle::transition(r, Operation::Deliver, at),
        )
        .await?;
    updated(state, code, update)
}
