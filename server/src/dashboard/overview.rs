//! The overview: where each task is, with a count of what is there.

use axum::extract::State;
use maud::html;

use super::layout::{self, Section};
use super::page::{Page, PageResult};
use super::session::Signed;
use crate::app::api_keys::list_api_keys;
use crate::app::shipments::list_shipments;
use crate::app::webhooks::list_webhooks;
use crate::app::{Actor, AppState};
use crate::domain::list_query::ListQuery;

/// `GET /`.
pub(crate) async fn overview(State(state): State<AppState>, signed: Signed) -> PageResult {
    let merchant_id = signed.merchant_id();
    let one = ListQuery {
        page_size: 1,
        ..ListQuery::default()
    };
    let shipments = list_shipments(&state, Actor::Merchant(merchant_id), &one)
        .await?
        .total;
    let keys = list_api_keys(&state, merchant_id).await?.len();
    let webhooks = list_webhooks(&state, merchant_id).await?;
    let active = webhooks.iter().filter(|w| w.active).count();
    Ok(Page::ok(layout::page(
        &signed,
        Section::Overview,
        "Overview",
        &html! {
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
                    p { "Get told when a shipment changes; see each delivery." }
                }
            }
        },
    )))
}
