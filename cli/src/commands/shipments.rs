//! `shipctl shipments ...`: create, list, get, cancel, rate,
//! confirmation-code, watch, deliveries and import.

mod deliveries;
mod import;

use std::io::{self, IsTerminal as _, Read as _, Write};
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand, ValueEnum};
use futures_util::TryStreamExt as _;
use indicatif::{ProgressBar, ProgressStyle};
use rust_decimal::Decimal;
use shipment_sdk::Client;
use shipment_sdk::model::{CourierId, CreateShipment, ListShipments, Shipment, Status, WebhookUrl};

use super::values::{parse_duration, parse_time, parse_webhook_url};
use crate::error::{Failure, Surface};
use crate::output::{self, Format, Streamed};
use crate::{Ctx, note};

/// `shipctl shipments ...`.
#[derive(Debug, Subcommand)]
pub enum ShipmentsCommand {
    /// Create a shipment from flags, or from a JSON file with --file.
    Create(CreateArgs),
    /// List shipments, newest first: one page, or every page with --all.
    List(ListArgs),
    /// Show one shipment.
    Get {
        /// The shipment code, SHP-XXXX-XXXX.
        code: String,
    },
    /// Cancel a shipment (before pickup; cancelling again is harmless).
    Cancel {
        /// The shipment code, SHP-XXXX-XXXX.
        code: String,
    },
    /// Rate a delivered shipment, once, from 1 to 10.
    Rate {
        /// The shipment code, SHP-XXXX-XXXX.
        code: String,
        /// The rating, 1 to 10.
        #[arg(value_parser = clap::value_parser!(u8).range(1..=10))]
        rating: u8,
    },
    /// Generate the code the courier needs to deliver (it replaces any
    /// earlier one and lasts 72 hours).
    ConfirmationCode {
        /// The shipment code, SHP-XXXX-XXXX.
        code: String,
    },
    /// Follow a shipment until it is delivered, returned or cancelled: one
    /// line per change (with `-o ndjson`, one object per change; with `-o
    /// json`, the final shipment).
    Watch(WatchArgs),
    /// The delivery history of a shipment, newest first: every attempt to
    /// each webhook and to its own webhook_url, redeliveries included
    /// (needs `shipctl login`).
    Deliveries(DeliveriesArgs),
    /// Create shipments in bulk from a CSV or NDJSON file.
    ///
    /// Every row is sent with an idempotency key, so running the same file
    /// again creates nothing twice: an interrupted import resumes that way.
    Import(ImportArgs),
}

/// `shipctl shipments create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The courier company id (see `shipctl couriers list`).
    #[arg(long, required_unless_present = "file")]
    pub courier: Option<CourierId>,
    /// Weight in kilograms, e.g. 4.5.
    #[arg(long)]
    pub weight: Option<Decimal>,
    /// Free text, e.g. "30x20x10 cm".
    #[arg(long)]
    pub dimensions: Option<String>,
    /// Pickup address; "lat,lng" makes the fee include the distance.
    #[arg(long)]
    pub from: Option<String>,
    /// Delivery address; "lat,lng" makes the fee include the distance.
    #[arg(long)]
    pub to: Option<String>,
    /// An item label; repeat for several.
    #[arg(long = "item", value_name = "ITEM")]
    pub items: Vec<String>,
    /// What is shipped.
    #[arg(long)]
    pub description: Option<String>,
    /// HTTPS address that receives this shipment's changes.
    #[arg(long, value_parser = parse_webhook_url)]
    pub webhook_url: Option<String>,
    /// The whole request as JSON (the API's create body) instead of flags;
    /// `-` reads stdin.
    #[arg(long, conflicts_with_all = ["courier", "weight", "dimensions", "from", "to", "items", "description", "webhook_url"])]
    pub file: Option<PathBuf>,
    /// Makes a repeated create safe: the same key and body within 24 hours
    /// give the first shipment back instead of a second one.
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

/// `shipctl shipments list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this status (assigned_to_courier, assigned_to_driver,
    /// in_transit, delivered, failed, returned, cancelled, ...).
    #[arg(long)]
    pub status: Option<String>,
    /// Only this courier company id.
    #[arg(long)]
    pub courier: Option<CourierId>,
    /// Created at or after: RFC 3339 or YYYY-MM-DD (midnight UTC).
    #[arg(long, value_parser = parse_time)]
    pub created_after: Option<DateTime<Utc>>,
    /// Created before: RFC 3339 or YYYY-MM-DD (midnight UTC).
    #[arg(long, value_parser = parse_time)]
    pub created_before: Option<DateTime<Utc>>,
    /// Changed at or after: RFC 3339 or YYYY-MM-DD. How a webhook receiver
    /// catches up on deliveries it missed.
    #[arg(long, value_parser = parse_time)]
    pub updated_after: Option<DateTime<Utc>>,
    /// Page number, from 1.
    #[arg(long, conflicts_with = "all", value_parser = clap::value_parser!(u32).range(1..))]
    pub page: Option<u32>,
    /// Shipments per page, 1 to 100 [default: 20; 100 with --all].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub page_size: Option<u32>,
    /// Every page, streamed one shipment at a time (constant memory), each
    /// page continuing after the last: shipments created meanwhile never
    /// shift it.
    #[arg(long)]
    pub all: bool,
}

/// `shipctl shipments watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The shipment code, SHP-XXXX-XXXX.
    pub code: String,
    /// Time between two looks, e.g. 2s, 500ms, 1m.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub interval: Duration,
}

/// `shipctl shipments deliveries`.
#[derive(Debug, Args)]
pub struct DeliveriesArgs {
    /// The shipment code, SHP-XXXX-XXXX.
    pub code: String,
    /// Page number, from 1.
    #[arg(long, conflicts_with = "all", value_parser = clap::value_parser!(u32).range(1..))]
    pub page: Option<u32>,
    /// Attempts per page, 1 to 100 [default: 20; 100 with --all].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub page_size: Option<u32>,
    /// Every page, streamed one attempt at a time (constant memory).
    #[arg(long)]
    pub all: bool,
}

/// `shipctl shipments import`.
#[derive(Debug, Args)]
#[command(after_help = IMPORT_EXIT_CODES, after_long_help = IMPORT_HELP)]
pub struct ImportArgs {
    /// The file: CSV with a header row (the create fields as columns), or
    /// NDJSON (one create body per line); `-` reads stdin.
    pub file: PathBuf,
    /// The file's format [default: ndjson for .ndjson and .jsonl files,
    /// else csv].
    #[arg(long, value_enum)]
    pub format: Option<ImportFormat>,
    /// How many creates are in flight at once, 1 to 64.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    /// Check every row and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write one JSON object per input row, in input order, to this file
    /// (`-` for stdout): {"line", "status" (created, exists or failed; valid
    /// in a dry run), "code", "error"}.
    #[arg(long, value_name = "FILE")]
    pub results: Option<PathBuf>,
}

/// `shipctl shipments import --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    /// A header row naming the columns, then one shipment per row.
    Csv,
    /// One JSON create body per line.
    Ndjson,
}

/// The exit codes of `shipctl shipments import` (a macro, so the long help
/// can include them with `concat!`).
macro_rules! import_exit_codes {
    () => {
        "\
Exit codes:
  0  success: every row was created or existed already (with --dry-run: valid)
  1  at least one row failed (the others were still created)
  2  usage: a wrong flag, an unreadable file, an unknown or missing column
  3  the API key was refused: the import stopped
  6  the service or the network is unavailable: the import stopped"
    };
}

/// The exit codes of `shipctl shipments import`, for `-h`.
const IMPORT_EXIT_CODES: &str = import_exit_codes!();

/// The long help of `shipctl shipments import`, for `--help`.
const IMPORT_HELP: &str = concat!(
    "\
CSV columns: courier_company_id (required), description, weight_kg, dimensions,
items (labels separated by `;`), start_address, end_address, webhook_url, and
an optional idempotency_key. An empty cell leaves the field out. An NDJSON
line is the API's create body, with an optional \"idempotency_key\".

Each row is created with its idempotency_key, or else with one derived from
its content and line number: running the same file again (within 24 hours)
reports the rows created before as existing instead of creating them twice,
so an interrupted import resumes by running it again. Correct failed rows in
place; adding or removing lines changes the keys of the lines after them.

",
    import_exit_codes!()
);

/// The minimum column widths of a streamed shipment table (`--all`), wide
/// enough for the usual values so the columns line up without buffering.
const STREAM_WIDTHS: &[usize] = &[13, 19, 7, 6, 8, 20];

fn fail(e: shipment_sdk::Error) -> Failure {
    Failure::sdk(e, Surface::Shipments)
}

/// Runs a `shipments` command.
pub async fn exec(
    ctx: &Ctx,
    out: &mut dyn Write,
    command: ShipmentsCommand,
) -> Result<(), Failure> {
    let command = match command {
        // A dry run needs no API key: it is handled before the client.
        ShipmentsCommand::Import(args) => return import::exec(ctx, out, args).await,
        // Read with the dashboard session, not the API key.
        ShipmentsCommand::Deliveries(args) => return deliveries::exec(ctx, out, args).await,
        command => command,
    };
    let client = ctx.client()?;
    let shipments = client.shipments();
    let format = ctx.format();
    match command {
        ShipmentsCommand::Create(args) => {
            let request = create_request(&args)?;
            let mut create = shipments.create(&request);
            if let Some(key) = &args.idempotency_key {
                create = create.idempotency_key(key);
            }
            let created = create.send().await.map_err(fail)?;
            output::one(out, format, &created.value)?;
            if created.replayed && format == Format::Table {
                note(format!(
                    "this idempotency key was used before: {} was created then, nothing new now",
                    created.code
                ));
            }
        }
        ShipmentsCommand::List(args) => list(&client, out, format, args).await?,
        ShipmentsCommand::Get { code } => {
            output::one(out, format, &shipments.get(&code).await.map_err(fail)?)?;
        }
        ShipmentsCommand::Cancel { code } => {
            let shipment = shipments.cancel(&code).await.map_err(fail)?;
            output::one(out, format, &shipment)?;
        }
        ShipmentsCommand::Rate { code, rating } => {
            let shipment = shipments.rate(&code, rating).await.map_err(fail)?;
            output::one(out, format, &shipment)?;
        }
        ShipmentsCommand::ConfirmationCode { code } => {
            let generated = shipments
                .generate_confirmation_code(&code)
                .await
                .map_err(fail)?;
            output::one(out, format, &generated)?;
            if format == Format::Table {
                note("give this code to the recipient: the courier needs it to deliver");
            }
        }
        ShipmentsCommand::Watch(args) => watch(&client, out, format, args).await?,
        ShipmentsCommand::Import(_) | ShipmentsCommand::Deliveries(_) => {
            unreachable!("handled above")
        }
    }
    Ok(())
}

async fn list(
    client: &Client,
    out: &mut dyn Write,
    format: Format,
    args: ListArgs,
) -> Result<(), Failure> {
    let mut query = ListShipments::default();
    if let Some(s) = &args.status {
        query = query.status(s.parse::<Status>().unwrap_or_else(|never| match never {}));
    }
    if let Some(c) = args.courier {
        query = query.courier_company_id(c);
    }
    if let Some(t) = args.created_after {
        query = query.created_after(t);
    }
    if let Some(t) = args.created_before {
        query = query.created_before(t);
    }
    if let Some(t) = args.updated_after {
        query = query.updated_after(t);
    }
    if let Some(n) = args.page_size {
        query = query.page_size(n);
    }
    if args.all {
        return list_all(client, out, format, query).await;
    }
    if let Some(p) = args.page {
        query = query.page(p);
    }
    let page = client
        .shipments()
        .list()
        .query(query)
        .send()
        .await
        .map_err(fail)?;
    output::list(out, format, &page.data)?;
    if format == Format::Table {
        let mut summary = output::page_summary(&page, ("shipment", "shipments"));
        if u64::from(page.page) < page.total_pages {
            summary.push_str(&format!("; next: --page {}, or --all", page.page + 1));
        }
        note(summary);
    }
    Ok(())
}

/// The page size of `--all` when `--page-size` is not given: the largest,
/// for the fewest round trips.
const ALL_PAGE_SIZE: u32 = 100;

/// Every page, one shipment at a time: never more than one page in memory.
/// The SDK's stream follows each page's `next_cursor`, so the walk never
/// re-reads the rows before a page, and sees each shipment once.
async fn list_all(
    client: &Client,
    out: &mut dyn Write,
    format: Format,
    query: ListShipments,
) -> Result<(), Failure> {
    // Rows on a terminal show the progress themselves; a spinner helps when
    // they go to a file or a pipe.
    let progress = if io::stdout().is_terminal() {
        None
    } else {
        spinner("fetching shipments")
    };
    let query = match query.page_size {
        Some(_) => query,
        None => query.page_size(ALL_PAGE_SIZE),
    };
    let first = client
        .shipments()
        .list()
        .query(query)
        .send()
        .await
        .map_err(fail)?;
    let stream = first.into_stream();
    futures_util::pin_mut!(stream);
    let mut list = Streamed::start::<Shipment>(out, format, STREAM_WIDTHS)?;
    let mut count = 0u64;
    while let Some(shipment) = stream.try_next().await.map_err(fail)? {
        list.push(&shipment)?;
        count += 1;
        if let Some(p) = &progress {
            p.set_message(format!("fetched {count} shipments"));
        }
    }
    list.finish()?;
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    if format == Format::Table {
        note(format!("{count} shipments"));
    }
    Ok(())
}

/// Polls a shipment until it reaches a final status, printing each version
/// once.
async fn watch(
    client: &Client,
    out: &mut dyn Write,
    format: Format,
    args: WatchArgs,
) -> Result<(), Failure> {
    let progress = spinner(&format!("watching {}", args.code));
    let mut seen: Option<i64> = None;
    loop {
        let shipment = client.shipments().get(&args.code).await.map_err(fail)?;
        if seen != Some(shipment.version) {
            seen = Some(shipment.version);
            let mut print = || -> io::Result<()> {
                match format {
                    Format::Table => change_line(out, &shipment),
                    Format::Ndjson => output::json_line(out, &shipment),
                    // One document: the final shipment, below.
                    Format::Json => Ok(()),
                }?;
                out.flush()
            };
            match &progress {
                Some(p) => p.suspend(print)?,
                None => print()?,
            }
            if let Some(p) = &progress {
                p.set_message(format!(
                    "{} is {} (version {}); waiting for the next change",
                    shipment.code, shipment.status, shipment.version
                ));
            }
        }
        if shipment.status.is_final() {
            if let Some(p) = progress {
                p.finish_and_clear();
            }
            if format == Format::Json {
                output::json(out, &shipment)?;
            }
            return Ok(());
        }
        tokio::time::sleep(args.interval).await;
    }
}

/// `2026-11-21 09:31:02Z  SHP-7K3M-Q9ZX  v2  assigned_to_driver  driver 12`
fn change_line(out: &mut dyn Write, s: &Shipment) -> io::Result<()> {
    let style = output::status_style(&s.status);
    write!(
        out,
        "{}  {}  v{:<3} {style}{:<19}{style:#}",
        output::short_time(&s.updated_at),
        s.code,
        s.version,
        output::escape(s.status.as_str())
    )?;
    match (&s.status, s.assigned_driver_id, &s.failure_reason) {
        (Status::Failed, _, Some(reason)) => write!(out, "  {}", output::escape(reason))?,
        (Status::AssignedToDriver | Status::InTransit, Some(driver), _) => {
            write!(out, "  driver {driver}")?;
        }
        _ => {}
    }
    writeln!(out)
}

/// A spinner on stderr, only when stderr is a terminal.
fn spinner(message: &str) -> Option<ProgressBar> {
    if !io::stderr().is_terminal() {
        return None;
    }
    let progress = ProgressBar::new_spinner();
    progress.set_style(
        ProgressStyle::with_template("{spinner} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    progress.set_message(message.to_owned());
    progress.enable_steady_tick(Duration::from_millis(120));
    Some(progress)
}

fn create_request(args: &CreateArgs) -> Result<CreateShipment, Failure> {
    if let Some(path) = &args.file {
        let text = if path.as_os_str() == "-" {
            let mut text = Vec::new();
            io::stdin()
                .read_to_end(&mut text)
                .map_err(|e| Failure::usage(format!("cannot read stdin: {e}")))?;
            text
        } else {
            std::fs::read(path)
                .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?
        };
        let request: CreateShipment = serde_json::from_slice(&text).map_err(|e| {
            Failure::usage(format!(
                "{} is not a shipment create request: {e}",
                path.display()
            ))
        })?;
        // Refused here rather than by the service: the same rules, no round
        // trip.
        if let Some(u) = &request.webhook_url {
            WebhookUrl::parse(u).map_err(|e| {
                Failure::usage(format!(
                    "{}: `webhook_url` cannot be used: {e}",
                    path.display()
                ))
            })?;
        }
        return Ok(request);
    }
    let courier = args
        .courier
        .ok_or_else(|| Failure::usage("--courier (or --file) is required"))?;
    let mut request = CreateShipment::new(courier);
    if let Some(w) = args.weight {
        request = request.weight_kg(w);
    }
    if let Some(d) = &args.dimensions {
        request = request.dimensions(d);
    }
    if let Some(a) = &args.from {
        request = request.start_address(a);
    }
    if let Some(a) = &args.to {
        request = request.end_address(a);
    }
    for item in &args.items {
        request = request.item(item);
    }
    if let Some(d) = &args.description {
        request = request.description(d);
    }
    if let Some(u) = &args.webhook_url {
        request = request.webhook_url(u);
    }
    Ok(request)
}
