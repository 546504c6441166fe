//! The rows of an import file, one at a time: CSV records or NDJSON lines,
//! each checked and given its idempotency key before anything is sent.

use std::io::{BufRead, BufReader, Read};

use indicatif::ProgressBar;
use rust_decimal::Decimal;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use shipment_sdk::model::{CourierId, CreateShipment, IdempotencyKey, WebhookUrl};

use crate::commands::shipments::ImportFormat;
use crate::error::{FAILURE, Failure};

/// The prefix of a derived idempotency key; the rest is 64 hex digits.
const DERIVED_KEY_PREFIX: &str = "import-";

/// A row ready to send.
#[derive(Debug)]
pub(super) struct Prepared {
    pub(super) request: CreateShipment,
    pub(super) key: IdempotencyKey,
}

/// One row of the file: its line (the header is line 1), and the request or
/// why it cannot be one.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) line: u64,
    pub(super) parsed: Result<Prepared, String>,
}

/// The rows of the file, one at a time. A read error ends them and is kept
/// in `fatal`.
pub(super) struct Rows {
    source: Source,
    progress: Option<ProgressBar>,
    /// The read error that ended the rows, if one did.
    pub(super) fatal: Option<Failure>,
}

enum Source {
    Csv(CsvRows),
    Ndjson(NdjsonRows),
}

impl Rows {
    /// The rows of `input`; for CSV, the header row is read and checked
    /// first (a usage error when a column is unknown, repeated or missing).
    pub(super) fn new(
        format: ImportFormat,
        input: Box<dyn Read>,
        name: &str,
        progress: Option<ProgressBar>,
    ) -> Result<Rows, Failure> {
        let source = match format {
            ImportFormat::Csv => Source::Csv(CsvRows::new(input, name)?),
            ImportFormat::Ndjson => Source::Ndjson(NdjsonRows {
                reader: BufReader::new(input),
                name: name.to_owned(),
                buf: Vec::new(),
                line: 0,
                bytes: 0,
            }),
        };
        Ok(Rows {
            source,
            progress,
            fatal: None,
        })
    }
}

impl Iterator for Rows {
    type Item = Row;

    fn next(&mut self) -> Option<Row> {
        if self.fatal.is_some() {
            return None;
        }
        let next = match &mut self.source {
            Source::Csv(rows) => rows.next_row(),
            Source::Ndjson(rows) => rows.next_row(),
        };
        match next? {
            Ok((row, bytes)) => {
                if let Some(p) = &self.progress {
                    p.set_position(bytes);
                }
                Some(row)
            }
            Err(fatal) => {
                self.fatal = Some(fatal);
                None
            }
        }
    }
}

/// A column of the CSV file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Courier,
    Description,
    Weight,
    Dimensions,
    Items,
    StartAddress,
    EndAddress,
    WebhookUrl,
    IdempotencyKey,
}

const COLUMNS: &[(&str, Column)] = &[
    ("courier_company_id", Column::Courier),
    ("description", Column::Description),
    ("weight_kg", Column::Weight),
    ("dimensions", Column::Dimensions),
    ("items", Column::Items),
    ("start_address", Column::StartAddress),
    ("end_address", Column::EndAddress),
    ("webhook_url", Column::WebhookUrl),
    ("idempotency_key", Column::IdempotencyKey),
];

struct CsvRows {
    records: csv::StringRecordsIntoIter<Box<dyn Read>>,
    columns: Vec<Column>,
    name: String,
    line: u64,
}

impl CsvRows {
    /// Reads and checks the header row.
    fn new(input: Box<dyn Read>, name: &str) -> Result<CsvRows, Failure> {
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(input);
        let header = reader
            .headers()
            .map_err(|e| Failure::usage(format!("cannot read the header row of {name}: {e}")))?;
        let mut columns = Vec::with_capacity(header.len());
        let mut unknown = Vec::new();
        for title in header {
            let title = title.trim_start_matches('\u{feff}');
            match COLUMNS.iter().find(|(n, _)| *n == title) {
                Some((_, column)) if columns.contains(column) => {
                    return Err(Failure::usage(format!(
                        "{name}: the column `{title}` appears twice"
                    )));
                }
                Some((_, column)) => columns.push(*column),
                None => unknown.push(format!("`{title}`")),
            }
        }
        let known = || {
            COLUMNS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !unknown.is_empty() {
            return Err(Failure::usage(format!(
                "{name}: unknown column{} {}",
                if unknown.len() == 1 { "" } else { "s" },
                unknown.join(", ")
            ))
            .hint(format!("the columns are {}", known())));
        }
        if !columns.contains(&Column::Courier) {
            return Err(Failure::usage(format!(
                "{name}: the header row has no courier_company_id column"
            ))
            .hint(format!("the first line names the columns: {}", known())));
        }
        Ok(CsvRows {
            records: reader.into_records(),
            columns,
            name: name.to_owned(),
            line: 1,
        })
    }

    /// The next row and the bytes read so far.
    fn next_row(&mut self) -> Option<Result<(Row, u64), Failure>> {
        let next = self.records.next()?;
        let (position, parsed) = match next {
            Ok(record) => {
                let position = record.position().cloned();
                let line = position.as_ref().map_or(self.line + 1, csv::Position::line);
                (position, csv_request(&self.columns, &record, line))
            }
            Err(e) => {
                let position = e.position().cloned();
                let error = match e.kind() {
                    csv::ErrorKind::Io(_) => {
                        return Some(Err(Failure::new(
                            FAILURE,
                            format!("cannot read {}: {e}", self.name),
                        )));
                    }
                    csv::ErrorKind::UnequalLengths {
                        expected_len, len, ..
                    } => format!("the row has {len} cells, the header row {expected_len}"),
                    csv::ErrorKind::Utf8 { .. } => "the row is not UTF-8 text".to_owned(),
                    _ => e.to_string(),
                };
                (position, Err(error))
            }
        };
        let line = position.as_ref().map_or(self.line + 1, csv::Position::line);
        self.line = line;
        let bytes = position.as_ref().map_or(0, csv::Position::byte);
        Some(Ok((Row { line, parsed }, bytes)))
    }
}

/// The request of one CSV row: empty cells are absent fields.
fn csv_request(
    columns: &[Column],
    record: &csv::StringRecord,
    line: u64,
) -> Result<Prepared, String> {
    let mut request = CreateShipment::new(CourierId::new(0));
    let mut courier = None;
    let mut key = None;
    for (column, cell) in columns.iter().zip(record) {
        if cell.is_empty() {
            continue;
        }
        let text = Some(cell.to_owned());
        match column {
            Column::Courier => {
                courier =
                    Some(cell.parse::<i64>().map_err(|_| {
                        format!("courier_company_id `{cell}` is not a whole number")
                    })?);
            }
            Column::Description => request.description = text,
            Column::Weight => {
                let weight = cell
                    .parse::<Decimal>()
                    .map_err(|_| format!("weight_kg `{cell}` is not a number, e.g. 4.5"))?;
                request.weight_kg = Some(weight);
            }
            Column::Dimensions => request.dimensions = text,
            Column::Items => {
                let items: Vec<String> = cell
                    .split(';')
                    .map(str::trim)
                    .filter(|i| !i.is_empty())
                    .map(str::to_owned)
                    .collect();
                request.items = (!items.is_empty()).then_some(items);
            }
            Column::StartAddress => request.start_address = text,
            Column::EndAddress => request.end_address = text,
            Column::WebhookUrl => request.webhook_url = text,
            Column::IdempotencyKey => key = text,
        }
    }
    request.courier_company_id = CourierId::new(
        courier.ok_or_else(|| "courier_company_id is empty: it is required".to_owned())?,
    );
    prepare(request, key, line)
}

struct NdjsonRows {
    reader: BufReader<Box<dyn Read>>,
    name: String,
    buf: Vec<u8>,
    line: u64,
    bytes: u64,
}

impl NdjsonRows {
    /// The next non-blank line and the bytes read so far.
    fn next_row(&mut self) -> Option<Result<(Row, u64), Failure>> {
        loop {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(n) => {
                    self.line += 1;
                    self.bytes += n as u64;
                }
                Err(e) => {
                    return Some(Err(Failure::new(
                        FAILURE,
                        format!("cannot read {}: {e}", self.name),
                    )));
                }
            }
            let text = self.buf.trim_ascii();
            if text.is_empty() {
                continue;
            }
            let row = Row {
                line: self.line,
                parsed: ndjson_request(text, self.line),
            };
            return Some(Ok((row, self.bytes)));
        }
    }
}

/// The request of one NDJSON line: the API's create body, with an optional
/// `idempotency_key`.
fn ndjson_request(text: &[u8], line: u64) -> Result<Prepared, String> {
    let mut object: serde_json::Map<String, Value> =
        serde_json::from_slice(text).map_err(|e| format!("not a JSON object: {e}"))?;
    let key = match object.remove("idempotency_key") {
        None | Some(Value::Null) => None,
        Some(Value::String(key)) if key.is_empty() => None,
        Some(Value::String(key)) => Some(key),
        Some(_) => return Err("idempotency_key must be a string".to_owned()),
    };
    let request: CreateShipment = serde_json::from_value(Value::Object(object))
        .map_err(|e| format!("not a shipment create body: {e}"))?;
    prepare(request, key, line)
}

/// The checks the SDK and the service make that need no round trip, and the
/// row's idempotency key.
fn prepare(
    mut request: CreateShipment,
    key: Option<String>,
    line: u64,
) -> Result<Prepared, String> {
    if request.courier_company_id.get() <= 0 {
        return Err(format!(
            "courier_company_id must be positive, not {}",
            request.courier_company_id
        ));
    }
    if let Some(weight) = request.weight_kg {
        if weight <= Decimal::ZERO {
            return Err(format!("weight_kg must be greater than zero, not {weight}"));
        }
        // 4.50 and 4.5 are the same row.
        request.weight_kg = Some(weight.normalize());
    }
    if let Some(url) = &request.webhook_url {
        let url = WebhookUrl::parse(url)
            .map_err(|e| format!("webhook_url `{url}` cannot be used: {e}"))?;
        request.webhook_url = Some(url.into_string());
    }
    let key = match key {
        Some(key) => IdempotencyKey::parse(&key).map_err(|e| format!("idempotency_key: {e}"))?,
        None => derived_key(line, &request),
    };
    Ok(Prepared { request, key })
}

/// `import-` and the SHA-256 of the line number and the request as it is
/// sent: the same line of the same file gives the same key on every run.
fn derived_key(line: u64, request: &CreateShipment) -> IdempotencyKey {
    let mut digest = Sha256::new();
    digest.update(line.to_string().as_bytes());
    digest.update(b"\n");
    // Serialising a create body cannot fail (no maps with non-string keys).
    digest.update(serde_json::to_vec(request).unwrap_or_default());
    let key = format!("{DERIVED_KEY_PREFIX}{}", hex::encode(digest.finalize()));
    IdempotencyKey::parse(&key).unwrap_or_else(|_| unreachable!("71 visible ASCII characters"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv_rows(text: &str) -> Result<Vec<Row>, Failure> {
        let input: Box<dyn Read> = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
        Ok(Rows::new(ImportFormat::Csv, input, "test.csv", None)?.collect())
    }

    #[test]
    fn csv_cells_are_quoted_trimmed_and_split() {
        let rows = csv_rows(
            "courier_company_id,description,weight_kg,items\n\
             7,\"Books, \"\"rare\"\"\",4.50, book ; lamp;\n\
             7,,,\n",
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].line, 2);
        let first = rows[0].parsed.as_ref().unwrap();
        assert_eq!(
            first.request.description.as_deref(),
            Some("Books, \"rare\"")
        );
        assert_eq!(first.request.weight_kg, Some("4.5".parse().unwrap()));
        assert_eq!(
            first.request.items,
            Some(vec!["book".to_owned(), "lamp".to_owned()])
        );
        assert!(first.key.as_str().starts_with(DERIVED_KEY_PREFIX));
        let second = rows[1].parsed.as_ref().unwrap();
        assert_eq!(second.request, CreateShipment::new(CourierId::new(7)));
    }

    #[test]
    fn derived_keys_depend_on_the_line_and_the_content() {
        let rows = csv_rows("courier_company_id,weight_kg\n7,4.5\n7,4.50\n7,4.5\n7,2\n").unwrap();
        let keys: Vec<&str> = rows
            .iter()
            .map(|r| r.parsed.as_ref().unwrap().key.as_str())
            .collect();
        assert_ne!(keys[0], keys[2], "the same content on another line");
        let again = csv_rows("courier_company_id,weight_kg\n7,4.50\n").unwrap();
        assert_eq!(
            again[0].parsed.as_ref().unwrap().key.as_str(),
            keys[0],
            "4.50 and 4.5 on one line"
        );
        assert_eq!(keys[0].len(), DERIVED_KEY_PREFIX.len() + 64);
    }

    #[test]
    fn bad_cells_fail_their_row_only() {
        let rows = csv_rows(
            "courier_company_id,weight_kg,idempotency_key\n\
             x,1,\n\
             7,abc,\n\
             0,1,\n\
             7,1,has space\n\
             7,1\n\
             ,1,\n\
             7,1,k-1\n",
        )
        .unwrap();
        let errors: Vec<String> = rows
            .iter()
            .map(|r| match &r.parsed {
                Ok(p) => format!("{}: ok {}", r.line, p.key),
                Err(e) => format!("{}: {e}", r.line),
            })
            .collect();
        insta::assert_debug_snapshot!(errors, @r#"
        [
            "2: courier_company_id `x` is not a whole number",
            "3: weight_kg `abc` is not a number, e.g. 4.5",
            "4: courier_company_id must be positive, not 0",
            "5: idempotency_key: the Idempotency-Key header must be 1 to 255 visible ASCII characters",
            "6: the row has 2 cells, the header row 3",
            "7: courier_company_id is empty: it is required",
            "8: ok k-1",
        ]
        "#);
    }

    #[test]
    fn unknown_and_missing_columns_are_usage_errors() {
        let e = csv_rows("courier_company_id,colour,size\n").err().unwrap();
        assert_eq!(e.code, crate::error::USAGE);
        assert_eq!(e.message, "test.csv: unknown columns `colour`, `size`");
        let e = csv_rows("description\nx\n").err().unwrap();
        assert!(e.message.contains("no courier_company_id"), "{}", e.message);
        let e = csv_rows("items,items,courier_company_id\n").err().unwrap();
        assert!(e.message.contains("twice"), "{}", e.message);
    }

    #[test]
    fn ndjson_lines_are_create_bodies_with_an_optional_key() {
        let text = "{\"courier_company_id\": 7, \"weight_kg\": 2, \"idempotency_key\": \"o-1\"}\n\
                    \n\
                    {\"courier_company_id\": 7, \"colour\": \"red\"}\n\
                    not json\n\
                    {\"courier_company_id\": 7, \"items\": [\"a\"]}";
        let input: Box<dyn Read> = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
        let rows: Vec<Row> = Rows::new(ImportFormat::Ndjson, input, "x.ndjson", None)
            .unwrap()
            .collect();
        let lines: Vec<u64> = rows.iter().map(|r| r.line).collect();
        assert_eq!(lines, [1, 3, 4, 5], "blank lines are skipped but counted");
        let first = rows[0].parsed.as_ref().unwrap();
        assert_eq!(first.key.as_str(), "o-1");
        assert_eq!(first.request.weight_kg, Some(Decimal::from(2)));
        let unknown = rows[1].parsed.as_ref().unwrap_err();
        assert!(unknown.contains("unknown field `colour`"), "{unknown}");
        assert!(rows[2].parsed.is_err());
        let last = rows[3].parsed.as_ref().unwrap();
        assert_eq!(last.request.items, Some(vec!["a".to_owned()]));
    }
}
