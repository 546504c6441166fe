//! `shipctl shipments import FILE`: many creates from a CSV or NDJSON file.
//!
//! Rows are streamed (the CSV reader's record iterator, a buffered line
//! reader for NDJSON) through at most `--concurrency` creates in flight, in
//! input order, so memory stays constant with the file's size. Every row is
//! sent with an idempotency key (its own, or one derived from its line and
//! content), so running the same file again creates nothing twice.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal as _, Read, Write};
use std::path::Path;
use std::time::Duration;

use futures_util::StreamExt as _;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use shipment_sdk::Client;

use crate::commands::shipments::{ImportArgs, ImportFormat};
use crate::error::{AUTH, FAILURE, Failure, Surface, UNAVAILABLE};
use crate::{Ctx, note, output};

mod rows;

use rows::{Row, Rows};

/// Runs `shipctl shipments import`.
pub async fn exec(ctx: &Ctx, out: &mut dyn Write, args: ImportArgs) -> Result<(), Failure> {
    let stdin = args.file.as_os_str() == "-";
    let name = if stdin {
        "stdin".to_owned()
    } else {
        args.file.display().to_string()
    };
    let format = args.format.unwrap_or_else(|| guess_format(&args.file));
    let (input, len) = open(&args.file, stdin)?;
    let progress = progress_bar(len);
    // The header is checked before anything else: a wrong column is a usage
    // error, whatever the key.
    let mut rows = Rows::new(format, input, &name, progress.clone())?;
    let client = if args.dry_run {
        None
    } else {
        Some(ctx.client()?)
    };
    let mut results: Option<Box<dyn Write + '_>> = match &args.results {
        None => None,
        Some(path) if path.as_os_str() == "-" => Some(Box::new(out)),
        Some(path) => Some(Box::new(BufWriter::new(File::create(path).map_err(
            |e| Failure::usage(format!("cannot write {}: {e}", path.display())),
        )?))),
    };

    let stop = std::cell::Cell::new(false);
    let mut stopped: Option<Failure> = None;
    let mut counts = Counts::default();
    {
        let client = client.as_ref();
        let stream = futures_util::stream::iter(rows.by_ref().take_while(|_| !stop.get()))
            .map(|row| send(client, row))
            .buffered(usize::from(args.concurrency));
        futures_util::pin_mut!(stream);
        while let Some(mut outcome) = stream.next().await {
            if let Some(failure) = outcome.stop.take() {
                // No new row is read; those in flight still finish.
                stop.set(true);
                stopped.get_or_insert(failure);
            }
            counts.add(outcome.status);
            if let Some(error) = &outcome.error {
                let say = || {
                    let _ = writeln!(
                        anstream::stderr(),
                        "line {}: {}",
                        outcome.line,
                        output::escape(error)
                    );
                };
                match &progress {
                    Some(p) => p.suspend(say),
                    None => say(),
                }
            }
            if let Some(results) = &mut results {
                output::json_line(results, &outcome)?;
            }
            if let Some(p) = &progress {
                p.set_message(counts.summary(args.dry_run));
            }
        }
    }
    if let Some(mut results) = results {
        results.flush()?;
    }
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    note(counts.summary(args.dry_run));

    if let Some(fatal) = rows.fatal.take() {
        return Err(fatal);
    }
    if let Some(failure) = stopped {
        return Err(Failure {
            message: format!("the import stopped: {}", failure.message),
            hint: Some(failure.hint.unwrap_or_else(|| {
                "run the same command again when it is fixed: rows created already are not \
                 created twice"
                    .to_owned()
            })),
            ..failure
        });
    }
    if counts.failed > 0 {
        let hint = if args.dry_run {
            "correct them, then import without --dry-run"
        } else {
            "correct them in place (adding or removing lines changes the keys of the lines \
             after them) and run the same command again: rows created already are not created \
             twice"
        };
        return Err(Failure::new(
            FAILURE,
            format!("{} of {} rows failed", counts.failed, counts.total()),
        )
        .hint(hint));
    }
    Ok(())
}

/// NDJSON for `.ndjson` and `.jsonl` files, CSV otherwise.
fn guess_format(path: &Path) -> ImportFormat {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("ndjson") || e.eq_ignore_ascii_case("jsonl") => {
            ImportFormat::Ndjson
        }
        _ => ImportFormat::Csv,
    }
}

/// The input, and its length when it is a regular file (for the progress
/// bar).
fn open(path: &Path, stdin: bool) -> Result<(Box<dyn Read>, Option<u64>), Failure> {
    if stdin {
        return Ok((Box::new(io::stdin().lock()), None));
    }
    let file = File::open(path)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
    let len = file
        .metadata()
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len());
    Ok((Box::new(file), len))
}

/// A bar over the file's bytes on a terminal (a spinner for stdin); nothing
/// when stderr is not a terminal.
fn progress_bar(len: Option<u64>) -> Option<ProgressBar> {
    if !io::stderr().is_terminal() {
        return None;
    }
    let progress = match len {
        Some(len) => ProgressBar::new(len).with_style(
            ProgressStyle::with_template("{bar:30} {percent:>3}% {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    progress.set_message("reading");
    progress.enable_steady_tick(Duration::from_millis(120));
    Some(progress)
}

/// What became of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    /// Created now.
    Created,
    /// Created by an earlier run (the service replayed the create).
    Exists,
    /// Passed the checks of a dry run.
    Valid,
    /// Not created: the error says why.
    Failed,
}

/// One line of the results file.
#[derive(Debug, Serialize)]
struct Outcome {
    line: u64,
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// Why no further row should be sent (the key refused, the service
    /// unavailable after the SDK's retries).
    #[serde(skip)]
    stop: Option<Failure>,
}

impl Outcome {
    fn failed(line: u64, error: String) -> Outcome {
        Outcome {
            line,
            status: Status::Failed,
            code: None,
            error: Some(error),
            stop: None,
        }
    }
}

/// The running totals.
#[derive(Debug, Default)]
struct Counts {
    created: u64,
    exists: u64,
    valid: u64,
    failed: u64,
}

impl Counts {
    fn add(&mut self, status: Status) {
        match status {
            Status::Created => self.created += 1,
            Status::Exists => self.exists += 1,
            Status::Valid => self.valid += 1,
            Status::Failed => self.failed += 1,
        }
    }

    fn total(&self) -> u64 {
        self.created + self.exists + self.valid + self.failed
    }

    /// `300 rows: 297 created, 0 already existed, 3 failed`.
    fn summary(&self, dry_run: bool) -> String {
        let total = self.total();
        let rows = if total == 1 { "row" } else { "rows" };
        if dry_run {
            format!(
                "{total} {rows}: {} valid, {} failed (dry run: nothing was sent)",
                self.valid, self.failed
            )
        } else {
            format!(
                "{total} {rows}: {} created, {} already existed, {} failed",
                self.created, self.exists, self.failed
            )
        }
    }
}

/// Sends one row (or, without a client, only reports whether it is valid).
async fn send(client: Option<&Client>, row: Row) -> Outcome {
    let line = row.line;
    let prepared = match row.parsed {
        Ok(prepared) => prepared,
        Err(error) => return Outcome::failed(line, error),
    };
    let Some(client) = client else {
        return Outcome {
            line,
            status: Status::Valid,
            code: None,
            error: None,
            stop: None,
        };
    };
    let sent = client
        .shipments()
        .create(&prepared.request)
        .idempotency_key(prepared.key.as_str())
        .send()
        .await;
    match sent {
        Ok(created) => Outcome {
            line,
            status: if created.replayed {
                Status::Exists
            } else {
                Status::Created
            },
            code: Some(created.code.as_str().to_owned()),
            error: None,
            stop: None,
        },
        Err(e) => {
            let failure = Failure::sdk(e, Surface::Shipments);
            let mut outcome = Outcome::failed(line, failure.message.clone());
            if matches!(failure.code, AUTH | UNAVAILABLE) {
                outcome.stop = Some(failure);
            }
            outcome
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_follows_the_extension() {
        assert_eq!(guess_format(Path::new("a.NDJSON")), ImportFormat::Ndjson);
        assert_eq!(guess_format(Path::new("a.jsonl")), ImportFormat::Ndjson);
        assert_eq!(guess_format(Path::new("a.csv")), ImportFormat::Csv);
        assert_eq!(guess_format(Path::new("-")), ImportFormat::Csv);
    }
}
