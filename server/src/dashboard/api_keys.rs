//! API key pages: the list (with each key's permissions, expiry and last
//! use), create (full or restricted, expiring or not; the key shown once),
//! delete with a confirmation, and a form that checks a pasted key.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};

use super::layout::{self, Section, Tone};
use super::page::{Page, PageError, PageResult, see_other, status_of};
use super::session::{Signed, SignedForm};
use chrono::{Duration, NaiveDate, Utc};
use shipment_sdk::model::{Access, ApiKey, CreateApiKey, Permissions, Resource};

use super::session::Form;
use crate::app::api_keys::{
    MAX_KEY_NAME, create_requested_key, delete_api_key, find_own_key, get_api_key, list_api_keys,
};
use crate::app::{self, AppState, numeric_id};
use crate::domain::FieldError;

/// What the keys page shows besides the list.
#[derive(Default)]
struct Extra<'a> {
    notice: Option<(Tone, String)>,
    name: &'a str,
}

fn masked(k: &ApiKey) -> String {
    format!("{}…{}", k.prefix, k.last4)
}

/// A key's permissions in words: `full access`, or the resources it may
/// use (`shipments: read, couriers: read`), or none.
fn permissions_text(k: &ApiKey) -> String {
    let Some(p) = k.permissions else {
        return "full access".to_owned();
    };
    let granted: Vec<String> = Resource::ALL
        .into_iter()
        .filter(|r| p.get(*r) != Access::None)
        .map(|r| format!("{r}: {}", p.get(r)))
        .collect();
    if granted.is_empty() {
        "none (it can only identify itself)".to_owned()
    } else {
        granted.join(", ")
    }
}

/// What a person reads for a resource in the create form.
fn resource_label(resource: Resource) -> &'static str {
    match resource {
        Resource::Shipments => "Shipments",
        Resource::Couriers => "Courier companies",
        Resource::Listen => "Listening to changes",
        Resource::Testing => "Test controls",
        _ => "Other",
    }
}

/// What a person reads for a level in the create form.
fn level_label(resource: Resource, access: Access) -> &'static str {
    match (resource, access) {
        (_, Access::None) => "No access",
        (Resource::Shipments, Access::Read) => "Read: list and view",
        (Resource::Shipments, Access::Write) => "Write: also create, cancel, rate",
        (Resource::Listen, Access::Read) => "Read: listen, get the signing key",
        (Resource::Listen, Access::Write) => "Write: also replace the signing key",
        (Resource::Testing, Access::Write) => "Use (test mode only)",
        (_, Access::Read) => "Read",
        _ => "Write",
    }
}

/// The expiry choices of the create form: the field's value and its words.
const EXPIRY_CHOICES: [(&str, &str); 5] = [
    ("never", "Never"),
    ("7", "In 7 days"),
    ("30", "In 30 days"),
    ("90", "In 90 days"),
    ("date", "On a date (below)"),
];

/// The key the create form asks for, read from its fields: `access`
/// (`full` or `restricted`), `permission-<resource>` per resource,
/// `expires` (one of [`EXPIRY_CHOICES`]) and `expires-on` (a date; the key
/// stops working as it begins, 00:00 UTC).
fn requested_key(form: &Form) -> Result<CreateApiKey, FieldError> {
    let permissions = match form.get("access").unwrap_or("full") {
        "full" => None,
        "restricted" => {
            let mut p = Permissions::none();
            for resource in Resource::ALL {
                let field = format!("permission-{resource}");
                let level = form.get(&field).unwrap_or("none");
                let access = Access::from_name(level).ok_or_else(|| {
                    FieldError::invalid(&field, format!("choose a level for {resource}"))
                })?;
                p = p.with(resource, access);
            }
            Some(p)
        }
        _ => {
            return Err(FieldError::invalid(
                "access",
                "choose full access or restricted",
            ));
        }
    };
    let expires_at = match form.get("expires").unwrap_or("never") {
        "never" => None,
        "date" => {
            let day = form.get("expires-on").unwrap_or("").trim();
            let date = NaiveDate::parse_from_str(day, "%Y-%m-%d").map_err(|_| {
                FieldError::invalid("expires-on", "choose the date on which the key expires")
            })?;
            Some(date.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        }
        days => match days.parse::<i64>() {
            Ok(days @ (7 | 30 | 90)) => Some(Utc::now() + Duration::days(days)),
            _ => {
                return Err(FieldError::invalid(
                    "expires",
                    "choose when the key expires",
                ));
            }
        },
    };
    Ok(CreateApiKey {
        name: form.get("name").map(str::to_owned),
        permissions,
        expires_at,
    })
}

/// The create form: a name, full access or a level per resource (only the
/// levels each resource has; a support person's reading key to start
/// with), and an expiry.
fn create_form(signed: &Signed, name: &str) -> Markup {
    let start = Permissions::read_only();
    html! {
        form.stack method="post" action="/keys" {
            (layout::csrf(signed))
            label for="key-name" { "Name (optional)" }
            input #key-name type="text" name="name" value=(name) maxlength=(MAX_KEY_NAME) placeholder="e.g. checkout server" autocomplete="off";
            label for="key-access" { "What the key may do" }
            select #key-access name="access" aria-describedby="key-access-help" {
                option value="full" selected { "Full access: everything your account can do" }
                option value="restricted" { "Restricted: only what is chosen below" }
            }
            p #key-access-help .muted { "A restricted key starts with rk_ and is refused (403) for anything beyond its permissions." }
            fieldset.stack {
                legend { "Permissions of a restricted key" }
                @for resource in Resource::ALL {
                    @let id = format!("key-permission-{resource}");
                    label for=(id) { (resource_label(resource)) }
                    select id=(id) name={ "permission-" (resource) } {
                        @for level in resource.levels() {
                            option value=(level.name()) selected[*level == start.get(resource)] { (level_label(resource, *level)) }
                        }
                    }
                }
            }
            label for="key-expires" { "Expires" }
            select #key-expires name="expires" {
                @for (value, words) in EXPIRY_CHOICES {
                    option value=(value) selected[value == "never"] { (words) }
                }
            }
            label for="key-expires-on" { "Expiry date, when “On a date” is chosen (the key stops at 00:00 UTC that day; at most 366 days ahead)" }
            input #key-expires-on type="date" name="expires-on";
            button.button.button-primary type="submit" { "Create key" }
        }
    }
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
                        thead { tr { th { "Name" } th { "Key" } th { "Permissions" } th { "Expires" } th { "Created" } th { "Last used" } th { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for k in &keys {
                                tr {
                                    td data-label="Name" { (k.name) }
                                    td data-label="Key" { code { (masked(k)) } }
                                    td data-label="Permissions" { (permissions_text(k)) }
                                    td data-label="Expires" {
                                        (layout::maybe_when(k.expires_at.as_ref()))
                                        @if k.expired { " " span.badge.badge-bad { "expired" } }
                                    }
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
                (create_form(signed, extra.name))
            }
            section.card {
                h2 { "Check a key" }
                p.muted { "Paste a key to see whether it is one of your working keys." }
                form.stack method="post" action="/keys/verify" {
                    (layout::csrf(signed))
                    label for="verify-key" { "Key" }
                    input #verify-key type="text" name="key" required autocomplete="off" spellcheck="false" placeholder="sk_test_… or rk_test_…";
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
    let created = match requested_key(&form) {
        Ok(request) => create_requested_key(&state, signed.merchant_id(), &request).await,
        Err(e) => Err(app::Error::from(e)),
    };
    let (info, key) = match created {
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
        Some(k) if k.expired => (Tone::Error, format!("Expired: this is your key “{}” ({}), but it no longer works.", k.name, masked(&k))),
        Some(k) => (Tone::Success, format!("Valid: this is your key “{}” ({}; {}).", k.name, masked(&k), permissions_text(&k))),
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
