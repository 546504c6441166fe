//! `shipctl listen --forward-to URL`: every change of the merchant's
//! shipments, from the service's listener stream, POSTed to a local app
//! exactly as a webhook delivery would be.
//!
//! The service never connects to the laptop: `shipctl` holds the stream
//! open (`GET /webhooks/listen`) and makes each local POST itself, so the
//! local app needs no public address and no certificate. The stream is
//! reopened with back-off when it drops, resuming after the last change
//! received.

use std::io::Write;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Serialize;
use shipment_sdk::model::{ListenerDelivery, SigningKey};
use shipment_sdk::{Listener, ListenerStream};

use crate::cli::ListenArgs;
use crate::error::{FAILURE, Failure, Surface, root_cause};
use crate::output::{self, Format};
use crate::{Ctx, USER_AGENT, note};

/// First pause before reconnecting; doubled after each attempt that did
/// not give a healthy stream.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// Longest pause between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A stream that stayed open this long, or brought a delivery, was
/// healthy: the pause starts again from [`FIRST_BACKOFF`]. Its `ready`
/// event alone does not count, or a service that ends every stream right
/// after it would be reconnected to in a tight loop.
const HEALTHY_AFTER: Duration = Duration::from_secs(30);

/// The credential the stream is opened with: the API key if the profile
/// has one, else the dashboard session (both see the same merchant).
enum Credential {
    Key(shipment_sdk::Client),
    Session(shipment_sdk::DashboardClient),
}

impl Credential {
    fn of(ctx: &Ctx) -> Result<Credential, Failure> {
        if ctx.settings.api_key.is_some() {
            return ctx.client().map(Credential::Key);
        }
        ctx.dashboard().map(Credential::Session).map_err(|_| {
            Failure::new(
                crate::error::AUTH,
                "listening needs the API key or a dashboard session, and the profile has neither",
            )
            .hint("set an API key (`shipctl config set api-key`) or run `shipctl login`")
        })
    }

    fn listener(&self) -> Listener<'_> {
        match self {
            Credential::Key(client) => client.listener(),
            Credential::Session(dashboard) => dashboard.listener(),
        }
    }

    fn fail(&self, e: shipment_sdk::Error) -> Failure {
        match self {
            Credential::Key(_) => Failure::sdk(e, Surface::Shipments),
            Credential::Session(_) => Failure::sdk(e, Surface::Webhooks),
        }
    }
}

/// One line of output per delivery.
#[derive(Debug, Serialize)]
struct Forwarded<'a> {
    time: DateTime<Utc>,
    delivery_id: &'a str,
    shipment_code: &'a str,
    version: i64,
    status: Option<String>,
    /// The local app's HTTP status, when it answered.
    response_status: Option<u16>,
    /// Why the local POST failed: no connection, a time-out, or a status
    /// of 400 or more.
    error: Option<String>,
    /// Where a redirect (3xx) of the local app pointed: shown, never
    /// followed (the body and signature go to `--forward-to` only).
    location: Option<String>,
    duration_ms: u64,
}

/// Runs `shipctl listen`.
pub async fn exec(ctx: &Ctx, out: &mut dyn Write, args: ListenArgs) -> Result<(), Failure> {
    let credential = Credential::of(ctx)?;
    let listener = credential.listener();
    if args.print_secret {
        let key = match listener.signing_key().await {
            Ok(Some(key)) => Ok(key),
            // The first key is made as a first listener would make it.
            Ok(None) => listener.rotate_signing_key().await,
            Err(e) => Err(e),
        }
        .map_err(|e| credential.fail(e))?;
        writeln!(out, "{}", output::escape(key.signing_key.expose()))?;
        return Ok(());
    }
    if args.rotate_secret {
        let key = listener
            .rotate_signing_key()
            .await
            .map_err(|e| credential.fail(e))?;
        match &args.forward_to {
            None => {
                writeln!(out, "{}", output::escape(key.signing_key.expose()))?;
                return Ok(());
            }
            Some(_) => note(format!(
                "New listener signing key: {}",
                key.signing_key.expose()
            )),
        }
    }
    let Some(target) = args.forward_to.as_deref() else {
        return Err(Failure::usage("--forward-to URL is needed to listen"));
    };
    let target = local_url(target)?;
    let http = reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .timeout(args.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .danger_accept_invalid_certs(args.skip_verify)
        .build()
        .map_err(|e| Failure::new(FAILURE, format!("cannot make the HTTP client: {e}")))?;
    let forwarding = forward(&credential, &http, &target, ctx.format(), out);
    tokio::select! {
        result = forwarding => result,
        _ = tokio::signal::ctrl_c() => {
            note("Stopped.");
            Ok(())
        }
    }
}

/// Checks the `--forward-to` address: an absolute http(s) URL.
fn local_url(raw: &str) -> Result<reqwest::Url, Failure> {
    let url = reqwest::Url::parse(raw)
        .map_err(|e| Failure::usage(format!("--forward-to `{raw}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(Failure::usage(format!(
            "--forward-to `{raw}` must be an http:// or https:// address"
        )));
    }
    Ok(url)
}

/// Connects, forwards every delivery, and reconnects when the stream ends
/// or breaks, after a pause that doubles while streams stay unhealthy;
/// returns only on an error that reconnecting cannot fix (the credential
/// refused, the route missing).
async fn forward(
    credential: &Credential,
    http: &reqwest::Client,
    target: &reqwest::Url,
    format: Format,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let listener = credential.listener();
    let mut last_event_id: Option<i64> = None;
    let mut key_shown: Option<String> = None;
    let mut backoff = FIRST_BACKOFF;
    loop {
        let why = match listener.connect(last_event_id).await {
            Ok(mut stream) => {
                announce(&stream, target, &mut key_shown);
                let opened = Instant::now();
                let relayed = relay(&mut stream, http, target, format, out).await?;
                last_event_id = stream.last_event_id().or(last_event_id);
                // The connection closes now, not after the pause.
                drop(stream);
                if relayed.delivered > 0 || opened.elapsed() >= HEALTHY_AFTER {
                    backoff = FIRST_BACKOFF;
                }
                match relayed.broke {
                    None => "The stream ended".to_owned(),
                    Some(e) => format!("The stream broke off ({e})"),
                }
            }
            Err(e) if reconnectable(&e) => format!("Cannot reach the service ({e})"),
            Err(e) => return Err(credential.fail(e)),
        };
        note(format!("{why}; reconnecting in {} s", backoff.as_secs()));
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Whether connecting again later may work: anything on the way (no
/// connection, a connection closed before or while answering, a time-out,
/// a stream not as expected), throttling and the service's own failures
/// (5xx). A refusal of the credential or the request (401, 403, 404, other
/// 4xx) and a wrong setting are final.
fn reconnectable(e: &shipment_sdk::Error) -> bool {
    use shipment_sdk::Error;
    match e {
        Error::Api(api) => e.is_retryable() || api.status >= 500,
        Error::Connect(_)
        | Error::Timeout(_)
        | Error::Transport(_)
        | Error::Stream(_)
        | Error::Decode { .. } => true,
        _ => false,
    }
}

/// `Ready! …` with the key on the first connection, and again if the key
/// changed since (it was rotated).
fn announce(stream: &ListenerStream, target: &reqwest::Url, shown: &mut Option<String>) {
    let key: &SigningKey = stream.signing_key();
    let key = key.signing_key.expose();
    if shown.as_deref() == Some(key) {
        note("Reconnected");
        return;
    }
    // The signing key goes to stderr, with the other notes: stdout is the
    // record of deliveries.
    let _ = writeln!(
        anstream::stderr(),
        "Ready! Forwarding to {target}. Signing key: {}",
        output::escape(key)
    );
    *shown = Some(key.to_owned());
}

/// How a stream went: deliveries forwarded, and the error it broke off
/// with (`None`: it ended).
struct Relayed {
    delivered: u64,
    broke: Option<shipment_sdk::Error>,
}

/// Forwards deliveries until the stream ends or breaks.
async fn relay(
    stream: &mut ListenerStream,
    http: &reqwest::Client,
    target: &reqwest::Url,
    format: Format,
    out: &mut dyn Write,
) -> Result<Relayed, Failure> {
    let mut delivered = 0;
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                return Ok(Relayed {
                    delivered,
                    broke: Some(e),
                });
            }
        };
        delivered += 1;
        let line = post(http, target, &event.delivery).await;
        match format {
            Format::Table => table_line(out, &line)?,
            Format::Json | Format::Ndjson => output::json_line(out, &line)?,
        }
        out.flush()?;
    }
    Ok(Relayed {
        delivered,
        broke: None,
    })
}

/// POSTs one delivery to the local app, byte for byte, and says how it went.
async fn post<'a>(
    http: &reqwest::Client,
    target: &reqwest::Url,
    delivery: &'a ListenerDelivery,
) -> Forwarded<'a> {
    let started = Instant::now();
    let sent = http
        .post(target.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(webhook_verify::SIGNATURE_HEADER, &delivery.signature)
        .header("X-Service-Delivery-Id", &delivery.delivery_id)
        .body(delivery.body.clone())
        .send()
        .await;
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
        time: Utc::now(),
        delivery_id: &delivery.delivery_id,
        shipment_code: &delivery.shipment_code,
        version: delivery.version,
        status: shipment_status(&delivery.body),
        response_status,
        error,
        location,
        duration_ms,
    }
}

/// The `status` of the shipment a body carries, for the line.
fn shipment_status(body: &str) -> Option<String> {
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
/// what the stream carried [escaped](output::escape).
fn table_line(out: &mut dyn Write, line: &Forwarded<'_>) -> std::io::Result<()> {
    let status = line.status.as_deref().unwrap_or("?");
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
        line.duration_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
            duration_ms: 12,
        };
        let mut out = Vec::new();
        table_line(&mut out, &line).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("SHP-7K3M-Q9ZX  v3"), "{text}");
        assert!(text.contains("delivered"), "{text}");
        assert!(text.contains("-> 200  12 ms"), "{text}");
        assert_eq!(shipment_status("not json"), None);
    }
}
