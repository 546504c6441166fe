//! `shipctl listen --forward-to URL`: every change of the merchant's
//! shipments, from the service's listener stream, POSTed to a local app
//! exactly as a webhook delivery would be.
//!
//! The service never connects to the laptop: `shipctl` holds the stream
//! open (`GET /webhooks/listen`) and makes each local POST itself, so the
//! local app needs no public address and no certificate. The stream is
//! reopened with back-off when it drops, resuming after the last change
//! received.
//!
//! For scripts and CI: `--status`/`--code` filter, `--until-status`,
//! `--count` and `--max-wait` end the command with an exit code a script
//! can test, `--ready-file` says when the stream is connected, and
//! `--record` keeps every delivery for [`replay`](super::replay).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use shipment_sdk::model::{ShipmentCode, SigningKey};
use shipment_sdk::{Listener, ListenerStream};

use super::local_app::{
    Forwarded, Standard, local_client, local_url, message_id, post, shipment_status, write_line,
};
use super::recording::{Filter, Recorder};
use super::values::{parse_count, parse_duration, parse_max_wait, parse_status};
use crate::error::{FAILURE, Failure, Surface, UNAVAILABLE};
use crate::output::{self, Format};
use crate::{Ctx, note};

/// `shipctl listen`.
#[derive(Debug, Args)]
#[command(after_help = LISTEN_EXIT_CODES, after_long_help = LISTEN_HELP)]
// `--max-wait` bounds a wait, so it needs something to wait for.
#[command(group(clap::ArgGroup::new("waiting").args(["until_status", "count"]).multiple(true)))]
pub struct ListenArgs {
    /// Where to POST each delivery, e.g. http://localhost:3000/webhooks
    /// (http or https); without it, each change is only printed.
    #[arg(long, value_name = "URL")]
    pub forward_to: Option<String>,
    /// Accept any certificate from the local app (a self-signed one).
    #[arg(long)]
    pub skip_verify: bool,
    /// Longest the local app may take to answer a delivery.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Forward and print only changes to this status (repeatable: any of
    /// them).
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Vec<String>,
    /// Forward and print only changes of this shipment (repeatable: any of
    /// them).
    #[arg(long, value_name = "CODE")]
    pub code: Vec<ShipmentCode>,
    /// End with exit 0 once a change (that --status and --code let through)
    /// brings this status: with --code, that shipment's; without, any
    /// shipment's. Repeatable: any of them.
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub until_status: Vec<String>,
    /// End with exit 0 once this many changes (that --status and --code let
    /// through) were forwarded or printed.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub count: Option<u64>,
    /// End with exit 1 if --until-status or --count is not met within this
    /// time from the start (e.g. 90s, 2m; at most 24h).
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = parse_max_wait,
        requires = "waiting"
    )]
    pub max_wait: Option<Duration>,
    /// Write this file (the process id and a line end) once the stream is
    /// connected, so a script can start once `listen` is ready; a file
    /// left from before is removed at the start.
    #[arg(long, value_name = "PATH")]
    pub ready_file: Option<PathBuf>,
    /// Append every received delivery (before --status and --code) to this
    /// file, one JSON object per line: what `shipctl replay` sends again.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Print the listener signing key (made now if you have none) and exit.
    #[arg(long, conflicts_with_all = [
        "forward_to", "rotate_secret", "status", "code", "until_status", "count", "max_wait",
        "ready_file", "record",
    ])]
    pub print_secret: bool,
    /// Replace the listener signing key and print the new one (connected
    /// listeners are disconnected); with --forward-to (or another listening
    /// flag), then listen.
    #[arg(long)]
    pub rotate_secret: bool,
}

impl ListenArgs {
    /// Whether a condition ends the command: --until-status or --count.
    pub fn waits(&self) -> bool {
        !self.until_status.is_empty() || self.count.is_some()
    }

    /// Whether a flag other than --rotate-secret asks to listen.
    pub fn listens(&self) -> bool {
        self.forward_to.is_some()
            || self.waits()
            || !self.status.is_empty()
            || !self.code.is_empty()
            || self.ready_file.is_some()
            || self.record.is_some()
    }
}

/// The exit codes of `shipctl listen` (a macro, so the long help can
/// include them with `concat!`).
macro_rules! listen_exit_codes {
    () => {
        "\
Exit codes:
  0  success: --until-status or --count met, stopped with Ctrl-C, or the key
     printed or replaced
  1  --max-wait ran out before --until-status or --count was met; or the
     --ready-file or --record file could not be written
  2  usage: a wrong flag, address, status, code or file
  3  the API key or the session was refused
  4  the service has no listener stream (an older server)
  6  the service is unavailable: with --print-secret or --rotate-secret; with
     --until-status or --count, at the first connection or still when
     --max-wait runs out (otherwise listening waits and reconnects)"
    };
}

/// The exit codes of `shipctl listen`, for `-h`.
const LISTEN_EXIT_CODES: &str = listen_exit_codes!();

/// The long help of `shipctl listen`, for `--help`.
const LISTEN_HELP: &str = concat!(
    "\
Each change is POSTed to the URL exactly as a webhook delivery: the same body
bytes, Content-Type: application/json, X-Service-Signature (signed with your
listener signing key, which stays the same across runs),
X-Service-Delivery-Id (dlv_<change>_l), and the Standard Webhooks headers
webhook-id (msg_<change>_l), webhook-timestamp (when shipctl POSTs it) and
webhook-signature (v1,..., signed then with the same key), which the official
Standard Webhooks libraries verify. One line per delivery on stdout (-o ndjson
or json: one object per line). A local app that is down or answers 400 or more is shown,
not fatal. The stream reconnects by itself, resuming after the last change
received; Ctrl-C ends it.

For scripts: --ready-file PATH appears once the stream is connected;
--until-status delivered --code SHP-... --max-wait 2m ends with 0 once that
shipment is delivered, 1 if not within 2 minutes. --record FILE keeps every
delivery (with its webhook-id) for `shipctl replay FILE --forward-to URL`.

",
    listen_exit_codes!()
);

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

/// `--ready-file PATH`: checked and cleared at the start, written once the
/// first stream is connected.
struct ReadyFile(PathBuf);

impl ReadyFile {
    /// Removes a file left by an earlier run (a script would take it for
    /// this run being ready) and checks that its directory exists.
    fn prepare(path: &Path) -> Result<ReadyFile, Failure> {
        let bad = |why: String| Failure::usage(format!("--ready-file {}: {why}", path.display()));
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(bad(format!("cannot remove the file left from before: {e}"))),
        }
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(bad(format!("no directory {}", dir.display())));
        }
        Ok(ReadyFile(path.to_owned()))
    }

    /// Writes the process id, under a temporary name first and then
    /// renamed, so a script never reads a file half written.
    fn write(&self) -> Result<(), Failure> {
        let mut temporary = self.0.clone().into_os_string();
        temporary.push(format!(".{}.tmp", std::process::id()));
        let temporary = PathBuf::from(temporary);
        std::fs::write(&temporary, format!("{}\n", std::process::id()))
            .and_then(|()| std::fs::rename(&temporary, &self.0))
            .map_err(|e| {
                let _ = std::fs::remove_file(&temporary);
                Failure::new(
                    FAILURE,
                    format!("cannot write --ready-file {}: {e}", self.0.display()),
                )
            })
    }
}

/// What ends the command with exit 0: `--until-status` (a change that
/// passed the filter brings one of them) or `--count` (that many changes
/// passed the filter).
#[derive(Debug, Default)]
struct Until {
    statuses: Vec<String>,
    count: Option<u64>,
}

impl Until {
    fn waits(&self) -> bool {
        !self.statuses.is_empty() || self.count.is_some()
    }

    /// Whether the `matched`-th change that passed, which brought `status`,
    /// meets a condition; says which.
    fn met(&self, matched: u64, code: &str, status: Option<&str>) -> Option<String> {
        if let Some(status) = status.filter(|s| self.statuses.iter().any(|u| u == s)) {
            return Some(format!("{code} is {status}"));
        }
        match self.count {
            Some(n) if matched >= n => Some(format!("{matched} changes received")),
            _ => None,
        }
    }

    /// What was waited for, for the message when `--max-wait` runs out.
    fn describe(&self, filter: &Filter, matched: u64) -> String {
        let mut parts = Vec::new();
        if !self.statuses.is_empty() {
            let of = if filter.codes.is_empty() {
                "any shipment".to_owned()
            } else {
                filter
                    .codes
                    .iter()
                    .map(ShipmentCode::as_str)
                    .collect::<Vec<_>>()
                    .join(" or ")
            };
            parts.push(format!(
                "no change of {of} to {}",
                self.statuses.join(" or ")
            ));
        }
        if let Some(n) = self.count {
            parts.push(format!("{matched} of {n} changes received"));
        }
        parts.join("; ")
    }
}

/// Everything `listen` does with a delivery, decided at the start.
struct Plan {
    /// `--forward-to` and the client that POSTs to it; `None`: print only.
    target: Option<(reqwest::Client, reqwest::Url)>,
    filter: Filter,
    until: Until,
    record: Option<Recorder>,
    ready_file: Option<ReadyFile>,
    format: Format,
}

impl Plan {
    fn new(args: &ListenArgs, format: Format) -> Result<Plan, Failure> {
        let target = match &args.forward_to {
            Some(raw) => Some((
                local_client(args.timeout, args.skip_verify)?,
                local_url(raw)?,
            )),
            None => None,
        };
        let filter = Filter {
            statuses: args.status.clone(),
            codes: args.code.clone(),
        };
        let until = Until {
            statuses: args.until_status.clone(),
            count: args.count,
        };
        // A wait that the filter makes impossible would only end with
        // --max-wait (or never): a usage error instead.
        if !filter.statuses.is_empty()
            && !until.statuses.is_empty()
            && !until.statuses.iter().any(|u| filter.statuses.contains(u))
        {
            return Err(Failure::usage(format!(
                "--until-status {} cannot be met: --status lets only {} through",
                until.statuses.join(", "),
                filter.statuses.join(", ")
            )));
        }
        let ready_file = args
            .ready_file
            .as_deref()
            .map(ReadyFile::prepare)
            .transpose()?;
        let record = args.record.as_deref().map(Recorder::open).transpose()?;
        Ok(Plan {
            target,
            filter,
            until,
            record,
            ready_file,
            format,
        })
    }
}

/// How far `listen` got, for the message when `--max-wait` runs out.
#[derive(Debug, Default)]
struct Progress {
    /// A stream is open now.
    connected: bool,
    /// A stream was opened at least once.
    ever_connected: bool,
    /// Changes that passed the filter.
    matched: u64,
    /// Why the last connection attempt or stream failed.
    last_problem: Option<String>,
}

/// How the command ends.
enum End {
    Done(Result<(), Failure>),
    Interrupted,
    TimedOut,
}

/// Runs `shipctl listen`.
pub async fn exec(ctx: &Ctx, out: &mut dyn Write, args: ListenArgs) -> Result<(), Failure> {
    let started = tokio::time::Instant::now();
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
    // Checked before the key is replaced: a wrong flag changes nothing.
    let mut plan = Plan::new(&args, ctx.format())?;
    if args.rotate_secret {
        let key = listener
            .rotate_signing_key()
            .await
            .map_err(|e| credential.fail(e))?;
        if !args.listens() {
            writeln!(out, "{}", output::escape(key.signing_key.expose()))?;
            return Ok(());
        }
        note(format!(
            "New listener signing key: {}",
            key.signing_key.expose()
        ));
    }
    let deadline = args.max_wait.map(|wait| started + wait);
    let mut progress = Progress::default();
    let end = {
        let forwarding = forward(&credential, &mut plan, out, &mut progress);
        tokio::select! {
            result = forwarding => End::Done(result),
            _ = tokio::signal::ctrl_c() => End::Interrupted,
            () = until(deadline) => End::TimedOut,
        }
    };
    match end {
        End::Done(result) => result,
        End::Interrupted => {
            note("Stopped.");
            Ok(())
        }
        End::TimedOut => {
            let wait = args.max_wait.unwrap_or_default();
            let wait = format!("--max-wait {} s", wait.as_secs_f64());
            let waited_for = plan.until.describe(&plan.filter, progress.matched);
            if progress.connected {
                Err(Failure::new(
                    FAILURE,
                    format!("{wait} ran out: {waited_for}"),
                ))
            } else {
                let why = progress
                    .last_problem
                    .unwrap_or_else(|| "not connected".to_owned());
                Err(Failure::new(
                    UNAVAILABLE,
                    format!("{wait} ran out while the service was unavailable ({why})"),
                ))
            }
        }
    }
}

/// Completes at `deadline`, or never without one.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Connects, forwards every delivery, and reconnects when the stream ends
/// or breaks, after a pause that doubles while streams stay unhealthy;
/// returns when a waiting condition is met, or on an error that
/// reconnecting cannot fix (the credential refused, the route missing; and
/// when waiting, a service unavailable at the first connection: a script
/// should not hang on a wrong address).
async fn forward(
    credential: &Credential,
    plan: &mut Plan,
    out: &mut dyn Write,
    progress: &mut Progress,
) -> Result<(), Failure> {
    let listener = credential.listener();
    let mut last_event_id: Option<i64> = None;
    let mut key_shown: Option<String> = None;
    let mut backoff = FIRST_BACKOFF;
    loop {
        let why = match listener.connect(last_event_id).await {
            Ok(mut stream) => {
                progress.connected = true;
                announce(&stream, plan.target.as_ref().map(|t| &t.1), &mut key_shown);
                if !progress.ever_connected {
                    progress.ever_connected = true;
                    if let Some(ready) = &plan.ready_file {
                        ready.write()?;
                    }
                }
                let opened = Instant::now();
                let relayed = relay(&mut stream, plan, out, progress).await?;
                last_event_id = stream.last_event_id().or(last_event_id);
                // The connection closes now, not after the pause.
                drop(stream);
                progress.connected = false;
                if let Some(met) = relayed.met {
                    note(format!("Done: {met}."));
                    return Ok(());
                }
                if relayed.delivered > 0 || opened.elapsed() >= HEALTHY_AFTER {
                    backoff = FIRST_BACKOFF;
                }
                match relayed.broke {
                    None => "The stream ended".to_owned(),
                    Some(e) => format!("The stream broke off ({e})"),
                }
            }
            Err(e) if reconnectable(&e) => {
                if plan.until.waits() && !progress.ever_connected {
                    let mut failure = credential.fail(e);
                    failure.code = UNAVAILABLE;
                    return Err(failure);
                }
                format!("Cannot reach the service ({e})")
            }
            Err(e) => return Err(credential.fail(e)),
        };
        note(format!("{why}; reconnecting in {} s", backoff.as_secs()));
        progress.last_problem = Some(why);
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
fn announce(stream: &ListenerStream, target: Option<&reqwest::Url>, shown: &mut Option<String>) {
    let key: &SigningKey = stream.signing_key();
    let key = key.signing_key.expose();
    if shown.as_deref() == Some(key) {
        note("Reconnected");
        return;
    }
    let doing = match target {
        Some(target) => format!("Forwarding to {target}"),
        None => "Printing each change (no --forward-to)".to_owned(),
    };
    // The signing key goes to stderr, with the other notes: stdout is the
    // record of deliveries.
    let _ = writeln!(
        anstream::stderr(),
        "Ready! {doing}. Signing key: {}",
        output::escape(key)
    );
    *shown = Some(key.to_owned());
}

/// How a stream went: deliveries received, the error it broke off with
/// (`None`: it ended), or the condition met.
struct Relayed {
    delivered: u64,
    broke: Option<shipment_sdk::Error>,
    met: Option<String>,
}

/// Records, filters and forwards (or prints) deliveries until the stream
/// ends or breaks, or a waiting condition is met.
async fn relay(
    stream: &mut ListenerStream,
    plan: &mut Plan,
    out: &mut dyn Write,
    progress: &mut Progress,
) -> Result<Relayed, Failure> {
    let mut delivered = 0;
    // Each forwarded delivery is signed anew with the key the stream gave
    // (Standard Webhooks binds the time of the POST into the signature).
    let key = stream.signing_key().signing_key.expose().to_owned();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                return Ok(Relayed {
                    delivered,
                    broke: Some(e),
                    met: None,
                });
            }
        };
        delivered += 1;
        let delivery = &event.delivery;
        if let Some(recorder) = &mut plan.record {
            recorder.append(delivery)?;
        }
        let status = shipment_status(&delivery.body);
        if !plan
            .filter
            .matches(&delivery.shipment_code, status.as_deref())
        {
            continue;
        }
        let line = match &plan.target {
            Some((http, target)) => {
                let message_id = message_id(&delivery.delivery_id);
                let standard = Standard::Signed {
                    message_id: &message_id,
                    key: &key,
                };
                post(http, target, delivery, standard, status.clone()).await
            }
            None => Forwarded::printed(delivery, status.clone()),
        };
        write_line(out, plan.format, &line)?;
        progress.matched += 1;
        if let Some(met) =
            plan.until
                .met(progress.matched, &delivery.shipment_code, status.as_deref())
        {
            return Ok(Relayed {
                delivered,
                broke: None,
                met: Some(met),
            });
        }
    }
    Ok(Relayed {
        delivered,
        broke: None,
        met: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_at_its_status_or_its_count() {
        let until = Until {
            statuses: vec!["delivered".into()],
            count: Some(3),
        };
        assert_eq!(until.met(1, "SHP-7K3M-Q9ZX", Some("in_transit")), None);
        assert_eq!(
            until.met(2, "SHP-7K3M-Q9ZX", Some("delivered")).as_deref(),
            Some("SHP-7K3M-Q9ZX is delivered")
        );
        assert_eq!(
            until.met(3, "SHP-7K3M-Q9ZX", None).as_deref(),
            Some("3 changes received")
        );
        assert_eq!(
            until.describe(&Filter::default(), 2),
            "no change of any shipment to delivered; 2 of 3 changes received"
        );
    }
}
