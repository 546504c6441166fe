//! The frame every page shares (head, navigation, sign-out) and the small
//! pieces pages are built from: times, notices, pagers, secrets shown once.

use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};
use shipment_sdk::model::{Status, timestamp};

use super::session::{CSRF_FIELD, Signed};

/// The dashboard's sections, for the navigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Overview,
    Shipments,
    ApiKeys,
    Webhooks,
}

const SECTIONS: [(Section, &str, &str); 4] = [
    (Section::Overview, "/", "Overview"),
    (Section::Shipments, "/shipments", "Shipments"),
    (Section::ApiKeys, "/keys", "API keys"),
    (Section::Webhooks, "/webhooks", "Webhooks"),
];

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="referrer" content="same-origin";
            title { (title) " · Shipments dashboard" }
            link rel="icon" href="/favicon.ico" type="image/x-icon";
            link rel="stylesheet" href="/static/style.css";
            script src="/static/copy.js" defer {}
        }
    }
}

/// A page of a signed-in merchant: navigation, sign-out, `body`.
pub(crate) fn page(signed: &Signed, section: Section, title: &str, body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                header.topbar {
                    div.topbar-inner {
                        a.brand href="/" { "Shipments" span.brand-sub { "dashboard" } }
                        nav.nav aria-label="Main" {
                            @for (s, href, label) in SECTIONS {
                                a href=(href) aria-current=[(s == section).then_some("page")] { (label) }
                            }
                        }
                        form.signout method="post" action="/logout" {
                            (csrf(signed))
                            button.button.button-quiet type="submit" { "Sign out" }
                        }
                    }
                }
                main.container {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// A page for someone not (or no longer) signed in: sign-in, errors.
pub(crate) fn bare_page(title: &str, body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body.bare {
                main.container.narrow {
                    p.brand.brand-center { "Shipments" span.brand-sub { "dashboard" } }
                    div.card {
                        h1 { (title) }
                        (body)
                    }
                }
            }
        }
    }
}

/// An error page with a way back.
pub(crate) fn error_page(title: &str, detail: &str) -> Markup {
    bare_page(
        title,
        &html! {
            p { (sentence(detail)) }
            p { a.button href="/" { "Back to the dashboard" } }
        },
    )
}

/// `detail` as a sentence: capitalised, with a full stop.
pub(crate) fn sentence(detail: &str) -> String {
    let mut out = String::with_capacity(detail.len() + 1);
    let mut chars = detail.chars();
    if let Some(first) = chars.next() {
        out.extend(first.to_uppercase());
        out.push_str(chars.as_str());
    }
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}

/// The hidden CSRF field of a form.
pub(crate) fn csrf(signed: &Signed) -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(signed.csrf); }
}

/// A point in time, readable, with the exact instant for machines.
pub(crate) fn when(t: &DateTime<Utc>) -> Markup {
    html! { time datetime=(timestamp::format(t)) { (t.format("%Y-%m-%d %H:%M:%S UTC")) } }
}

/// [`when`], or a dash for "never".
pub(crate) fn maybe_when(t: Option<&DateTime<Utc>>) -> Markup {
    match t {
        Some(t) => when(t),
        None => html! { span.muted { "never" } },
    }
}

/// What kind of message a notice is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tone {
    Success,
    Error,
    Warning,
}

/// A message box.
pub(crate) fn notice(tone: Tone, text: &str) -> Markup {
    let (class, role) = match tone {
        Tone::Success => ("notice notice-success", "status"),
        Tone::Error => ("notice notice-error", "alert"),
        Tone::Warning => ("notice notice-warning", "alert"),
    };
    html! { div class=(class) role=(role) { (text) } }
}

/// A status as a coloured badge.
pub(crate) fn status_badge(status: &Status) -> Markup {
    let tone = match status {
        Status::Delivered => "badge-good",
        Status::Failed | Status::Returned => "badge-bad",
        Status::Cancelled => "badge-muted",
        _ => "badge-busy",
    };
    html! { span class={ "badge " (tone) } { (status_label(status)) } }
}

/// A status in words.
pub(crate) fn status_label(status: &Status) -> String {
    let s = status.as_str().replace('_', " ");
    sentence(&s).trim_end_matches('.').to_owned()
}

/// Previous and next links for a list of `total_pages` pages; `href`
/// makes the link of a page number.
pub(crate) fn pager(
    page: u32,
    total_pages: u64,
    total: u64,
    href: &dyn Fn(u32) -> String,
) -> Markup {
    let last = u32::try_from(total_pages).unwrap_or(u32::MAX).max(1);
    html! {
        nav.pager aria-label="Pages" {
            @if page > 1 {
                a.button.button-quiet rel="prev" href=(href(page.saturating_sub(1).min(last))) { "← Newer" }
            }
            span.pager-info { "Page " (page) " of " (last) " · " (total) " in all" }
            @if u64::from(page) < total_pages {
                a.button.button-quiet rel="next" href=(href(page + 1)) { "Older →" }
            }
        }
    }
}

/// A secret shown once: a read-only field to copy from, a copy button
/// (shown by the script), and the warning.
pub(crate) fn secret_once(id: &str, label: &str, value: &str) -> Markup {
    html! {
        div.secret-box {
            (notice(Tone::Warning, "Copy it now and keep it somewhere safe: it will not be shown again."))
            label for=(id) { (label) }
            div.copy-row {
                input.secret id=(id) type="text" value=(value) readonly autocomplete="off" spellcheck="false";
                button.button type="button" data-copy=(id) hidden { "Copy" }
            }
        }
    }
}
