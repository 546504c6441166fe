//! `shipctl shipments ...`: create, list, follow, import.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand, ValueEnum};
use rust_decimal::Decimal;
use shipment_sdk::model::CourierId;

use super::{parse_duration, parse_time, parse_webhook_url};

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
    /// Every page, streamed one shipment at a time (constant memory).
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
