//! Webhook pages: the list, register (the signing key shown once), enable
//! and disable, delete with a confirmation, each webhook's delivery health
//! (its charts, in `health`) and delivery log with its redelivery forms,
//! and rotating the shipment signing key.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use shipment_sdk::model::{Webhook, WebhookId};

use super::deliveries::{Back, Queued, deliveries_table};
use super::health;
use super::layout::{self, Section, Tone};
use super::page::{Page, PageError, PageResult, see_other, status_of};
use super::session::{Signed, SignedForm};
use crate::app::AppState;
use crate::app::webhooks::{self, delivery_health, delivery_log, get_webhook};
use crate::app::{self, numeric_id};
use crate::domain::list_query::parse_page;

const NO_SUCH_WEBHOOK: &str = "You have no webhook with this id.";

/// What the webhooks page shows besides the list.
#[derive(Default)]
struct Extra<'a> {
    notice: Option<(Tone, String)>,
    url: &'a str,
}

fn active_badge(active: bool) -> Markup {
    if active {
        html! { span.badge.badge-good { "Active" } }
    } else {
        html! { span.badge.badge-muted { "Disabled" } }
    }
}

/// The enable or disable button of a webhook; `back` is where to return.
fn toggle(signed: &Signed, w: &Webhook, back: &str) -> Markup {
    let (action, label) = if w.active {
        ("disable", "Disable")
    } else {
        ("enable", "Enable")
    };
    html! {
        form.inline method="post" action={ "/webhooks/" (w.webhook_id) "/" (action) } {
            (layout::csrf(signed))
            input type="hidden" name="back" value=(back);
            button.button.button-small type="submit" { (label) span.visually-hidden { " " (w.url) } }
        }
    }
}

async fn webhooks_page(
    state: &AppState,
    signed: &Signed,
    status: StatusCode,
    extra: Extra<'_>,
) -> PageResult {
    let hooks: Vec<Webhook> = webhooks::list_webhooks(state, signed.merchant_id()).await?;
    let body = html! {
        @if let Some((tone, text)) = &extra.notice { (layout::notice(*tone, text)) }
        section {
            h2 { "Your webhooks" }
            @if hooks.is_empty() {
                p.muted { "No webhooks yet. Register an HTTPS endpoint below to be told about every shipment change." }
            } @else {
                div.table-wrap {
                    table {
                        thead { tr { th { "Endpoint" } th { "State" } th { "Registered" } th { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for w in &hooks {
                                tr {
                                    td.url data-label="Endpoint" { a href={ "/webhooks/" (w.webhook_id) } { (w.url) } }
                                    td data-label="State" { (active_badge(w.active)) }
                                    td data-label="Registered" { (layout::when(&w.created_at)) }
                                    td.actions {
                                        a.button.button-small.button-quiet href={ "/webhooks/" (w.webhook_id) } { "Deliveries" }
                                        (toggle(signed, w, "list"))
                                        a.button.button-small.button-danger href={ "/webhooks/" (w.webhook_id) "/delete" } { "Delete" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        div.columns {
            section.card {
                h2 { "Register a webhook" }
                form.stack method="post" action="/webhooks" {
                    (layout::csrf(signed))
                    label for="webhook-url" { "Endpoint URL (HTTPS)" }
                    input #webhook-url type="url" name="url" value=(extra.url) required placeholder="https://shop.example.com/webhooks/shipments" autocomplete="off";
                    button.button.button-primary type="submit" { "Register webhook" }
                }
            }
            section.card {
                h2 { "Shipment signing key" }
                p.muted { "Deliveries to a shipment's own " code { "webhook_url" } " are signed with this key. You need it before creating such shipments." }
                a.button href="/webhooks/signing-key" { "Create or rotate the key" }
            }
        }
    };
    Ok(Page(
        status,
        layout::page(signed, Section::Webhooks, "Webhooks", &body),
    ))
}

/// `GET /webhooks`.
pub(crate) async fn list_webhooks(
    State(state): State<AppState>,
    signed: Signed,
    RawQuery(query): RawQuery,
) -> PageResult {
    let notice = match query.as_deref() {
        Some("enabled") => Some("The webhook is enabled: it receives deliveries again."),
        Some("disabled") => {
            Some("The webhook is disabled: nothing is sent to it until you enable it.")
        }
        Some("deleted") => Some("The webhook was deleted."),
        _ => None,
    };
    let extra = Extra {
        notice: notice.map(|n| (Tone::Success, n.to_owned())),
        ..Extra::default()
    };
    webhooks_page(&state, &signed, StatusCode::OK, extra).await
}

/// `POST /webhooks`: registers a webhook and shows its signing key once.
pub(crate) async fn register_webhook(
    State(state): State<AppState>,
    SignedForm { signed, form }: SignedForm,
) -> PageResult {
    let url = form.get("url").unwrap_or("");
    let (webhook, signing_key) =
        match webhooks::register_webhook(&state, signed.merchant_id(), url).await {
            Ok(created) => created,
            Err(e) if e.is_callers() => {
                let extra = Extra {
                    notice: Some((Tone::Error, layout::sentence(&e.to_string()))),
                    url,
                };
                return webhooks_page(&state, &signed, status_of(&e), extra).await;
            }
            Err(e) => return Err(e.into()),
        };
    let body = html! {
        p { "Every change of your shipments is now sent to " strong.url { (webhook.url) } "." }
        p { "Check the " code { "X-Service-Signature" } " header of each delivery with this key (HMAC-SHA256 of the body)." }
        (layout::secret_once("new-signing-key", "Signing key of this webhook", signing_key.expose()))
        p { a.button.button-primary href="/webhooks" { "I have copied it: back to webhooks" } }
    };
    Ok(Page(
        StatusCode::CREATED,
        layout::page(&signed, Section::Webhooks, "Webhook registered", &body),
    ))
}

async fn set_active(
    state: &AppState,
    id: &str,
    SignedForm { signed, form }: SignedForm,
    active: bool,
) -> PageResult<Response> {
    let id = numeric_id(id)?;
    match webhooks::set_webhook_active(state, signed.merchant_id(), id, active).await {
        Err(app::Error::NotFound(_)) => return Err(PageError::NotFound(NO_SUCH_WEBHOOK)),
        other => other?,
    };
    Ok(match form.get("back") {
        Some("detail") => see_other(&format!("/webhooks/{id}")),
        _ => see_other(if active {
            "/webhooks?enabled"
        } else {
            "/webhooks?disabled"
        }),
    })
}

/// `POST /webhooks/{id}/enable`.
pub(crate) async fn enable_webhook(
    State(state): State<AppState>,
    Path(id): Path<String>,
    form: SignedForm,
) -> PageResult<Response> {
    set_active(&state, &id, form, true).await
}

/// `POST /webhooks/{id}/disable`.
pub(crate) async fn disable_webhook(
    State(state): State<AppState>,
    Path(id): Path<String>,
    form: SignedForm,
) -> PageResult<Response> {
    set_active(&state, &id, form, false).await
}

/// What the "Redeliver failures since…" form shows in its fields: the
/// last day by default, what was typed after a refusal.
#[derive(Debug, Clone, Default)]
pub(crate) struct RedeliverFields {
    /// `failed_since`, as a `datetime-local` value.
    pub since: String,
    /// `failed_until`, as a `datetime-local` value (empty: now).
    pub until: String,
}

/// `GET /webhooks/{id}?page=N`: the webhook, its delivery health (charts
/// of the last 24 hours and 7 days, success rates, last failure), a page
/// of its delivery log (with a Redeliver button on each failure), and
/// "Redeliver failures since…"; after a redelivery form, a notice of what
/// was queued.
pub(crate) async fn show_webhook(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let id = numeric_id(&id)?;
    let (queued, query) = Queued::take(query.as_deref().unwrap_or(""));
    let notice = queued.map(Queued::notice);
    webhook_page(
        &state,
        &signed,
        id,
        &query,
        StatusCode::OK,
        notice,
        &RedeliverFields::default(),
    )
    .await
}

/// The page of webhook `id` with the delivery log page `query` asks for,
/// answered with `status`, a `notice` above it, and `fields` in the
/// redelivery form.
pub(crate) async fn webhook_page(
    state: &AppState,
    signed: &Signed,
    id: WebhookId,
    query: &str,
    status: StatusCode,
    notice: Option<Markup>,
    fields: &RedeliverFields,
) -> PageResult {
    let (page, page_size) = parse_page(query).map_err(app::Error::from)?;
    let (w, log) = delivery_log(state, signed.merchant_id(), id, page, page_size)
        .await?
        .ok_or(PageError::NotFound(NO_SUCH_WEBHOOK))?;
    let health = delivery_health(state, signed.merchant_id(), id, chrono::Utc::now()).await?;
    let since = if fields.since.is_empty() {
        // A day back, to the minute, as the field shows it.
        (chrono::Utc::now() - chrono::Duration::days(1))
            .format("%Y-%m-%dT%H:%M")
            .to_string()
    } else {
        fields.since.clone()
    };
    let body = html! {
        @if let Some(notice) = &notice { (notice) }
        div.card {
            dl.facts {
                dt { "Endpoint" } dd.url { (w.url) }
                dt { "State" } dd { (active_badge(w.active)) }
                dt { "Registered" } dd { (layout::when(&w.created_at)) }
            }
            div.inline-actions {
                (toggle(signed, &w, "detail"))
                a.button.button-small.button-danger href={ "/webhooks/" (w.webhook_id) "/delete" } { "Delete" }
            }
        }
        (health::section(&health))
        section {
            h2 { "Delivery log" }
            @if log.data.is_empty() {
                p.muted { "Nothing has been delivered to this webhook yet." }
            } @else {
                (deliveries_table(signed, &log.data, Back::Webhook))
            }
            (layout::pager(log.page, log.total_pages, log.total, &|p| format!("/webhooks/{id}?page={p}")))
        }
        section.card {
            h2 { "Redeliver failures since…" }
            p.muted {
                "Sends every change whose delivery to this webhook failed in that time, and has not been delivered since, once more: "
                "the same body and version as the first time, signed with this webhook's key (even while it is disabled). "
                "Times are UTC. Failed deliveries are never sent again unless someone asks."
            }
            form.stack method="post" action={ "/webhooks/" (w.webhook_id) "/redeliver" } {
                (layout::csrf(signed))
                label for="failed-since" { "Failed since (UTC)" }
                input #failed-since type="datetime-local" name="failed_since" value=(since) required;
                label for="failed-until" { "Failed until (UTC; empty for now)" }
                input #failed-until type="datetime-local" name="failed_until" value=(fields.until);
                button.button.button-primary type="submit" { "Redeliver failures" }
            }
        }
        p { a href="/webhooks" { "← All webhooks" } }
    };
    Ok(Page(
        status,
        layout::page(signed, Section::Webhooks, "Webhook", &body),
    ))
}

/// `GET /webhooks/{id}/delete`: the confirmation step.
pub(crate) async fn confirm_delete_webhook(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
) -> PageResult {
    let id = numeric_id(&id)?;
    let w = match get_webhook(&state, signed.merchant_id(), id).await {
        Err(app::Error::NotFound(_)) => return Err(PageError::NotFound(NO_SUCH_WEBHOOK)),
        other => other?,
    };
    let body = html! {
        div.card {
            p { "Delete the webhook " strong.url { (w.url) } "?" }
            p { "Nothing more is sent to it. Its delivery log is kept. This cannot be undone." }
            form.inline-actions method="post" action={ "/webhooks/" (w.webhook_id) "/delete" } {
                (layout::csrf(&signed))
                button.button.button-danger type="submit" { "Delete webhook" }
                a.button.button-quiet href="/webhooks" { "Cancel" }
            }
        }
    };
    Ok(Page::ok(layout::page(
        &signed,
        Section::Webhooks,
        "Delete webhook",
        &body,
    )))
}

/// `POST /webhooks/{id}/delete`.
pub(crate) async fn delete_webhook(
    State(state): State<AppState>,
    Path(id): Path<String>,
    SignedForm { signed, .. }: SignedForm,
) -> PageResult<Response> {
    match webhooks::delete_webhook(&state, signed.merchant_id(), numeric_id(&id)?).await {
        Ok(()) => Ok(see_other("/webhooks?deleted")),
        Err(app::Error::NotFound(_)) => Err(PageError::NotFound(NO_SUCH_WEBHOOK)),
        Err(e) => Err(e.into()),
    }
}

/// `GET /webhooks/signing-key`: what rotating means, and the button.
pub(crate) async fn confirm_rotate_signing_key(
    State(state): State<AppState>,
    signed: Signed,
) -> PageResult {
    let exists = webhooks::has_signing_key(&state, signed.merchant_id()).await?;
    let body = html! {
        div.card {
            p { "Deliveries to a shipment's own " code { "webhook_url" } " are signed with your shipment signing key." }
            @if exists {
                p { "You have one. A new key replaces it " strong { "at once" } ": receivers that check the old one will refuse the next deliveries until they have the new one." }
            } @else {
                p { "You have none yet: create it before creating shipments with a " code { "webhook_url" } "." }
            }
            form.inline-actions method="post" action="/webhooks/signing-key" {
                (layout::csrf(&signed))
                button.button.button-primary type="submit" { @if exists { "Rotate the key" } @else { "Create the key" } }
                a.button.button-quiet href="/webhooks" { "Cancel" }
            }
        }
    };
    Ok(Page::ok(layout::page(
        &signed,
        Section::Webhooks,
        "Shipment signing key",
        &body,
    )))
}

/// `POST /webhooks/signing-key`: creates or rotates the key; shown once.
pub(crate) async fn rotate_signing_key(
    State(state): State<AppState>,
    SignedForm { signed, .. }: SignedForm,
) -> PageResult {
    let key = webhooks::rotate_signing_key(&state, signed.merchant_id()).await?;
    let body = html! {
        p { "Made at " (layout::when(&key.created_at)) ". Any previous key no longer signs deliveries." }
        (layout::secret_once("new-shipment-signing-key", "Shipment signing key", key.signing_key.expose()))
        p { a.button.button-primary href="/webhooks" { "I have copied it: back to webhooks" } }
    };
    Ok(Page(
        StatusCode::CREATED,
        layout::page(
            &signed,
            Section::Webhooks,
            "New shipment signing key",
            &body,
        ),
    ))
}
