//! Shipment pages: the list with a status filter and pages, and one
//! shipment with its timeline and its latest deliveries.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use maud::html;
use shipment_sdk::model::{Page as ListPage, Shipment, Status};

use super::deliveries::{Back, Queued, deliveries_table};
use super::layout::{self, Section, Tone};
use super::page::{Page, PageError, PageResult};
use super::session::Signed;
use crate::app::shipments::{self, get_shipment_history};
use crate::app::webhooks::shipment_deliveries;
use crate::app::{self, Actor, AppState};
use crate::cache::listed::ListedShipment;
use crate::domain::code::ShipmentCode;
use crate::domain::list_query::{DEFAULT_PAGE_SIZE, ListQuery, Listing};

/// The list's query: the API's, with empty fields (the filter form's "all
/// statuses") left out.
fn list_query(raw: &str) -> Result<ListQuery, String> {
    let kept: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(url::form_urlencoded::parse(raw.as_bytes()).filter(|(_, v)| !v.is_empty()))
        .finish();
    ListQuery::parse(&kept).map_err(|e| layout::sentence(&e.detail))
}

/// The list's address, filtered by `status` (or not), at `page`.
pub(crate) fn list_href(status: Option<&Status>, page: u32) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    if let Some(s) = status {
        query.append_pair("status", s.as_str());
    }
    query.append_pair("page", &page.to_string());
    format!("/shipments?{}", query.finish())
}

/// `GET /shipments?status=…&page=…`.
pub(crate) async fn list_shipments(
    State(state): State<AppState>,
    signed: Signed,
    RawQuery(query): RawQuery,
) -> PageResult {
    let (query, error) = match list_query(query.as_deref().unwrap_or("")) {
        Ok(q) => (q, None),
        Err(e) => (ListQuery::default(), Some(e)),
    };
    let page: ListPage<ListedShipment> = shipments::list_shipments(
        &state,
        Actor::Merchant(signed.merchant_id()),
        &Listing::from(query.clone()),
    )
    .await?;
    let status = query.status.as_ref();
    let body = html! {
        @if let Some(e) = &error { (layout::notice(Tone::Error, e)) }
        form.filter method="get" action="/shipments" {
            label for="status-filter" { "Status" }
            select #status-filter name="status" {
                option value="" selected[status.is_none()] { "All statuses" }
                @for s in Status::KNOWN {
                    option value=(s.as_str()) selected[status == Some(&s)] { (layout::status_label(&s)) }
                }
            }
            button.button type="submit" { "Show" }
        }
        @if page.data.is_empty() {
            p.muted {
                @if status.is_some() { "No shipments with this status." }
                @else { "No shipments yet. Create them with the API (" code { "POST /api/v1/shipments" } ")." }
            }
        } @else {
            div.table-wrap {
                table {
                    thead { tr { th { "Code" } th { "Status" } th { "Courier company" } th.num { "Fee" } th { "Created" } th { "Last change" } } }
                    tbody {
                        @for s in &page.data {
                            tr {
                                td data-label="Code" { a href={ "/shipments/" (s.code) } { code { (s.code) } } }
                                td data-label="Status" { (layout::status_badge(&s.status)) }
                                td data-label="Courier company" { "#" (s.courier_company_id) }
                                td.num data-label="Fee" { (s.total_fee) }
                                td data-label="Created" { (layout::when(&s.created_at)) }
                                td data-label="Last change" { (layout::when(&s.updated_at)) }
                            }
                        }
                    }
                }
            }
        }
        (layout::pager(page.page, page.total_pages, page.total, &|p| list_href(status, p)))
    };
    let code = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok(Page(
        code,
        layout::page(&signed, Section::Shipments, "Shipments", &body),
    ))
}

/// One step of a shipment's timeline: what happened, when, and a detail
/// (a failure's reason, a rating) where the step has one.
struct Step {
    label: &'static str,
    at: DateTime<Utc>,
    detail: Option<String>,
}

/// The timeline: one step per change of the shipment, in the order they
/// were made (`changes`, oldest first, each as the shipment stood after
/// it), so a state reached twice (picked up again after a failed attempt)
/// shows twice, each time where it happened.
fn timeline(changes: &[Shipment]) -> Vec<Step> {
    let mut steps = Vec::with_capacity(changes.len());
    let mut before: Option<&Shipment> = None;
    for s in changes {
        let step = match before {
            None => Step {
                label: "Created and handed to the courier company",
                at: s.created_at,
                detail: None,
            },
            Some(b) if b.status != s.status || b.assigned_driver_id != s.assigned_driver_id => {
                Step {
                    label: status_step(&s.status),
                    at: s.updated_at,
                    detail: (s.status == Status::Failed)
                        .then(|| s.failure_reason.clone())
                        .flatten(),
                }
            }
            Some(b) if b.rating.is_none() && s.rating.is_some() => Step {
                label: "Rated",
                at: s.updated_at,
                detail: s.rating.map(|r| format!("{r} / 10")),
            },
            Some(_) => Step {
                label: "Changed",
                at: s.updated_at,
                detail: None,
            },
        };
        steps.push(step);
        before = Some(s);
    }
    steps
}

/// The step of a change that moved the shipment to `status` (or gave it
/// another driver).
fn status_step(status: &Status) -> &'static str {
    match status {
        Status::AssignedToCourier => "Back with the courier company (driver unassigned)",
        Status::AssignedToDriver => "Driver assigned",
        Status::InTransit => "Picked up: in transit",
        Status::Failed => "Delivery attempt failed",
        Status::Delivered => "Delivered",
        Status::Returned => "Returned",
        Status::Cancelled => "Cancelled",
        _ => "Changed",
    }
}

/// `GET /shipments/{code}`: its details, its timeline (every change, in
/// order), and its latest
/// deliveries to every target (with a Redeliver button on each failure to
/// a webhook); after that button, a notice of what was queued.
pub(crate) async fn show_shipment(
    State(state): State<AppState>,
    signed: Signed,
    Path(code): Path<String>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let code = ShipmentCode::parse(&code)
        .map_err(|_| PageError::NotFound("No shipment has this code."))?;
    let (s, changes) = match get_shipment_history(&state, signed.merchant_id(), &code).await {
        Ok(found) => found,
        Err(app::Error::NotFound(_) | app::Error::Refused(crate::domain::Refusal::Forbidden)) => {
            return Err(PageError::NotFound("You have no shipment with this code."));
        }
        Err(e) => return Err(e.into()),
    };
    // Nothing else is read from this page's query.
    let (queued, _) = Queued::take(query.as_deref().unwrap_or(""));
    let deliveries =
        shipment_deliveries(&state, signed.merchant_id(), &code, 1, DEFAULT_PAGE_SIZE).await?;
    let dash = || html! { span.muted { "—" } };
    let body = html! {
        @if let Some(q) = queued { (q.notice()) }
        div.columns {
            section.card {
                h2 { "Details" }
                dl.facts {
                    dt { "Status" } dd { (layout::status_badge(&s.status)) }
                    dt { "Courier company" } dd { "#" (s.courier_company_id) }
                    dt { "Driver" } dd { @if let Some(d) = s.assigned_driver_id { "#" (d) } @else { (dash()) } }
                    dt { "Fee" } dd { (s.total_fee) }
                    dt { "Weight" } dd { @if let Some(w) = s.weight_kg { (w) " kg" } @else { (dash()) } }
                    dt { "Description" } dd { @if let Some(d) = &s.description { (d) } @else { (dash()) } }
                    dt { "Dimensions" } dd.multiline { @if let Some(d) = &s.dimensions { (d) } @else { (dash()) } }
                    // A list, so an item with a comma in it reads as one.
                    dt { "Items" } dd {
                        @if s.items.is_empty() { (dash()) }
                        @else { ul.items { @for item in &s.items { li { (item) } } } }
                    }
                    dt { "From" } dd { @if let Some(a) = &s.start_address { (a) } @else { (dash()) } }
                    dt { "To" } dd { @if let Some(a) = &s.end_address { (a) } @else { (dash()) } }
                    dt { "Webhook URL" } dd.url { @if let Some(u) = &s.webhook_url { (u) } @else { (dash()) } }
                    dt { "Version" } dd { (s.version) }
                    @if let Some(r) = s.rating { dt { "Rating" } dd { (r) " / 10" } }
                    @if let Some(reason) = &s.failure_reason { dt { "Failure reason" } dd { (reason) } }
                }
            }
            section.card {
                h2 { "Timeline" }
                ol.timeline {
                    @for step in timeline(&changes) {
                        li {
                            span.timeline-label { (step.label) } " "
                            span.muted { (layout::when(&step.at)) }
                            @if let Some(detail) = &step.detail { span.timeline-detail { (detail) } }
                        }
                    }
                }
            }
        }
        section {
            h2 { "Deliveries" }
            @if deliveries.data.is_empty() {
                p.muted { "Nothing has been delivered for this shipment yet: its changes go to your active webhooks, and to its own webhook_url if it has one." }
            } @else {
                (deliveries_table(&signed, &deliveries.data, Back::Shipment { code: &code, own_url: s.webhook_url.as_deref() }))
                @if deliveries.total > u64::try_from(deliveries.data.len()).unwrap_or(u64::MAX) {
                    p.muted.small {
                        "The newest " (deliveries.data.len()) " of " (deliveries.total) ". "
                        code { "shipctl shipments deliveries " (code) } " or "
                        code { "GET /api/v1/webhooks/deliveries?shipment_code=" (code) } " lists them all."
                    }
                }
            }
        }
        p { a href="/shipments" { "← All shipments" } }
    };
    Ok(Page::ok(layout::page(
        &signed,
        Section::Shipments,
        &format!("Shipment {}", s.code),
        &body,
    )))
}
