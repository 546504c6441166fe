//! `shipctl replay FILE --forward-to URL`: the deliveries `shipctl listen
//! --record FILE` kept, POSTed to a local app again, byte for byte with
//! their body, delivery id and `webhook-id`.
//!
//! No service and no configuration are involved: a developer reruns
//! yesterday's sequence of webhooks against a fixed local app. A Standard
//! Webhooks signature binds the time it was made, and receivers refuse one
//! older than 5 minutes, so a recording keeps none: with the listener
//! signing key (`--signing-key`), each delivery is signed anew, both ways,
//! when it is POSTed; without it, it goes with its recorded
//! `X-Service-Signature` (the key of the time) and no Standard Webhooks
//! headers, and an expired signature is never presented as valid.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use shipment_sdk::model::ShipmentCode;
use shipment_sdk::resources::listen::MAX_EVENT_BYTES;

use super::local_app::{self, Standard};
use super::recording::{Filter, Recorded};
use super::values::{parse_duration, parse_status};
use crate::error::{FAILURE, Failure};
use crate::note;
use crate::output::Format;

/// `shipctl replay`.
#[derive(Debug, Args)]
#[command(after_help = REPLAY_EXIT_CODES, after_long_help = REPLAY_HELP)]
pub struct ReplayArgs {
    /// The file `shipctl listen --record FILE` wrote (one JSON object per
    /// line, each at most 1 MiB), or a pipe such as /dev/stdin.
    pub file: PathBuf,
    /// Where to POST each delivery, e.g. http://localhost:3000/webhooks.
    #[arg(long, value_name = "URL")]
    pub forward_to: String,
    /// Only the deliveries of this shipment (repeatable: any of them).
    #[arg(long, value_name = "CODE")]
    pub code: Vec<ShipmentCode>,
    /// Only the deliveries that bring this status (repeatable: any of them).
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Vec<String>,
    /// Accept any certificate from the local app (a self-signed one).
    #[arg(long)]
    pub skip_verify: bool,
    /// Longest the local app may take to answer a delivery.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Your listener signing key (whsec_..., as `shipctl listen
    /// --print-secret` prints it): each delivery is signed anew with it
    /// when it is POSTed, Standard Webhooks headers included (see --help).
    #[arg(
        long,
        value_name = "KEY",
        env = "SHIPCTL_LISTENER_SIGNING_KEY",
        hide_env_values = true
    )]
    pub signing_key: Option<String>,
}

/// The exit codes of `shipctl replay` (a macro, so the long help can
/// include them with `concat!`).
macro_rules! replay_exit_codes {
    () => {
        "\
Exit codes:
  0  success: every delivery sent was answered below 400 (or none matched)
  1  at least one was not: a status of 400 or more, no answer, no connection
  2  usage: a wrong flag, address or --signing-key, a file that cannot be read
     or has a line that is not a recorded delivery or is longer than 1 MiB
     (from a file, nothing is sent then; from a pipe, what came before it was
     sent)"
    };
}

/// The exit codes of `shipctl replay`, for `-h`.
const REPLAY_EXIT_CODES: &str = replay_exit_codes!();

/// The long help of `shipctl replay`, for `--help`.
const REPLAY_HELP: &str = concat!(
    "\
Each recorded delivery is POSTed with its body bytes, X-Service-Delivery-Id
(dlv_<change>_l) and webhook-id (msg_<change>_l), so the local app drops
repeats as it would the service's.

Timestamps: a Standard Webhooks receiver refuses a webhook-timestamp more than
5 minutes from its clock, so a recording keeps no timestamp and no Standard
Webhooks signature, and replay never sends an expired one as if it were valid:
  - with --signing-key KEY (or SHIPCTL_LISTENER_SIGNING_KEY; your listener
    signing key: `shipctl listen --print-secret`), each delivery is signed
    anew when it is POSTed: webhook-timestamp is that moment, and
    webhook-signature and X-Service-Signature are made with KEY;
  - without it, each goes with the X-Service-Signature it was recorded with
    (the listener signing key of that time) and without the Standard Webhooks
    headers: an app that requires them refuses it, as it should refuse a
    replay; one that checks X-Service-Signature verifies it.

",
    replay_exit_codes!()
);

/// The longest line `replay` reads, line ending aside: what `listen`
/// reads of one event ([`MAX_EVENT_BYTES`], 1 MiB), so a file is read a
/// line at a time in bounded memory, and a line that never ends (such as
/// `/dev/zero`) is refused after 1 MiB instead of filling the memory.
pub const MAX_LINE_BYTES: usize = MAX_EVENT_BYTES;

/// Runs `shipctl replay`.
pub async fn exec(out: &mut dyn Write, format: Format, args: ReplayArgs) -> Result<(), Failure> {
    let target = local_app::local_url(&args.forward_to)?;
    if let Some(key) = &args.signing_key {
        check_key(key)?;
    }
    let file = open(&args.file)?;
    // A regular file is checked whole first, a line at a time, so a bad
    // line stops the replay before anything is sent rather than halfway
    // through a sequence; then it is read again, as far as was checked.
    // A pipe or a FIFO can be read once only: each line is checked as it
    // comes, and a bad one stops the replay there.
    let checked = match file.metadata() {
        Ok(m) if m.is_file() => Some(check(&args.file, &file)?),
        _ => None,
    };
    let mut records = match checked {
        Some(len) => Records::new(Box::new(open(&args.file)?.take(len))),
        None => Records::new(Box::new(file)),
    };
    let http = local_app::local_client(args.timeout, args.skip_verify)?;
    let filter = Filter {
        statuses: args.status,
        codes: args.code,
    };
    let (mut read, mut sent, mut refused) = (0_usize, 0_usize, 0_usize);
    while let Some(record) = records.next_record().map_err(|e| e.failure(&args.file))? {
        read += 1;
        let status = local_app::shipment_status(&record.body);
        if !filter.matches(&record.shipment_code, status.as_deref()) {
            continue;
        }
        let mut delivery = record.delivery();
        let message_id = record.message_id();
        let standard = match &args.signing_key {
            Some(key) => {
                delivery.signature = webhook_verify::sign(key, delivery.body.as_bytes());
                Standard::Signed {
                    message_id: &message_id,
                    key,
                }
            }
            None => Standard::Without,
        };
        let line = local_app::post(&http, &target, &delivery, standard, status).await;
        sent += 1;
        if line.error.is_some() {
            refused += 1;
        }
        local_app::write_line(out, format, &line)?;
    }
    note(format!(
        "Replayed {sent} of {read} recorded deliveries to {target}"
    ));
    if args.signing_key.is_none() && sent > 0 {
        note(
            "Sent with their recorded X-Service-Signature and without the Standard Webhooks \
             headers; to sign them anew, now, give --signing-key (`shipctl listen \
             --print-secret` prints the key)",
        );
    }
    if refused > 0 {
        return Err(Failure::new(
            FAILURE,
            format!("{refused} of {sent} deliveries were not accepted (no answer, or 400 or more)"),
        ));
    }
    Ok(())
}

/// Checks `--signing-key` before anything is read or sent: a key that
/// cannot sign Standard Webhooks (`whsec_` and base64) is a usage error.
/// The key is not repeated in the message.
fn check_key(key: &str) -> Result<(), Failure> {
    match webhook_verify::standard::sign(key, "msg_0_l", 0, b"") {
        Ok(_) => Ok(()),
        Err(_) => Err(Failure::usage(
            "--signing-key is not a signing key: expected whsec_ followed by base64, as \
             `shipctl listen --print-secret` prints it",
        )),
    }
}

fn open(path: &Path) -> Result<File, Failure> {
    File::open(path).map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))
}

/// Reads the whole of a regular file a line at a time, keeping none:
/// the bytes checked (the second reading stops there, so lines appended
/// meanwhile are not sent unchecked), or the first bad line.
fn check(path: &Path, file: &File) -> Result<u64, Failure> {
    let mut records = Records::new(Box::new(file));
    while records
        .next_record()
        .map_err(|e| e.failure(path))?
        .is_some()
    {}
    Ok(records.consumed)
}

/// The [`Recorded`] deliveries of a `--record` file, one per line, blank
/// lines skipped, each line read whole but no line longer than
/// [`MAX_LINE_BYTES`].
struct Records<'a> {
    input: BufReader<Box<dyn Read + 'a>>,
    line: Vec<u8>,
    /// Lines read so far (the number of the last one).
    number: usize,
    /// Bytes read so far.
    consumed: u64,
}

/// Why a line of a `--record` file was refused, and its number (from 1).
#[derive(Debug)]
enum BadLine {
    /// Longer than [`MAX_LINE_BYTES`].
    TooLong(usize),
    /// Not a delivery `listen --record` wrote.
    NotADelivery(usize, serde_json::Error),
    /// The file could not be read there.
    Unreadable(usize, std::io::Error),
}

impl BadLine {
    fn failure(self, path: &Path) -> Failure {
        let path = path.display();
        Failure::usage(match self {
            BadLine::TooLong(n) => format!(
                "{path} line {n} is longer than {} MiB, the longest delivery `shipctl listen` \
                 reads and records",
                MAX_LINE_BYTES >> 20
            ),
            BadLine::NotADelivery(n, e) => {
                format!("{path} line {n} is not a delivery `shipctl listen --record` wrote: {e}")
            }
            BadLine::Unreadable(n, e) => format!("cannot read {path} at line {n}: {e}"),
        })
    }
}

impl<'a> Records<'a> {
    fn new(input: Box<dyn Read + 'a>) -> Records<'a> {
        Records {
            input: BufReader::new(input),
            line: Vec::new(),
            number: 0,
            consumed: 0,
        }
    }

    /// The next record, `None` at the end.
    fn next_record(&mut self) -> Result<Option<Recorded>, BadLine> {
        loop {
            self.number += 1;
            let n = self.number;
            self.line.clear();
            // One byte more than a line and its "\r\n" may take: reading
            // stops there, so a line without an end costs no more.
            let limit = MAX_LINE_BYTES as u64 + 3;
            let got = (&mut self.input)
                .take(limit)
                .read_until(b'\n', &mut self.line)
                .map_err(|e| BadLine::Unreadable(n, e))?;
            if got == 0 {
                return Ok(None);
            }
            self.consumed += got as u64;
            let mut text = self.line.as_slice();
            let ended = text.last() == Some(&b'\n');
            if ended {
                text = &text[..text.len() - 1];
            }
            if let Some(rest) = text.strip_suffix(b"\r") {
                text = rest;
            }
            if text.len() > MAX_LINE_BYTES {
                return Err(BadLine::TooLong(n));
            }
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return serde_json::from_slice(text)
                .map(Some)
                .map_err(|e| BadLine::NotADelivery(n, e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"delivery_id":"dlv_7_l","received_at":"2026-11-24T09:31:02Z","shipment_code":"SHP-7K3M-Q9ZX","version":3,"headers":{"X-Service-Signature":"sha256=00","X-Service-Delivery-Id":"dlv_7_l"},"body":"{\"code\":\"SHP-7K3M-Q9ZX\",\"status\":\"delivered\"}"}"#;

    /// Every record of `text`, or the first bad line.
    fn parse(text: &str) -> Result<Vec<Recorded>, BadLine> {
        let mut records = Records::new(Box::new(text.as_bytes()));
        let mut all = Vec::new();
        while let Some(record) = records.next_record()? {
            all.push(record);
        }
        Ok(all)
    }

    #[test]
    fn a_recorded_line_gives_back_the_delivery_byte_for_byte() {
        let records = parse(&format!("{LINE}\n\n{LINE}\r\n{LINE}")).unwrap();
        assert_eq!(records.len(), 3);
        let delivery = records[0].delivery();
        assert_eq!(delivery.delivery_id, "dlv_7_l");
        assert_eq!(delivery.signature, "sha256=00");
        assert_eq!(
            delivery.body,
            r#"{"code":"SHP-7K3M-Q9ZX","status":"delivered"}"#
        );
        // What `listen` writes is what `replay` reads.
        let again: Recorded =
            serde_json::from_str(&serde_json::to_string(&records[0]).unwrap()).unwrap();
        assert_eq!(again, records[0]);
    }

    #[test]
    fn an_older_recording_gets_its_webhook_id_from_the_delivery_id() {
        let older = &parse(LINE).unwrap()[0];
        assert_eq!(older.headers.webhook_id, None);
        assert_eq!(older.message_id(), "msg_7_l");
        let kept = LINE.replace(
            r#""X-Service-Delivery-Id":"dlv_7_l""#,
            r#""X-Service-Delivery-Id":"dlv_7_l","webhook-id":"msg_kept""#,
        );
        assert_eq!(parse(&kept).unwrap()[0].message_id(), "msg_kept");
    }

    #[test]
    fn a_signing_key_must_be_whsec_and_base64() {
        assert!(check_key("whsec_0123456789abcdefghijABCDEFGHIJKL").is_ok());
        assert!(check_key("whsec_").is_err());
        for bad in ["whsec_not base64!", "hunter2!"] {
            let failure = check_key(bad).unwrap_err();
            assert_eq!(failure.code, crate::error::USAGE);
            assert!(!failure.message.contains(bad), "{}", failure.message);
        }
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        let Err(BadLine::NotADelivery(n, e)) =
            parse(&format!("{LINE}\n{{\"delivery_id\":\"x\"}}\n"))
        else {
            panic!("refused")
        };
        assert_eq!(n, 2);
        assert!(e.to_string().contains("missing field"), "{e}");
        let Err(BadLine::NotADelivery(n, _)) = parse("not json") else {
            panic!("refused")
        };
        assert_eq!(n, 1);
    }

    /// `LINE` with its body padded by spaces inside the JSON to `len`
    /// bytes: still a recorded delivery.
    fn padded(len: usize) -> String {
        let pad = len - LINE.len();
        let line = LINE.replacen(
            "{\"delivery_id\"",
            &format!("{{{}\"delivery_id\"", " ".repeat(pad)),
            1,
        );
        assert_eq!(line.len(), len);
        line
    }

    #[test]
    fn a_line_of_the_limit_is_read_and_one_byte_more_is_refused_by_its_number() {
        let at = padded(MAX_LINE_BYTES);
        let records = parse(&format!("{LINE}\n{at}\n{at}\r\n{at}")).unwrap();
        assert_eq!(records.len(), 4);
        assert_eq!(records[3], records[0]);

        let over = padded(MAX_LINE_BYTES + 1);
        for text in [
            format!("{LINE}\n\n{over}\n{LINE}\n"),
            format!("{LINE}\n\n{over}"),
            format!("{LINE}\n\n{over}\r\n"),
        ] {
            let Err(BadLine::TooLong(n)) = parse(&text) else {
                panic!("refused")
            };
            assert_eq!(n, 3);
        }
        let message = BadLine::TooLong(3).failure(Path::new("x.ndjson")).message;
        assert!(
            message.starts_with("x.ndjson line 3 is longer than 1 MiB"),
            "{message}"
        );
    }

    #[test]
    fn an_endless_line_is_read_no_further_than_the_limit() {
        let mut endless = std::io::repeat(b'x');
        let mut records = Records::new(Box::new(&mut endless));
        assert!(matches!(records.next_record(), Err(BadLine::TooLong(1))));
        assert!(records.consumed <= MAX_LINE_BYTES as u64 + 3);
    }
}
