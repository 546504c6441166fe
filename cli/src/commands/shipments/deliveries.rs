//! `shipctl shipments deliveries CODE`: a shipment's delivery history
//! across every webhook and its own `webhook_url`, newest first, through
//! the dashboard session (the history names the merchant's webhooks, which
//! only the dashboard manages).

use std::io::Write;

use futures_util::TryStreamExt as _;
use serde::{Serialize, Serializer};
use shipment_sdk::model::{Delivery, ShipmentCode};

use crate::commands::shipments::DeliveriesArgs;
use crate::error::{Failure, Surface};
use crate::output::{self, Cell, Format, Streamed, Tabular};
use crate::{Ctx, note};

/// The page size of `--all` when `--page-size` is not given: the largest,
/// for the fewest round trips.
const ALL_PAGE_SIZE: u32 = 100;

/// The minimum column widths of a streamed history (`--all`), wide enough
/// for the usual values so the columns line up without buffering.
const STREAM_WIDTHS: &[usize] = &[4, 7, 7, 6, 6, 4, 20, 13];

/// A session or webhook refusal says to sign in; a 404 is about the code.
fn fail(e: shipment_sdk::Error) -> Failure {
    let not_found = e.is_not_found();
    let failure = Failure::sdk(e, Surface::Webhooks);
    if not_found {
        failure.hint("`shipctl shipments list` shows your shipments")
    } else {
        failure
    }
}

/// One attempt as a row of the history: where it went besides what the
/// webhook log shows. As JSON it is the delivery itself.
struct Attempt<'a>(&'a Delivery);

impl Serialize for Attempt<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl Tabular for Attempt<'_> {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "WEBHOOK",
        "VERSION",
        "RESULT",
        "STATUS",
        "MS",
        "AT",
        "REDELIVERY OF",
        "ERROR",
    ];

    fn cells(&self) -> Vec<Cell> {
        let d = self.0;
        // The log's own cells, with the webhook after the id and without the
        // shipment (it is the same on every row).
        let mut cells = d.cells();
        cells.remove(1);
        let webhook = match d.webhook_id {
            Some(id) => Cell::plain(id.to_string()),
            None => Cell::styled("own url", anstyle::Style::new().dimmed()),
        };
        cells.insert(1, webhook);
        cells
    }
}

/// Runs `shipments deliveries`.
pub async fn exec(ctx: &Ctx, out: &mut dyn Write, args: DeliveriesArgs) -> Result<(), Failure> {
    let code =
        ShipmentCode::parse(&args.code).map_err(|e| Failure::sdk(e.into(), Surface::Shipments))?;
    let dashboard = ctx.dashboard()?;
    let webhooks = dashboard.webhooks();
    let format = ctx.format();
    let mut query = webhooks.shipment_deliveries(&code);
    if args.all {
        query = query.page_size(args.page_size.unwrap_or(ALL_PAGE_SIZE));
        let stream = query.send().await.map_err(fail)?.into_stream();
        futures_util::pin_mut!(stream);
        let mut list = Streamed::start::<Attempt<'_>>(out, format, STREAM_WIDTHS)?;
        while let Some(d) = stream.try_next().await.map_err(fail)? {
            list.push(&Attempt(&d))?;
        }
        let count = list.finish()?;
        if format == Format::Table {
            note(format!(
                "{count} {}",
                if count == 1 { "delivery" } else { "deliveries" }
            ));
        }
        return Ok(());
    }
    if let Some(n) = args.page_size {
        query = query.page_size(n);
    }
    if let Some(p) = args.page {
        query = query.page(p);
    }
    let page = query.send().await.map_err(fail)?;
    let rows: Vec<Attempt<'_>> = page.data.iter().map(Attempt).collect();
    output::list(out, format, &rows)?;
    if format == Format::Table {
        let mut summary = output::page_summary(&page, ("delivery", "deliveries"));
        if u64::from(page.page) < page.total_pages {
            summary.push_str(&format!("; next: --page {}, or --all", page.page + 1));
        }
        note(summary);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shipment_sdk::model::{DeliveryId, WebhookId};

    #[test]
    fn a_history_row_has_a_cell_under_each_header() {
        let at = "2026-11-21T09:31:00Z".parse().unwrap();
        let code = ShipmentCode::parse("SHP-7K3M-Q9ZX").unwrap();
        let mut d = Delivery::new(DeliveryId::new(9), code, 2, "https://h.example/x", 12, at);
        d.webhook_id = Some(WebhookId::new(3));
        d.redelivery_of = Some(DeliveryId::new(7));
        let cells = Attempt(&d).cells();
        assert_eq!(cells.len(), Attempt::HEADERS.len());
        let mut out = Vec::new();
        output::list(&mut out, Format::Table, &[Attempt(&d)]).unwrap();
        let mut text = Vec::new();
        std::io::Write::write_all(&mut anstream::StripStream::new(&mut text), &out).unwrap();
        let text = String::from_utf8(text).unwrap();
        let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        // ID, webhook, version, result, status, ms, date, time, redelivery of.
        assert_eq!(row[..5], ["9", "3", "2", "ok", "-"], "{text}");
        assert_eq!(row[8], "7", "{text}");
    }
}
