//! Redelivery from the pages: the Redeliver button of a failed delivery (on
//! a webhook's delivery log and on a shipment's page), "Redeliver failures
//! since…" on a webhook's page, the delivery tables both pages show, and the
//! notice that says what was queued after the form's redirect.
//!
//! Both forms call the same use-cases as the JSON API
//! ([`crate::app::webhooks::redeliver`] and
//! [`crate::app::webhooks::redeliver_failures`]) and answer with a redirect,
//! so reloading the page that follows sends nothing again.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, NaiveDateTime, Utc};
use maud::{Markup, html};
use shipment_sdk::model::{Delivery, DeliveryId, ShipmentCode};

use super::layout::{self, Tone};
use super::session::{Signed, SignedForm};
use super::webhooks::{RedeliverFields, webhook_page};
use super::{PageResult, see_other};
use crate::app::webhooks::{self, MAX_REDELIVERIES_PER_CALL};
use crate::app::{self, AppState, numeric_id};
use crate::domain::{FieldError, FieldErrorKind};

/// The page a delivery table is on: where its Redeliver buttons come back
/// to, and which column says what the other page would.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Back<'a> {
    /// A webhook's delivery log: a column for the shipment.
    Webhook,
    /// A shipment's page: a column for where each attempt went, and this
    /// shipment's own `webhook_url` to recognise it.
    Shipment {
        code: &'a ShipmentCode,
        own_url: Option<&'a str>,
    },
}

/// What the query of a page after a redelivery form says was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queued {
    /// One delivery is being sent again (`?redelivered=ID`).
    One(DeliveryId),
    /// Nothing queued: a redelivery of that delivery's change to the
    /// webhook is waiting already (`?waiting=ID`).
    Waiting(DeliveryId),
    /// Nothing queued: the budget of redelivered changes per minute is
    /// used (`?limited=SECS`, when it has room again).
    Limited { retry_after_secs: u64 },
    /// Failures since a time (`?queued=N`, with `&truncated` when cut, and
    /// `&retry_after=SECS` when the budget cut it).
    Failures {
        queued: u64,
        truncated: bool,
        retry_after_secs: Option<u64>,
    },
}

impl Queued {
    /// Takes the notice's parameters out of a page's raw query; returns the
    /// notice (if the parameters make one) and the rest of the query, for
    /// the page's own parsing. Malformed notice parameters are dropped: they
    /// only ever come from this dashboard's redirects.
    pub(crate) fn take(raw: &str) -> (Option<Queued>, String) {
        let (mut one, mut waiting, mut limited, mut many, mut truncated, mut retry_after) =
            (None, None, None, None, false, None);
        let mut rest = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in url::form_urlencoded::parse(raw.as_bytes()) {
            match name.as_ref() {
                "redelivered" => one = value.parse::<i64>().ok().map(DeliveryId::new),
                "waiting" => waiting = value.parse::<i64>().ok().map(DeliveryId::new),
                "limited" => limited = value.parse::<u64>().ok(),
                "queued" => many = value.parse::<u64>().ok(),
                "truncated" => truncated = true,
                "retry_after" => retry_after = value.parse::<u64>().ok(),
                _ => {
                    rest.append_pair(&name, &value);
                }
            }
        }
        let queued = match (one, waiting, limited, many) {
            (Some(id), ..) => Some(Queued::One(id)),
            (None, Some(id), ..) => Some(Queued::Waiting(id)),
            (None, None, Some(retry_after_secs), _) => Some(Queued::Limited { retry_after_secs }),
            (None, None, None, Some(queued)) => Some(Queued::Failures {
                queued,
                truncated,
                retry_after_secs: retry_after.filter(|_| truncated),
            }),
            (None, None, None, None) => None,
        };
        (queued, rest.finish())
    }

    /// The query that says it, for a redirect: the inverse of
    /// [`Queued::take`].
    fn query(self) -> String {
        match self {
            Queued::One(id) => format!("redelivered={id}"),
            Queued::Waiting(id) => format!("waiting={id}"),
            Queued::Limited { retry_after_secs } => format!("limited={retry_after_secs}"),
            Queued::Failures {
                queued,
                truncated,
                retry_after_secs,
            } => {
                let mut query = format!("queued={queued}");
                if truncated {
                    query.push_str("&truncated");
                }
                if let Some(secs) = retry_after_secs {
                    query.push_str(&format!("&retry_after={secs}"));
                }
                query
            }
        }
    }

    /// The notice that says it.
    pub(crate) fn notice(self) -> Markup {
        let (tone, text) = match self {
            Queued::One(id) => (
                Tone::Success,
                format!(
                    "Delivery #{id} is being sent again. The new attempt appears in the log as a \
                     redelivery of #{id} once it has been sent: reload the page to see it."
                ),
            ),
            Queued::Waiting(id) => (
                Tone::Warning,
                format!(
                    "Nothing more was queued: a redelivery of the change of delivery #{id} to \
                     this webhook is already waiting, and is sent shortly. Once it has been \
                     attempted (reload the page to see it), it can be sent again."
                ),
            ),
            Queued::Limited { retry_after_secs } => (
                Tone::Error,
                format!(
                    "Nothing was queued: you have had as many changes redelivered in the last \
                     minute as a minute allows. Try again in {retry_after_secs} s."
                ),
            ),
            Queued::Failures { queued: 0, .. } => (
                Tone::Success,
                "Nothing to send again: no change failed in that time without being delivered \
                 since (or its redelivery is already waiting)."
                    .to_owned(),
            ),
            Queued::Failures {
                queued,
                truncated,
                retry_after_secs,
            } => {
                let (noun, shown) = if queued == 1 {
                    ("redelivery", "It appears in the log once it has been sent")
                } else {
                    ("redeliveries", "They appear in the log as they are sent")
                };
                let mut text = format!(
                    "{queued} {noun} queued, one per change that failed in that time and has \
                     not been delivered since. {shown}."
                );
                match (truncated, retry_after_secs) {
                    (true, Some(secs)) => text.push_str(&format!(
                        " More failed than your budget of redelivered changes per minute has \
                         left: send the form again in {secs} s to queue the rest."
                    )),
                    (true, None) => text.push_str(&format!(
                        " More failed than one request queues ({MAX_REDELIVERIES_PER_CALL}): \
                         send the form again to queue the rest."
                    )),
                    (false, _) => {}
                }
                (Tone::Success, text)
            }
        };
        layout::notice(tone, &text)
    }
}

/// The Redeliver button of one failed delivery to webhook `webhook_id`.
fn redeliver_button(signed: &Signed, webhook_id: i64, d: &Delivery, back: Back<'_>) -> Markup {
    html! {
        form.inline method="post" action={ "/webhooks/" (webhook_id) "/deliveries/" (d.id) "/redeliver" } {
            (layout::csrf(signed))
            @if let Back::Shipment { code, .. } = back {
                input type="hidden" name="back" value="shipment";
                input type="hidden" name="code" value=(code);
            }
            button.button.button-small type="submit" { "Redeliver" span.visually-hidden { " delivery #" (d.id) } }
        }
    }
}

/// A table of deliveries, newest first as given: each attempt's id (and
/// which attempt it sends again), the shipment or where it went, version,
/// outcome and duration, and a Redeliver button on each failure to a
/// registered webhook.
pub(crate) fn deliveries_table(signed: &Signed, rows: &[Delivery], back: Back<'_>) -> Markup {
    html! {
        div.table-wrap {
            table {
                thead {
                    tr {
                        th { "Attempt" }
                        th { "Time" }
                        @match back {
                            Back::Webhook => th { "Shipment" },
                            Back::Shipment { .. } => th { "Sent to" },
                        }
                        th { "Version" }
                        th { "Outcome" }
                        th { "Duration" }
                        th { span.visually-hidden { "Actions" } }
                    }
                }
                tbody {
                    @for d in rows {
                        tr {
                            td {
                                "#" (d.id)
                                @if let Some(of) = d.redelivery_of { div.small.muted { "redelivery of #" (of) } }
                            }
                            td { (layout::when(&d.delivered_at)) }
                            @match back {
                                Back::Webhook => td { a href={ "/shipments/" (d.shipment_code) } { code { (d.shipment_code) } } },
                                Back::Shipment { own_url, .. } => td.url {
                                    @if let Some(w) = d.webhook_id {
                                        a href={ "/webhooks/" (w) } { (d.url) }
                                    } @else {
                                        (d.url)
                                        div.small.muted {
                                            @if own_url == Some(d.url.as_str()) { "this shipment's own webhook_url" }
                                            @else { "a webhook deleted since" }
                                        }
                                    }
                                },
                            }
                            td { (d.version) }
                            td {
                                @if d.success {
                                    span.badge.badge-good { "Delivered" }
                                } @else {
                                    span.badge.badge-bad { "Failed" }
                                }
                                @if let Some(code) = d.status_code { " " span.muted { "HTTP " (code) } }
                                @if let Some(error) = &d.error { div.small.muted { (error) } }
                            }
                            td { (d.duration_ms) " ms" }
                            td.actions {
                                @if let (false, Some(w)) = (d.success, d.webhook_id) {
                                    (redeliver_button(signed, w.get(), d, back))
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

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

    #[test]
    fn the_notice_parameters_are_taken_out_of_the_query() {
        let (queued, rest) = Queued::take("page=2&redelivered=41");
        assert_eq!(queued, Some(Queued::One(DeliveryId::new(41))));
        assert_eq!(rest, "page=2");
        let (queued, rest) = Queued::take("queued=3&truncated");
        assert_eq!(
            queued,
            Some(Queued::Failures {
                queued: 3,
                truncated: true,
                retry_after_secs: None,
            })
        );
        assert_eq!(rest, "");
        for said in [
            Queued::One(DeliveryId::new(41)),
            Queued::Waiting(DeliveryId::new(41)),
            Queued::Limited {
                retry_after_secs: 17,
            },
            Queued::Failures {
                queued: 3,
                truncated: true,
                retry_after_secs: Some(17),
            },
            Queued::Failures {
                queued: 0,
                truncated: false,
                retry_after_secs: None,
            },
        ] {
            let query = format!("page=2&{}", said.query());
            assert_eq!(Queued::take(&query), (Some(said), "page=2".to_owned()));
        }
        let (queued, rest) = Queued::take("queued=lots&page_size=5");
        assert_eq!((queued, rest.as_str()), (None, "page_size=5"));
    }

    #[test]
    fn the_notice_says_how_many_and_when_more_are_left() {
        let notice = |q| Queued::notice(q).into_string();
        let one = notice(Queued::One(DeliveryId::new(7)));
        assert!(one.contains("redelivery of #7"), "{one}");
        let none = notice(Queued::Failures {
            queued: 0,
            truncated: false,
            retry_after_secs: None,
        });
        assert!(none.contains("Nothing to send again"), "{none}");
        let cut = notice(Queued::Failures {
            queued: 10_000,
            truncated: true,
            retry_after_secs: None,
        });
        assert!(cut.contains("10000 redeliveries queued"), "{cut}");
        assert!(cut.contains("send the form again to queue"), "{cut}");
        let budget = notice(Queued::Failures {
            queued: 3,
            truncated: true,
            retry_after_secs: Some(42),
        });
        assert!(budget.contains("3 redeliveries queued"), "{budget}");
        assert!(budget.contains("send the form again in 42 s"), "{budget}");
        let waiting = notice(Queued::Waiting(DeliveryId::new(7)));
        assert!(waiting.contains("already waiting"), "{waiting}");
        assert!(waiting.contains("delivery #7"), "{waiting}");
        let limited = notice(Queued::Limited {
            retry_after_secs: 9,
        });
        assert!(limited.contains("Nothing was queued"), "{limited}");
        assert!(limited.contains("Try again in 9 s"), "{limited}");
    }
}
