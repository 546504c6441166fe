//! What goes to stdout: tables and detail views for people, JSON for
//! programs. Everything else (progress, notes, errors) goes to stderr.
//!
//! Styles are always written; the `anstream` stream strips them unless
//! stdout is a terminal and `NO_COLOR` is unset (or `--color always`).
//!
//! Text that comes from outside `shipctl` (the service's answers, the
//! listener stream, a local app's errors) goes through [`escape`] on every
//! human path: a service `shipctl` does not control must not be able to
//! drive the merchant's terminal. JSON output keeps every string exact.

mod escape;
mod model;

use std::borrow::Cow;
use std::io::{self, Write};

use anstyle::{AnsiColor, Style};
use chrono::{DateTime, Utc};
use clap::ValueEnum;
use serde::Serialize;
use shipment_sdk::model::{Page, Status};

use self::escape::TerminalSafe;
pub use self::escape::escape;
pub use self::model::{expiry_cell, permissions_cell};

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
    /// A plain cell; control characters in `text` are [escaped](escape).
    pub fn plain(text: impl Into<String>) -> Cell {
        Cell::styled(text, Style::new())
    }

    /// A cell in `style`; control characters in `text` are
    /// [escaped](escape).
    pub fn styled(text: impl Into<String>, style: Style) -> Cell {
        let text = text.into();
        Cell {
            text: match escape(&text) {
                Cow::Borrowed(_) => text,
                Cow::Owned(escaped) => escaped,
            },
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
///
/// Strings are exact: a parser reads back what the service sent. DEL and
/// the C1 characters, which JSON allows raw, are written as `\u007f` ...
/// `\u009f` (as serde_json already writes C0), so JSON on a terminal
/// cannot drive it either.
pub fn json(out: &mut dyn Write, value: &(impl Serialize + ?Sized)) -> io::Result<()> {
    let formatter = TerminalSafe(serde_json::ser::PrettyFormatter::new());
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut *out, formatter,
    ))?;
    writeln!(out)
}

/// Writes a value as compact JSON on one line, strings exact as in
/// [`json`].
pub fn json_line(out: &mut dyn Write, value: &(impl Serialize + ?Sized)) -> io::Result<()> {
    compact(out, value)?;
    writeln!(out)
}

/// Writes a value as compact JSON, strings exact as in [`json`].
fn compact(out: &mut dyn Write, value: &(impl Serialize + ?Sized)) -> io::Result<()> {
    let formatter = TerminalSafe(serde_json::ser::CompactFormatter);
    value.serialize(&mut serde_json::Serializer::with_formatter(out, formatter))?;
    Ok(())
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
                compact(self.out, item)?;
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
    fn cells_are_escaped_and_columns_aligned_on_what_is_shown() {
        #[derive(Serialize)]
        struct Raw(String, &'static str);
        impl Tabular for Raw {
            const HEADERS: &'static [&'static str] = &["A", "B"];
            fn cells(&self) -> Vec<Cell> {
                vec![Cell::plain(self.0.clone()), Cell::plain(self.1)]
            }
        }
        let mut out = Vec::new();
        list(
            &mut out,
            Format::Table,
            &[Raw("x\u{1b}[2J".into(), "y"), Raw("z".into(), "w")],
        )
        .unwrap();
        // Only the headers' own styles are escape sequences.
        assert_eq!(
            strip(&out),
            "A           B\nx\\u{1b}[2J  y\nz           w\n"
        );
        assert!(!String::from_utf8(out).unwrap().contains("\u{1b}[2J"));
    }

    #[test]
    fn json_strings_stay_exact_and_carry_no_raw_control_character() {
        let text = "a\u{1b}[2J\u{7}\u{7f}\u{9b}\u{85}é\n";
        for format in [Format::Json, Format::Ndjson] {
            let mut out = Vec::new();
            one(&mut out, format, &Pair(text, "b")).unwrap();
            let written = String::from_utf8(out).unwrap();
            // Only the layout's newlines are raw.
            assert!(
                !written.chars().any(|c| c.is_control() && c != '\n'),
                "{written:?}"
            );
            assert!(written.contains(r"\u007f\u009b\u0085é"), "{written:?}");
            let back: (String, String) = serde_json::from_str(&written).unwrap();
            assert_eq!(back.0, text);
        }
        // A streamed list too.
        let mut out = Vec::new();
        let mut s = Streamed::start::<Pair>(&mut out, Format::Json, &[]).unwrap();
        s.push(&Pair(text, "b")).unwrap();
        s.finish().unwrap();
        let written = String::from_utf8(out).unwrap();
        assert!(!written.contains('\u{9b}'), "{written:?}");
        let back: Vec<(String, String)> = serde_json::from_str(&written).unwrap();
        assert_eq!(back[0].0, text);
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
