//! API key pages: the list, create (the key shown once), delete with a
//! confirmation, and a form that checks a pasted key.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};

use super::layout::{self, Section, Tone};
use super::page::{Page, PageError, PageResult, see_other, status_of};
use super::session::{Signed, SignedForm};
use shipment_sdk::model::ApiKey;

use crate::app::api_keys::{
    MAX_KEY_NAME, create_api_key, delete_api_key, find_own_key, get_api_key, list_api_keys,
};
use crate::app::{self, AppState, numeric_id};

/// What the keys page shows besides the list.
#[derive(Default)]
struct Extra<'a> {
    notice: Option<(Tone, String)>,
    name: &'a str,
}

fn masked(k: &ApiKey) -> String {
    format!("{}…{}", k.prefix, k.last4)
}

async fn keys_page(
    state: &AppState,
    signed: &Signed,
    status: StatusCode,
    extra: Extra<'_>,
) -> PageResult {
    let keys = list_api_keys(state, signed.merchant_id()).await?;
    let body = html! {
        @if let Some((tone, text)) = &extra.notice { (layout::notice(*tone, text)) }
        section {
            h2 { "Your keys" }
            @if keys.is_empty() {
                p.muted { "You have no API keys. Create one below." }
            } @else {
                div.table-wrap {
                    table {
                        thead { tr { th { "Name" } th { "Key" } th { "Created" } th { "Last used" } th { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for k in &keys {
                                tr {
                                    td data-label="Name" { (k.name) }
                                    td data-label="Key" { code { (masked(k)) } }
                                    td data-label="Created" { (layout::when(&k.created_at)) }
                                    td data-label="Last used" { (layout::maybe_when(k.last_used_at.as_ref())) }
                                    td.actions { a.button.button-danger.button-small href={ "/keys/" (k.id) "/delete" } { "Delete" span.visually-hidden { " " (k.name) } } }
                                }
                            }
                        }
                    }
                }
            }
        }
        div.columns {
            section.card {
                h2 { "Create a key" }
                form.stack method="post" action="/keys" {
                    (layout::csrf(signed))
                    label for="key-name" { "Name (optional)" }
                    input #key-name type="text" name="name" value=(extra.name) maxlength=(MAX_KEY_NAME) placeholder="e.g. checkout server" autocomplete="off";
                    button.button.button-primary type="submit" { "Create key" }
                }
            }
            section.card {
                h2 { "Check a key" }
                p.muted { "Paste a key to see whether it is one of your working keys." }
                form.stack method="post" action="/keys/verify" {
                    (layout::csrf(signed))
                    label for="verify-key" { "Key" }
                    input #verify-key type="text" name="key" required autocomplete="off" spellcheck="false" placeholder="sk_test_…";
                    button.button type="submit" { "Check key" }
                }
            }
        }
    };
    Ok(Page(
        status,
        layout::page(signed, Section::ApiKeys, "API keys", &body),
    ))
}

/// `GET /keys`.
pub(crate) async fn list_keys(
    State(state): State<AppState>,
    signed: Signed,
    RawQuery(query): RawQuery,
) -> PageResult {
    let notice = match query.as_deref() {
        Some("deleted") => Some((
            Tone::Success,
            "The key was deleted. It no longer works.".to_owned(),
        )),
        _ => None,
    };
    keys_page(
        &state,
        &signed,
        StatusCode::OK,
        Extra {
            notice,
            ..Extra::default()
        },
    )
    .await
}

/// `POST /keys`: creates a key and shows it, once, in this response (never
/// in a URL, and `Cache-Control: no-store` keeps it out of caches).
pub(crate) async fn create_key(
    State(state): State<AppState>,
    SignedForm { signed, form }: SignedForm,
) -> PageResult {
    let name = form.get("name");
    let (info, key) = match create_api_key(&state, signed.merchant_id(), name).await {
        Ok(created) => created,
        Err(e) if e.is_callers() => {
            let extra = Extra {
                notice: Some((Tone::Error, layout::sentence(&e.to_string()))),
                name: name.unwrap_or(""),
            };
            return keys_page(&state, &signed, status_of(&e), extra).await;
        }
        Err(e) => return Err(e.into()),
    };
    let body = html! {
        p { "Your new key " strong { (info.name) } " is ready. Programs send it in the " code { "X-API-KEY" } " header." }
        (layout::secret_once("new-key", "Your new API key", key.expose()))
        p { a.button.button-primary href="/keys" { "I have copied it: back to API keys" } }
    };
    Ok(Page(
        StatusCode::CREATED,
        layout::page(&signed, Section::ApiKeys, "Key created", &body),
    ))
}

/// `POST /keys/verify`: the keys page with the verdict on a pasted key.
pub(crate) async fn verify_key(
    State(state): State<AppState>,
    SignedForm { signed, form }: SignedForm,
) -> PageResult {
    let pasted = form.get("key").unwrap_or("");
    let notice = match find_own_key(&state, signed.merchant_id(), pasted).await? {
        Some(k) => (Tone::Success, format!("Valid: this is your key “{}” ({}).", k.name, masked(&k))),
        None => (
            Tone::Error,
            "Not valid: this is not a working key of your account (mistyped, deleted, another account's, or for another environment).".to_owned(),
        ),
    };
    let extra = Extra {
        notice: Some(notice),
        ..Extra::default()
    };
    keys_page(&state, &signed, StatusCode::OK, extra).await
}

async fn own_key(state: &AppState, signed: &Signed, id: &str) -> PageResult<ApiKey> {
    match get_api_key(state, signed.merchant_id(), numeric_id(id)?).await {
        Err(app::Error::NotFound(_)) => {
            Err(PageError::NotFound("You have no API key with this id."))
        }
        other => Ok(other?),
    }
}

fn confirm(signed: &Signed, k: &ApiKey) -> Markup {
    html! {
        div.card {
            p { "Delete the key " strong { (k.name) } " (" code { (masked(k)) } ")?" }
            p { "Programs that use it are refused (401) at once. This cannot be undone." }
            form.inline-actions method="post" action={ "/keys/" (k.id) "/delete" } {
                (layout::csrf(signed))
                button.button.button-danger type="submit" { "Delete key" }
                a.button.button-quiet href="/keys" { "Cancel" }
            }
        }
    }
}

/// `GET /keys/{id}/delete`: the confirmation step.
pub(crate) async fn confirm_delete_key(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
) -> PageResult {
    let key = own_key(&state, &signed, &id).await?;
    Ok(Page::ok(layout::page(
        &signed,
        Section::ApiKeys,
        "Delete API key",
        &confirm(&signed, &key),
    )))
}

/// `POST /keys/{id}/delete`: deletes the key; it stops working at once.
pub(crate) async fn delete_key(
    State(state): State<AppState>,
    Path(id): Path<String>,
    SignedForm { signed, .. }: SignedForm,
) -> PageResult<Response> {
    match delete_api_key(&state, signed.merchant_id(), numeric_id(&id)?).await {
        Ok(()) => Ok(see_other("/keys?deleted")),
        Err(app::Error::NotFound(_)) => {
            Err(PageError::NotFound("You have no API key with this id."))
        }
        Err(e) => Err(e.into()),
    }
}
