//! What goes to stdout: tables and detail views for people, JSON for
//! programs. Everything else (progress, notes, errors) goes to stderr.
//!
//! Styles are always written; the `anstream` stream strips them unless
//! stdout is a terminal and `NO_COLOR` is unset (or `--color always`).

use std::io::{self, Write};

use anstyle::{AnsiColor, Style};
use chrono::{DateTime, Utc};
use clap::ValueEnum;
use serde::Serialize;
use shipment_sdk::model::{
    ApiKey, ConfirmationCode, CourierCompany, Delivery, Page, Shipment, Status, Webhook,
};

/// `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns (lists) or one field per line (one item), for people.
    Table,
    /// One JSON document (a list is an array).
    Json,
    /// One JSON object per line, for `jq` and log pipelines.
    Ndjson,
}

/// A cell of a table: its text and how to style it.
#[derive(Debug, Clone)]
pub struct Cell {
    text: String,
    style: Style,
}

impl Cell {
    /// A plain cell.
    pub fn plain(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            style: Style::new(),
        }
    }

    /// A cell in `style`.
    pub fn styled(text: impl Into<String>, style: Style) -> Cell {
        Cell {
            text: text.into(),
            style,
        }
    }

    /// An optional value; `-` when absent.
    pub fn opt(value: Option<impl ToString>) -> Cell {
        match value {
            Some(v) => Cell::plain(v.to_string()),
            None => Cell::styled("-", DIM),
        }
    }
}

const BOLD: Style = Style::new().bold();
const DIM: Style = Style::new().dimmed();

/// The style of a status: green when delivered, red when it went wrong.
pub fn status_style(status: &Status) -> Style {
    let color = match status {
        Status::Delivered => AnsiColor::Green,
        Status::Failed => AnsiColor::Red,
        Status::Returned | Status::Cancelled => AnsiColor::Magenta,
        Status::InTransit => AnsiColor::Cyan,
        _ => AnsiColor::Yellow,
    };
    Style::new().fg_color(Some(color.into()))
}

/// A timestamp in a table: UTC, to the second.
pub fn short_time(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%SZ").to_string()
}

/// Something printed as a table row, or as a detail view on its own.
pub trait Tabular: Serialize {
    /// Column titles of a list.
    const HEADERS: &'static [&'static str];
    /// This item's cells in a list, in column order.
    fn cells(&self) -> Vec<Cell>;
    /// This item on its own: labelled fields, one per line. Defaults to the
    /// list's columns.
    fn detail(&self) -> Vec<(&'static str, Cell)> {
        Self::HEADERS.iter().copied().zip(self.cells()).collect()
    }
}

impl Tabular for Shipment {
    const HEADERS: &'static [&'static str] =
        &["CODE", "STATUS", "COURIER", "DRIVER", "FEE", "CREATED"];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::styled(self.code.as_str(), BOLD),
            Cell::styled(self.status.as_str(), status_style(&self.status)),
            Cell::plain(self.courier_company_id.to_string()),
            Cell::opt(self.assigned_driver_id),
            Cell::plain(self.total_fee.to_string()),
            Cell::plain(short_time(&self.created_at)),
        ]
    }
    fn detail(&self) -> Vec<(&'static str, Cell)> {
        let time = |t: &Option<DateTime<Utc>>| Cell::opt(t.as_ref().map(short_time));
        vec![
            ("code", Cell::styled(self.code.as_str(), BOLD)),
            (
                "status",
                Cell::styled(self.status.as_str(), status_style(&self.status)),
            ),
            ("version", Cell::plain(self.version.to_string())),
            ("courier", Cell::plain(self.courier_company_id.to_string())),
            ("driver", Cell::opt(self.assigned_driver_id)),
            ("description", Cell::opt(self.description.as_ref())),
            ("weight_kg", Cell::opt(self.weight_kg)),
            ("dimensions", Cell::opt(self.dimensions.as_ref())),
            (
                "items",
                if self.items.is_empty() {
                    Cell::opt(None::<String>)
                } else {
                    Cell::plain(self.items.join(", "))
                },
            ),
            ("from", Cell::opt(self.start_address.as_ref())),
            ("to", Cell::opt(self.end_address.as_ref())),
            ("total_fee", Cell::plain(self.total_fee.to_string())),
            ("webhook_url", Cell::opt(self.webhook_url.as_ref())),
            ("rating", Cell::opt(self.rating)),
            ("failure_reason", Cell::opt(self.failure_reason.as_ref())),
            ("created_at", Cell::plain(short_time(&self.created_at))),
            ("driver_assigned", time(&self.assigned_to_driver_at)),
            ("picked_up_at", time(&self.picked_up_at)),
            ("delivered_at", time(&self.delivered_at)),
            ("failed_at", time(&self.failed_at)),
            ("returned_at", time(&self.returned_at)),
            ("cancelled_at", time(&self.cancelled_at)),
            ("rated_at", time(&self.rated_at)),
            ("updated_at", Cell::plain(short_time(&self.updated_at))),
        ]
    }
}

impl Tabular for CourierCompany {
    const HEADERS: &'static [&'static str] =
        &["ID", "NAME", "ACTIVE", "BASE FEE", "PER KG", "PER KM"];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::plain(self.id.to_string()),
            Cell::styled(&self.name, BOLD),
            yes_no(self.active),
            Cell::plain(self.base_fee.to_string()),
            Cell::plain(self.per_kg.to_string()),
            Cell::plain(self.per_km.to_string()),
        ]
    }
}

impl Tabular for ConfirmationCode {
    const HEADERS: &'static [&'static str] = &["SHIPMENT", "CONFIRMATION CODE", "EXPIRES"];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::plain(self.code.as_str()),
            Cell::styled(&self.confirmation_code, BOLD),
            Cell::plain(short_time(&self.expires_at)),
        ]
    }
}

impl Tabular for ApiKey {
    const HEADERS: &'static [&'static str] = &["ID", "NAME", "KEY", "CREATED", "LAST USED"];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::plain(self.id.to_string()),
            Cell::styled(&self.name, BOLD),
            Cell::plain(format!("{}...{}", self.prefix, self.last4)),
            Cell::plain(short_time(&self.created_at)),
            Cell::opt(self.last_used_at.as_ref().map(short_time)),
        ]
    }
}

impl Tabular for Webhook {
    const HEADERS: &'static [&'static str] = &["ID", "URL", "ACTIVE", "CREATED"];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::plain(self.webhook_id.to_string()),
            Cell::styled(&self.url, BOLD),
            yes_no(self.active),
            Cell::plain(short_time(&self.created_at)),
        ]
    }
}

impl Tabular for Delivery {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "SHIPMENT",
        "VERSION",
        "RESULT",
        "STATUS",
        "MS",
        "AT",
        "REDELIVERY OF",
        "ERROR",
    ];
    fn cells(&self) -> Vec<Cell> {
        let result = if self.success {
            Cell::styled("ok", Style::new().fg_color(Some(AnsiColor::Green.into())))
        } else {
            Cell::styled("failed", Style::new().fg_color(Some(AnsiColor::Red.into())))
        };
        vec![
            Cell::plain(self.id.to_string()),
            Cell::plain(self.shipment_code.as_str()),
            Cell::plain(self.version.to_string()),
            result,
            Cell::opt(self.status_code),
            Cell::plain(self.duration_ms.to_string()),
            Cell::plain(short_time(&self.delivered_at)),
            Cell::opt(self.redelivery_of),
            Cell::opt(self.error.as_ref()),
        ]
    }
}

fn yes_no(b: bool) -> Cell {
    if b {
        Cell::plain("yes")
    } else {
        Cell::styled("no", DIM)
    }
}

/// The line under a table page: `page 2 of 5 (93 shipments)`, with the noun
/// as `(singular, plural)`.
pub fn page_summary<T>(page: &Page<T>, noun: (&str, &str)) -> String {
    format!(
        "page {} of {} ({} {})",
        page.page,
        page.total_pages.max(1),
        page.total,
        if page.total == 1 { noun.0 } else { noun.1 }
    )
}

/// Writes a list: a table, one JSON array, or one object per line.
pub fn list<T: Tabular>(out: &mut dyn Write, format: Format, rows: &[T]) -> io::Result<()> {
    match format {
        Format::Table => {
            let rows: Vec<Vec<Cell>> = rows.iter().map(Tabular::cells).collect();
            let mut widths: Vec<usize> = T::HEADERS.iter().map(|h| width(h)).collect();
            for row in &rows {
                for (w, cell) in widths.iter_mut().zip(row) {
                    *w = (*w).max(width(&cell.text));
                }
            }
            table_row(out, &headers(T::HEADERS), &widths)?;
            rows.iter().try_for_each(|row| table_row(out, row, &widths))
        }
        Format::Json => json(out, &rows),
        Format::Ndjson => rows.iter().try_for_each(|r| json_line(out, r)),
    }
}

/// Writes one item: labelled fields, or one JSON document (one line for
/// ndjson).
pub fn one<T: Tabular>(out: &mut dyn Write, format: Format, item: &T) -> io::Result<()> {
    match format {
        Format::Table => detail(out, &item.detail()),
        Format::Json => json(out, item),
        Format::Ndjson => json_line(out, item),
    }
}

/// Writes labelled fields, one per line, labels aligned.
pub fn detail(out: &mut dyn Write, fields: &[(&str, Cell)]) -> io::Result<()> {
    let label_width = fields.iter().map(|(l, _)| width(l)).max().unwrap_or(0);
    for (label, cell) in fields {
        writeln!(
            out,
            "{DIM}{label:<label_width$}{DIM:#}  {}{}{:#}",
            cell.style, cell.text, cell.style
        )?;
    }
    Ok(())
}

/// Writes a value as an indented JSON document.
pub fn json(out: &mut dyn Write, value: &(impl Serialize + ?Sized)) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
}

/// Writes a value as compact JSON on one line.
pub fn json_line(out: &mut dyn Write, value: &(impl Serialize + ?Sized)) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    writeln!(out)
}

/// A list written one item at a time, never held in memory: a table with
/// fixed columns, a JSON array, or one object per line.
pub struct Streamed<'a> {
    out: &'a mut dyn Write,
    format: Format,
    widths: Vec<usize>,
    count: u64,
}

impl<'a> Streamed<'a> {
    /// Starts the list; `widths` are the table's minimum column widths
    /// (longer cells push the row, not the column).
    pub fn start<T: Tabular>(
        out: &'a mut dyn Write,
        format: Format,
        widths: &[usize],
    ) -> io::Result<Streamed<'a>> {
        let widths: Vec<usize> = T::HEADERS
            .iter()
            .zip(widths.iter().chain(std::iter::repeat(&0)))
            .map(|(h, w)| width(h).max(*w))
            .collect();
        let list = Streamed {
            out,
            format,
            widths,
            count: 0,
        };
        match format {
            Format::Table => table_row(list.out, &headers(T::HEADERS), &list.widths)?,
            Format::Json => write!(list.out, "[")?,
            Format::Ndjson => {}
        }
        Ok(list)
    }

    /// Writes the next item.
    pub fn push<T: Tabular>(&mut self, item: &T) -> io::Result<()> {
        match self.format {
            Format::Table => table_row(self.out, &item.cells(), &self.widths)?,
            Format::Json => {
                if self.count > 0 {
                    write!(self.out, ",")?;
                }
                write!(self.out, "\n  ")?;
                serde_json::to_writer(&mut *self.out, item)?;
            }
            Format::Ndjson => json_line(self.out, item)?,
        }
        self.count += 1;
        self.out.flush()
    }

    /// Ends the list; returns how many items it had.
    pub fn finish(self) -> io::Result<u64> {
        if self.format == Format::Json {
            if self.count > 0 {
                writeln!(self.out)?;
            }
            writeln!(self.out, "]")?;
        }
        Ok(self.count)
    }
}

fn headers(titles: &[&str]) -> Vec<Cell> {
    titles
        .iter()
        .map(|t| Cell::styled(*t, BOLD.underline()))
        .collect()
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn table_row(out: &mut dyn Write, cells: &[Cell], widths: &[usize]) -> io::Result<()> {
    let last = cells.len().saturating_sub(1);
    for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
        let pad = if i == last {
            0
        } else {
            w.saturating_sub(width(&cell.text)) + 2
        };
        write!(
            out,
            "{}{}{:#}{:pad$}",
            cell.style, cell.text, cell.style, ""
        )?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Pair(&'static str, &'static str);

    impl Tabular for Pair {
        const HEADERS: &'static [&'static str] = &["A", "LONG HEADER"];
        fn cells(&self) -> Vec<Cell> {
            vec![Cell::plain(self.0), Cell::plain(self.1)]
        }
    }

    fn strip(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        let mut s = anstream::StripStream::new(&mut out);
        s.write_all(bytes).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn tables_align_columns_to_the_widest_cell() {
        let mut out = Vec::new();
        list(
            &mut out,
            Format::Table,
            &[Pair("wide cell", "x"), Pair("y", "z")],
        )
        .unwrap();
        assert_eq!(
            strip(&out),
            "A          LONG HEADER\nwide cell  x\ny          z\n"
        );
    }

    #[test]
    fn a_streamed_json_list_is_one_array() {
        let mut out = Vec::new();
        let mut s = Streamed::start::<Pair>(&mut out, Format::Json, &[]).unwrap();
        s.push(&Pair("a", "b")).unwrap();
        s.push(&Pair("c", "d")).unwrap();
        assert_eq!(s.finish().unwrap(), 2);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v, serde_json::json!([["a", "b"], ["c", "d"]]));

        let mut out = Vec::new();
        let s = Streamed::start::<Pair>(&mut out, Format::Json, &[]).unwrap();
        assert_eq!(s.finish().unwrap(), 0);
        assert_eq!(String::from_utf8(out).unwrap(), "[]\n");
    }

    #[test]
    fn a_streamed_table_keeps_its_minimum_widths() {
        let mut out = Vec::new();
        let mut s = Streamed::start::<Pair>(&mut out, Format::Table, &[4]).unwrap();
        s.push(&Pair("toolong", "x")).unwrap();
        s.finish().unwrap();
        assert_eq!(strip(&out), "A     LONG HEADER\ntoolong  x\n");
    }
}
