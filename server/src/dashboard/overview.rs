//! The overview: where each task is, with a count of what is there; the
//! shipments by status; and any webhook failing now.

use axum::extract::State;
use maud::{Markup, html};
use shipment_sdk::model::Status;

use super::health;
use super::layout::{self, Section};
use super::page::{Page, PageResult};
use super::session::Signed;
use super::shipments::list_href;
use crate::app::api_keys::list_api_keys;
use crate::app::shipments::{list_shipments, shipments_by_status};
use crate::app::webhooks::{failing_webhooks, list_webhooks};
use crate::app::{Actor, AppState};
use crate::domain::list_query::{ListQuery, Listing};

/// `GET /`.
pub(crate) async fn overview(State(state): State<AppState>, signed: Signed) -> PageResult {
    let merchant_id = signed.merchant_id();
    let one = Listing::from(ListQuery {
        page_size: 1,
        ..ListQuery::default()
    });
    let shipments = list_shipments(&state, Actor::Merchant(merchant_id), &one)
        .await?
        .total;
    let by_status = shipments_by_status(&state, merchant_id).await?;
    let keys = list_api_keys(&state, merchant_id).await?.len();
    let webhooks = list_webhooks(&state, merchant_id).await?;
    let active = webhooks.iter().filter(|w| w.active).count();
    let (failing, more_failing) = failing_webhooks(&state, merchant_id).await?;
    Ok(Page::ok(layout::page(
        &signed,
        Section::Overview,
        "Overview",
        &html! {
            @if !failing.is_empty() {
                section.notice.notice-error aria-labelledby="failing-now" {
                    h2 #failing-now { "Webhooks failing now" }
                    p { "The latest delivery to each of these failed. Open one to see its log and send its failures again." }
                    (health::failing_list(&failing, more_failing))
                }
            }
            div.cards {
                a.card.card-link href="/shipments" {
                    h2 { "Shipments" }
                    p.big { (shipments) }
                    p { "Follow each shipment's status and timeline." }
                }
                a.card.card-link href="/keys" {
                    h2 { "API keys" }
                    p.big { (keys) }
                    p { "Create, check and delete the keys your programs use." }
                }
                a.card.card-link href="/webhooks" {
                    h2 { "Webhooks" }
                    p.big { (active) " of " (webhooks.len()) " active" }
                    p {
                        @if active == 0 {
                            "Get told when a shipment changes; see each delivery."
                        } @else if failing.is_empty() {
                            "None is failing: the latest delivery to each active webhook succeeded, or none was sent yet."
                        } @else {
                            (failing.len()) @if more_failing { " or more" } " failing now (above)."
                        }
                    }
                }
            }
            @if !by_status.is_empty() {
                section aria-labelledby="by-status" {
                    h2 #by-status { "Shipments by status" }
                    (status_table(&by_status))
                }
            }
        },
    )))
}

/// The count of shipments in each status, each linked to the list of
/// them, with its share of all drawn as a bar (the share is text too).
fn status_table(by_status: &[(Status, u64)]) -> Markup {
    let total: u64 = by_status.iter().map(|(_, n)| n).sum();
    html! {
        div.table-wrap {
            table.by-status {
                thead { tr { th { "Status" } th.num { "Shipments" } th { "Share" } } }
                tbody {
                    @for (status, n) in by_status {
                        @let permille = share_permille(*n, total);
                        tr {
                            td data-label="Status" {
                                a href=(list_href(Some(status), 1)) { (layout::status_badge(status)) }
                            }
                            td.num data-label="Shipments" { (n) }
                            td.share data-label="Share" {
                                svg.share-bar viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true" focusable="false" {
                                    rect.share-all width="100" height="8" {}
                                    rect.share-part width=(format!("{}.{}", permille / 10, permille % 10)) height="8" {}
                                }
                                span.share-text { (permille / 10) "." (permille % 10) " %" }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `part`'s share of `all`, in tenths of a percent, rounded down.
fn share_permille(part: u64, all: u64) -> u64 {
    if all == 0 {
        return 0;
    }
    // In u128: a count times 1000 cannot overflow it.
    u64::try_from(u128::from(part) * 1000 / u128::from(all)).unwrap_or(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_status_shows_its_count_and_share_linked_to_its_list() {
        let html = status_table(&[(Status::InTransit, 3), (Status::Delivered, 1)]).into_string();
        assert!(
            html.contains("href=\"/shipments?status=in_transit&amp;page=1\""),
            "{html}"
        );
        assert!(html.contains("75.0 %") && html.contains("25.0 %"), "{html}");
        assert!(
            html.contains("<rect class=\"share-part\" width=\"75.0\""),
            "{html}"
        );
        assert!(!html.contains("style="), "the CSP allows no inline style");
    }

    #[test]
    fn a_share_is_rounded_down_and_zero_of_nothing() {
        assert_eq!(share_permille(0, 0), 0);
        assert_eq!(share_permille(2, 3), 666);
        assert_eq!(share_permille(u64::MAX, u64::MAX), 1000);
    }
}
