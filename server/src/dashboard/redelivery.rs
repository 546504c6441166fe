//! Redelivery from the pages: the forms of the Redeliver button of a failed
//! delivery (on a webhook's delivery log and on a shipment's page, drawn by
//! `deliveries`) and of "Redeliver failures since…" on a webhook's page.
//!
//! Both forms call the same use-cases as the JSON API
//! ([`crate::app::webhooks::redeliver`] and
//! [`crate::app::webhooks::redeliver_failures`]) and answer with a redirect,
//! so reloading the page that follows sends nothing again.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, NaiveDateTime, Utc};
use shipment_sdk::model::{DeliveryId, ShipmentCode};

use super::deliveries::Queued;
use super::layout::{self, Tone};
use super::page::{PageResult, see_other};
use super::session::SignedForm;
use super::webhooks::{RedeliverFields, webhook_page};
use crate::app::webhooks;
use crate::app::{self, AppState, numeric_id};
use crate::domain::{FieldError, FieldErrorKind};

/// `POST /webhooks/{id}/deliveries/{delivery_id}/redeliver`: sends one
/// delivery again, then back to the webhook's page, or to the shipment's
/// when the form came from there (`back=shipment`, `code`).
pub(crate) async fn redeliver_delivery(
    State(state): State<AppState>,
    Path((id, delivery_id)): Path<(String, String)>,
    SignedForm { signed, form }: SignedForm,
) -> PageResult<Response> {
    let (id, delivery_id): (_, DeliveryId) = (numeric_id(&id)?, numeric_id(&delivery_id)?);
    // A redelivery waiting already, or a budget used up, is said on the
    // page the button was on, as what was queued is.
    let queued = match webhooks::redeliver(&state, signed.merchant_id(), id, delivery_id).await {
        Ok(_) => Queued::One(delivery_id),
        Err(app::Error::RedeliveryWaiting(_)) => Queued::Waiting(delivery_id),
        Err(app::Error::RedeliveryBudget {
            retry_after_secs, ..
        }) => Queued::Limited { retry_after_secs },
        Err(e) => return Err(e.into()),
    };
    // The code goes into a Location header: only a well-formed one.
    let shipment = form
        .get("code")
        .filter(|_| form.get("back") == Some("shipment"))
        .and_then(|code| ShipmentCode::parse(code).ok());
    let query = queued.query();
    Ok(match shipment {
        Some(code) => see_other(&format!("/shipments/{code}?{query}")),
        None => see_other(&format!("/webhooks/{id}?{query}")),
    })
}

/// `POST /webhooks/{id}/redeliver`: "Redeliver failures since…". The range
/// comes from `datetime-local` fields, read as UTC; a wrong range shows the
/// webhook's page again with the reason and what was typed.
pub(crate) async fn redeliver_failures(
    State(state): State<AppState>,
    Path(id): Path<String>,
    SignedForm { signed, form }: SignedForm,
) -> PageResult<Response> {
    let id = numeric_id(&id)?;
    let typed = RedeliverFields {
        since: form.get("failed_since").unwrap_or("").to_owned(),
        until: form.get("failed_until").unwrap_or("").to_owned(),
    };
    let range = instant("failed_since", &typed.since).and_then(|since| {
        let until = match typed.until.trim() {
            "" => None,
            until => Some(instant("failed_until", until)?),
        };
        Ok((since, until))
    });
    let queued = match range {
        Ok((since, until)) => {
            webhooks::redeliver_failures(&state, signed.merchant_id(), id, since, until).await
        }
        Err(e) => Err(e.into()),
    };
    let (notice, status) = match queued {
        Ok(q) => {
            let queued = Queued::Failures {
                queued: u64::from(q.queued.queued),
                truncated: q.queued.truncated,
                retry_after_secs: q.retry_after_secs,
            };
            return Ok(see_other(&format!("/webhooks/{id}?{}", queued.query())));
        }
        Err(e @ app::Error::Field(_)) => (e, StatusCode::BAD_REQUEST),
        Err(e @ app::Error::RedeliveryBudget { .. }) => (e, StatusCode::TOO_MANY_REQUESTS),
        Err(e) => return Err(e.into()),
    };
    // Shown again with the reason and what was typed, to send once fixed
    // (or once the budget has room).
    let notice = layout::notice(Tone::Error, &layout::sentence(&notice.to_string()));
    let page = webhook_page(&state, &signed, id, "", status, Some(notice), &typed).await?;
    Ok(axum::response::IntoResponse::into_response(page))
}

/// A form's date and time, as UTC: what a `datetime-local` field sends
/// (`2026-11-23T07:00`, seconds optional), or RFC 3339 with an offset.
fn instant(field: &str, value: &str) -> Result<DateTime<Utc>, FieldError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(FieldError {
            kind: FieldErrorKind::Missing,
            field: field.to_owned(),
            detail: format!("`{field}` is required: choose a date and time"),
        });
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(value) {
        return Ok(t.with_timezone(&Utc));
    }
    ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(value, format).ok())
        .map(|t| t.and_utc())
        .ok_or_else(|| {
            FieldError::invalid(
                field,
                format!("`{field}` must be a date and time, such as 2026-11-23T07:00"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetime_local_values_are_read_as_utc() {
        let t = instant("failed_since", "2026-11-23T07:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-23T07:00:00+00:00");
        let t = instant("failed_since", "2026-11-23T07:00:30").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-23T07:00:30+00:00");
        let t = instant("failed_since", "2026-11-23T08:00:00+01:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-23T07:00:00+00:00");
        let missing = instant("failed_since", " ").unwrap_err();
        assert_eq!(missing.kind, FieldErrorKind::Missing);
        let wrong = instant("failed_until", "yesterday").unwrap_err();
        assert_eq!(
            (wrong.kind, wrong.field.as_str()),
            (FieldErrorKind::Invalid, "failed_until")
        );
    }
}
