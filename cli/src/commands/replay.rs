//! `shipctl replay FILE --forward-to URL`: the deliveries `shipctl listen
//! --record FILE` kept, POSTed to a local app again, byte for byte with
//! their original signature and delivery id.
//!
//! No service and no configuration are involved: a developer reruns
//! yesterday's sequence of webhooks against a fixed local app. The
//! signatures are those of the listener signing key of the time, so the
//! app verifies them with that key.

use std::io::Write;
use std::path::Path;

use crate::cli::ReplayArgs;
use crate::commands::local_app;
use crate::commands::recording::{Filter, Recorded};
use crate::error::{FAILURE, Failure};
use crate::note;
use crate::output::Format;

/// Runs `shipctl replay`.
pub async fn exec(out: &mut dyn Write, format: Format, args: ReplayArgs) -> Result<(), Failure> {
    let target = local_app::local_url(&args.forward_to)?;
    // The whole file first: a bad line stops the replay before anything
    // is sent, rather than halfway through a sequence.
    let recorded = read(&args.file)?;
    let http = local_app::local_client(args.timeout, args.skip_verify)?;
    let filter = Filter {
        statuses: args.status,
        codes: args.code,
    };
    let (mut sent, mut refused) = (0_usize, 0_usize);
    for record in &recorded {
        let status = local_app::shipment_status(&record.body);
        if !filter.matches(&record.shipment_code, status.as_deref()) {
            continue;
        }
        let delivery = record.delivery();
        let line = local_app::post(&http, &target, &delivery, status).await;
        sent += 1;
        if line.error.is_some() {
            refused += 1;
        }
        local_app::write_line(out, format, &line)?;
    }
    note(format!(
        "Replayed {sent} of {} recorded deliveries to {target}",
        recorded.len()
    ));
    if refused > 0 {
        return Err(Failure::new(
            FAILURE,
            format!("{refused} of {sent} deliveries were not accepted (no answer, or 400 or more)"),
        ));
    }
    Ok(())
}

/// Reads a `--record` file: one [`Recorded`] per line, blank lines
/// skipped. A file that cannot be read, or a line that is not a recorded
/// delivery, is a usage error naming the line.
fn read(path: &Path) -> Result<Vec<Recorded>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
    parse(&text).map_err(|(n, e)| {
        Failure::usage(format!(
            "{} line {n} is not a delivery `shipctl listen --record` wrote: {e}",
            path.display()
        ))
    })
}

/// The records of a file's text, or the first bad line (from 1) and why.
fn parse(text: &str) -> Result<Vec<Recorded>, (usize, serde_json::Error)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| serde_json::from_str(line).map_err(|e| (i + 1, e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"delivery_id":"dlv_7_l","received_at":"2026-11-24T09:31:02Z","shipment_code":"SHP-7K3M-Q9ZX","version":3,"headers":{"X-Service-Signature":"sha256=00","X-Service-Delivery-Id":"dlv_7_l"},"body":"{\"code\":\"SHP-7K3M-Q9ZX\",\"status\":\"delivered\"}"}"#;

    #[test]
    fn a_recorded_line_gives_back_the_delivery_byte_for_byte() {
        let records = parse(&format!("{LINE}\n\n{LINE}\n")).unwrap();
        assert_eq!(records.len(), 2);
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
    fn a_bad_line_is_named_by_its_number() {
        let (n, e) = parse(&format!("{LINE}\n{{\"delivery_id\":\"x\"}}\n")).unwrap_err();
        assert_eq!(n, 2);
        assert!(e.to_string().contains("missing field"), "{e}");
        let (n, _) = parse("not json").unwrap_err();
        assert_eq!(n, 1);
    }
}
