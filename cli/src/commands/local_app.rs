//! The local app that `listen` and `replay` POST deliveries to: its
//! address, its client, the POST with a webhook delivery's headers (the
//! Standard Webhooks ones signed at the time of the POST), and the line
//! printed for each.

use std::io::Write;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Serialize;
use shipment_sdk::model::ListenerDelivery;

use crate::USER_AGENT;
use crate::error::{FAILURE, Failure, root_cause};
use crate::output::{self, Format};

/// The header that names a delivery, as the service's webhook deliveries
/// carry it.
pub const DELIVERY_ID_HEADER: &str = "X-Service-Delivery-Id";
/// The W3C Trace Context header a forwarded delivery carries when its
/// change was made in a trace, as the service's webhook deliveries do.
pub const TRACEPARENT_HEADER: &str = "traceparent";

/// The `webhook-id` of a listener's delivery: `msg_<change>_l` for its
/// delivery id `dlv_<change>_l`, as the service names a webhook's
/// (`msg_<change>_w<webhook>`), the same for every time the change is
/// forwarded or replayed, so the local app drops repeats by it. (An id not
/// of that shape, from a hand-edited recording, is kept whole after
/// `msg_`.)
pub fn message_id(delivery_id: &str) -> String {
    let change = delivery_id.strip_prefix("dlv_").unwrap_or(delivery_id);
    format!("msg_{change}")
}

/// How a POST carries the Standard Webhooks headers. (No `Debug`: it
/// holds the key.)
#[derive(Clone, Copy)]
pub enum Standard<'a> {
    /// `webhook-id` (this one), `webhook-timestamp` (now) and
    /// `webhook-signature`, signed with `key` (the listener signing key) at
    /// the time of the POST.
    Signed {
        /// The delivery's `webhook-id`.
        message_id: &'a str,
        /// The listener signing key (`whsec_...`).
        key: &'a str,
    },
    /// None of them (`replay` without the key: see its help).
    Without,
}

/// The client that POSTs to the local app: no redirect followed (the body
/// and signature go to the address given only).
pub fn local_client(timeout: Duration, skip_verify: bool) -> Result<reqwest::Client, Failure> {
    reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .danger_accept_invalid_certs(skip_verify)
        .build()
        .map_err(|e| Failure::new(FAILURE, format!("cannot make the HTTP client: {e}")))
}

/// Checks the `--forward-to` address: an absolute http(s) URL.
pub fn local_url(raw: &str) -> Result<reqwest::Url, Failure> {
    let url = reqwest::Url::parse(raw)
        .map_err(|e| Failure::usage(format!("--forward-to `{raw}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(Failure::usage(format!(
            "--forward-to `{raw}` must be an http:// or https:// address"
        )));
    }
    Ok(url)
}

/// One line of output per delivery.
#[derive(Debug, Serialize)]
pub struct Forwarded<'a> {
    time: DateTime<Utc>,
    delivery_id: &'a str,
    shipment_code: &'a str,
    version: i64,
    status: Option<String>,
    /// The local app's HTTP status, when it answered.
    response_status: Option<u16>,
    /// Why the local POST failed: no connection, a time-out, or a status
    /// of 400 or more.
    pub error: Option<String>,
    /// Where a redirect (3xx) of the local app pointed: shown, never
    /// followed (the body and signature go to `--forward-to` only).
    location: Option<String>,
    /// How long the local POST took; `None` when printing only.
    duration_ms: Option<u64>,
}

impl<'a> Forwarded<'a> {
    /// The line of a delivery printed without `--forward-to`.
    pub(crate) fn printed(delivery: &'a ListenerDelivery, status: Option<String>) -> Forwarded<'a> {
        Forwarded {
            time: Utc::now(),
            delivery_id: &delivery.delivery_id,
            shipment_code: &delivery.shipment_code,
            version: delivery.version,
            status,
            response_status: None,
            error: None,
            location: None,
            duration_ms: None,
        }
    }
}

/// Prints a line as `--output` says, and flushes it (a script reads it at
/// once).
pub fn write_line(
    out: &mut dyn Write,
    format: Format,
    line: &Forwarded<'_>,
) -> Result<(), Failure> {
    match format {
        Format::Table => table_line(out, line)?,
        Format::Json | Format::Ndjson => output::json_line(out, line)?,
    }
    out.flush()?;
    Ok(())
}

/// POSTs one delivery to the local app, byte for byte, with the headers a
/// webhook delivery carries (the Standard Webhooks ones as `standard`
/// says, and its `traceparent`, when the change was made in a trace), and
/// says how it went.
pub async fn post<'a>(
    http: &reqwest::Client,
    target: &reqwest::Url,
    delivery: &'a ListenerDelivery,
    standard: Standard<'_>,
    status: Option<String>,
) -> Forwarded<'a> {
    let started = Instant::now();
    let mut request = http
        .post(target.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(webhook_verify::SIGNATURE_HEADER, &delivery.signature)
        .header(DELIVERY_ID_HEADER, &delivery.delivery_id);
    if let Standard::Signed { message_id, key } = standard {
        use webhook_verify::standard::{ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign};
        // Signed now, as the service signs each attempt: the local app
        // may refuse anything older than its tolerance (5 minutes).
        let timestamp = Utc::now().timestamp();
        // The key came from the service or was checked at the start
        // (`replay`), so it is base64; were it not, the seed's headers go
        // alone, as without a key.
        if let Ok(signature) = sign(key, message_id, timestamp, delivery.body.as_bytes()) {
            request = request
                .header(ID_HEADER, message_id)
                .header(TIMESTAMP_HEADER, timestamp.to_string())
                .header(SIGNATURE_HEADER, signature);
        }
    }
    // Only a value that is a valid header: a hand-edited recording must
    // not make the request fail to build.
    if let Some(traceparent) = delivery
        .traceparent
        .as_deref()
        .and_then(|v| reqwest::header::HeaderValue::from_str(v).ok())
    {
        request = request.header(TRACEPARENT_HEADER, traceparent);
    }
    let sent = request.body(delivery.body.clone()).send().await;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut location = None;
    let (response_status, error) = match sent {
        // Below 400 is delivered, as the service counts a webhook's answer.
        Ok(response) if response.status().as_u16() < 400 => {
            if response.status().is_redirection() {
                location = Some(
                    response
                        .headers()
                        .get(reqwest::header::LOCATION)
                        .map_or_else(
                            || "nowhere (no Location)".to_owned(),
                            |l| String::from_utf8_lossy(l.as_bytes()).into_owned(),
                        ),
                );
            }
            (Some(response.status().as_u16()), None)
        }
        Ok(response) => {
            let status = response.status().as_u16();
            (
                Some(status),
                Some(format!("the local app answered {status}")),
            )
        }
        Err(e) => (None, Some(describe(&e))),
    };
    Forwarded {
        response_status,
        error,
        location,
        duration_ms: Some(duration_ms),
        ..Forwarded::printed(delivery, status)
    }
}

/// The `status` of the shipment a body carries, for the line and the
/// filters.
pub fn shipment_status(body: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Status {
        status: String,
    }
    serde_json::from_str::<Status>(body).ok().map(|s| s.status)
}

/// A local POST's failure in a few words (the innermost cause says most).
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "the local app did not answer in time".into();
    }
    let cause = root_cause(e);
    if e.is_connect() {
        format!("cannot connect: {cause}")
    } else {
        format!("failed: {cause}")
    }
}

/// `2026-11-24 09:31:02Z  SHP-7K3M-Q9ZX  v3  delivered  -> 200  12 ms`,
/// what the stream carried [escaped](output::escape); without the local
/// answer when printing only.
fn table_line(out: &mut dyn Write, line: &Forwarded<'_>) -> std::io::Result<()> {
    let status = line.status.as_deref().unwrap_or("?");
    let Some(duration_ms) = line.duration_ms else {
        return writeln!(
            out,
            "{}  {}  v{:<3} {}",
            output::short_time(&line.time),
            output::escape(line.shipment_code),
            line.version,
            output::escape(status),
        );
    };
    let outcome = match (&line.response_status, &line.error, &line.location) {
        (Some(code), None, Some(to)) => format!("-> {code}, a redirect to {to} (not followed)"),
        (Some(code), None, None) => format!("-> {code}"),
        (_, Some(error), _) => format!("-> {error}"),
        (None, None, _) => "->".to_owned(),
    };
    writeln!(
        out,
        "{}  {}  v{:<3} {:<19} {}  {} ms",
        output::short_time(&line.time),
        output::escape(line.shipment_code),
        line.version,
        output::escape(status),
        output::escape(&outcome),
        duration_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_deliverys_webhook_id_names_its_change() {
        assert_eq!(message_id("dlv_7_l"), "msg_7_l");
        // A hand-edited recording's id is kept whole.
        assert_eq!(message_id("mine"), "msg_mine");
    }

    #[test]
    fn the_forward_address_must_be_http_or_https() {
        assert!(local_url("http://localhost:3000/webhooks").is_ok());
        assert!(local_url("https://127.0.0.1:8443/hooks").is_ok());
        for bad in [
            "localhost:3000",
            "ftp://localhost/x",
            "not a url",
            "/webhooks",
        ] {
            assert!(local_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_line_shows_the_change_and_the_local_answer() {
        let line = Forwarded {
            time: "2026-11-24T09:31:02Z".parse().unwrap(),
            delivery_id: "dlv_7_l",
            shipment_code: "SHP-7K3M-Q9ZX",
            version: 3,
            status: shipment_status(r#"{"status":"delivered","code":"SHP-7K3M-Q9ZX"}"#),
            response_status: Some(200),
            error: None,
            location: None,
            duration_ms: Some(12),
        };
        let mut out = Vec::new();
        table_line(&mut out, &line).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("SHP-7K3M-Q9ZX  v3"), "{text}");
        assert!(text.contains("delivered"), "{text}");
        assert!(text.contains("-> 200  12 ms"), "{text}");
        assert_eq!(shipment_status("not json"), None);
    }

    #[test]
    fn a_printed_line_has_no_local_answer() {
        let delivery = ListenerDelivery::new(
            "dlv_7_l",
            "SHP-7K3M-Q9ZX",
            3,
            "sha256=00",
            r#"{"status":"delivered"}"#,
        );
        let mut line = Forwarded::printed(&delivery, Some("delivered".into()));
        line.time = "2026-11-24T09:31:02Z".parse().unwrap();
        let mut out = Vec::new();
        table_line(&mut out, &line).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "2026-11-24 09:31:02Z  SHP-7K3M-Q9ZX  v3   delivered\n"
        );
    }
}
