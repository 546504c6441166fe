//! The delivery tables of a webhook's page and a shipment's page, with a
//! Redeliver button on each failure, and the notice that says what a
//! redelivery form queued (read from the query of the page after its
//! redirect). Shown by `webhooks` and `shipments`; the forms' handlers are
//! in `redelivery`.

use maud::{Markup, html};
use shipment_sdk::model::{Delivery, DeliveryId, ShipmentCode, WebhookId};

use super::layout::{self, Tone};
use super::session::Signed;
use crate::app::webhooks::MAX_REDELIVERIES_PER_CALL;

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
    pub(crate) fn query(self) -> String {
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
fn redeliver_button(
    signed: &Signed,
    webhook_id: WebhookId,
    d: &Delivery,
    back: Back<'_>,
) -> Markup {
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
                            td data-label="Attempt" {
                                "#" (d.id)
                                @if let Some(of) = d.redelivery_of { div.small.muted { "redelivery of #" (of) } }
                            }
                            td data-label="Time" { (layout::when(&d.delivered_at)) }
                            @match back {
                                Back::Webhook => td data-label="Shipment" { a href={ "/shipments/" (d.shipment_code) } { code { (d.shipment_code) } } },
                                Back::Shipment { own_url, .. } => td.url data-label="Sent to" {
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
                            td data-label="Version" { (d.version) }
                            td data-label="Outcome" {
                                @if d.success {
                                    span.badge.badge-good { "Delivered" }
                                } @else {
                                    span.badge.badge-bad { "Failed" }
                                }
                                @if let Some(code) = d.status_code { " " span.muted { "HTTP " (code) } }
                                @if let Some(error) = &d.error { div.small.muted { (error) } }
                            }
                            td data-label="Duration" { (d.duration_ms) " ms" }
                            td.actions {
                                @if let (false, Some(w)) = (d.success, d.webhook_id) {
                                    (redeliver_button(signed, w, d, back))
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
