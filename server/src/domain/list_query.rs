//! The query string of the shipment lists: parsed strictly, with an error
//! that names the parameter at fault.

use chrono::{DateTime, NaiveDate, Utc};
use sha2::{Digest, Sha256};
use shipment_sdk::model::{CourierId, Status};

use super::actor::Actor;
use super::field::FieldError;

/// Default `page_size`.
pub(crate) const DEFAULT_PAGE_SIZE: u32 = 20;
/// Largest `page_size` accepted.
pub const MAX_PAGE_SIZE: u32 = 100;
/// Largest `page` accepted; keeps `OFFSET` arithmetic far from overflow.
pub const MAX_PAGE: u32 = 1_000_000;

/// A validated list query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// From 1.
    pub page: u32,
    /// 1 to [`MAX_PAGE_SIZE`].
    pub page_size: u32,
    /// Only this (known) status.
    pub status: Option<Status>,
    /// Only this courier company.
    pub courier_company_id: Option<CourierId>,
    /// `created_at >= created_after`.
    pub created_after: Option<DateTime<Utc>>,
    /// `created_at < created_before`.
    pub created_before: Option<DateTime<Utc>>,
    /// `updated_at >= updated_after`.
    pub updated_after: Option<DateTime<Utc>>,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            page: 1,
            page_size: DEFAULT_PAGE_SIZE,
            status: None,
            courier_company_id: None,
            created_after: None,
            created_before: None,
            updated_after: None,
        }
    }
}

impl ListQuery {
    /// Rows to skip for this page.
    pub fn offset(&self) -> i64 {
        i64::from(self.page - 1) * i64::from(self.page_size)
    }

    /// Parses a raw (percent-encoded) query string such as
    /// `page=2&status=delivered&created_after=2026-11-01` (a `cursor` is
    /// an unknown field here: the HTTP list parses it beside these).
    pub fn parse(raw: &str) -> Result<ListQuery, FieldError> {
        ListQuery::parse_with(raw, false).map(|l| l.query)
    }

    fn parse_with(raw: &str, cursors: bool) -> Result<Listing, FieldError> {
        let mut q = ListQuery::default();
        let mut cursor = None;
        let mut seen: Vec<String> = Vec::new();
        for (name, value) in url::form_urlencoded::parse(raw.as_bytes()) {
            if seen.iter().any(|s| *s == name) {
                return Err(FieldError::invalid(
                    name.as_ref(),
                    format!("`{name}` is given more than once"),
                ));
            }
            seen.push(name.to_string());
            let value = value.as_ref();
            match name.as_ref() {
                "page" => q.page = bounded(&name, value, 1, MAX_PAGE)?,
                "page_size" => q.page_size = bounded(&name, value, 1, MAX_PAGE_SIZE)?,
                "status" => {
                    let status = Status::parse_known(value).ok_or_else(|| {
                        let known: Vec<_> = Status::KNOWN.iter().map(Status::as_str).collect();
                        FieldError::invalid(
                            "status",
                            format!("`status` must be one of: {}", known.join(", ")),
                        )
                    })?;
                    q.status = Some(status);
                }
                "courier_company_id" => {
                    let id = value
                        .parse::<i64>()
                        .ok()
                        .filter(|id| *id > 0)
                        .ok_or_else(|| {
                            FieldError::invalid(
                                &*name,
                                "`courier_company_id` must be a positive integer",
                            )
                        })?;
                    q.courier_company_id = Some(CourierId::new(id));
                }
                "created_after" => q.created_after = Some(instant(&name, value)?),
                "created_before" => q.created_before = Some(instant(&name, value)?),
                "updated_after" => q.updated_after = Some(instant(&name, value)?),
                "cursor" if cursors => cursor = Some(Cursor::parse(value)?),
                other => return Err(FieldError::unknown(other)),
            }
        }
        if cursor.is_some() && seen.iter().any(|s| s == "page") {
            return Err(FieldError::invalid(
                "page",
                "`page` cannot be combined with `cursor`: the cursor says where its page starts",
            ));
        }
        Ok(Listing { query: q, cursor })
    }
}

/// A list request: its [`ListQuery`], and the cursor the page starts
/// after, if it continues an earlier page instead of naming a page number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listing {
    /// Filters and paging (`page` is 1 and unused on a cursor page).
    pub query: ListQuery,
    /// Where the page starts: after the row the cursor names.
    pub cursor: Option<Cursor>,
}

impl From<ListQuery> for Listing {
    fn from(query: ListQuery) -> Listing {
        Listing {
            query,
            cursor: None,
        }
    }
}

impl Listing {
    /// Parses a list's raw query string: [`ListQuery::parse`]'s parameters
    /// and `cursor` (a cursor with `page` is refused, naming `page`).
    pub(crate) fn parse(raw: &str) -> Result<Listing, FieldError> {
        ListQuery::parse_with(raw, true)
    }

    /// Rows to skip for this page (a cursor page skips none: its rows
    /// start after the cursor's row).
    pub(crate) fn offset(&self) -> i64 {
        if self.cursor.is_some() {
            return 0;
        }
        self.query.offset()
    }

    /// The page number this page answers with: the one asked for, or on a
    /// cursor page the number a page-number request would give the page
    /// holding its first row (counted from the rows the walk has passed).
    pub(crate) fn page_number(&self) -> u32 {
        match &self.cursor {
            None => self.query.page,
            Some(c) => {
                let page = c.skipped / u64::from(self.query.page_size) + 1;
                u32::try_from(page).unwrap_or(u32::MAX)
            }
        }
    }

    /// Rows before this page's first: what the next page's cursor adds
    /// this page's rows to.
    fn skipped(&self) -> u64 {
        match &self.cursor {
            Some(c) => c.skipped,
            None => u64::try_from(self.query.offset()).unwrap_or(0),
        }
    }

    /// The cursor of the page after this one, whose last row is `last`
    /// and which holds `rows` rows: bound to `actor` and this query's
    /// filters.
    pub(crate) fn next_cursor(
        &self,
        actor: Actor,
        last: (DateTime<Utc>, i64),
        rows: usize,
    ) -> Cursor {
        Cursor {
            created_at: last.0,
            id: last.1,
            skipped: self.skipped() + rows as u64,
            filters: self.filters_digest(actor),
        }
    }

    /// Refuses a cursor made for another account or other filters.
    pub(crate) fn check_cursor(&self, actor: Actor) -> Result<(), FieldError> {
        match &self.cursor {
            Some(c) if c.filters != self.filters_digest(actor) => Err(FieldError::invalid(
                "cursor",
                "`cursor` was made for other filters: send it with the same `status`, \
                 `courier_company_id`, `created_after`, `created_before` and `updated_after` \
                 as the request whose page gave it",
            )),
            _ => Ok(()),
        }
    }

    /// What a cursor is bound to: whose list, and every filter. Not a
    /// secret: a cursor only names a place in its owner's own list.
    fn filters_digest(&self, actor: Actor) -> [u8; 8] {
        let owner = match actor {
            Actor::Merchant(id) => format!("m{}", id.get()),
            Actor::Courier(id) => format!("c{}", id.get()),
        };
        let instant = |t: Option<DateTime<Utc>>| t.and_then(|t| t.timestamp_nanos_opt());
        let bound = format!(
            "{owner}|{:?}|{:?}|{:?}|{:?}|{:?}",
            self.query.status.as_ref().map(Status::as_str),
            self.query.courier_company_id.map(CourierId::get),
            instant(self.query.created_after),
            instant(self.query.created_before),
            instant(self.query.updated_after),
        );
        first_eight(&Sha256::digest(bound.as_bytes()))
    }
}

/// Where a cursor page starts: after the row with this `created_at` and
/// `id` in the list's order (newest first), so rows created or changed
/// meanwhile never shift it. Written as `c1.` and five dot-separated
/// fields, the last a check of the others; opaque to clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor {
    /// The `created_at` of the last row of the page that gave it.
    pub created_at: DateTime<Utc>,
    /// That row's id.
    pub id: i64,
    /// Rows of the list before the page it starts (for the page number).
    pub skipped: u64,
    /// [`ListQuery::filters_digest`] of the query that made it.
    filters: [u8; 8],
}

/// The version prefix of a written [`Cursor`].
const CURSOR_PREFIX: &str = "c1";

impl Cursor {
    /// Reads a cursor a page gave; anything else (malformed, cut short,
    /// altered) is an `invalid_field` naming `cursor`.
    pub(crate) fn parse(value: &str) -> Result<Cursor, FieldError> {
        let refused = || {
            FieldError::invalid(
                "cursor",
                "`cursor` is not one this server gave: pass a page's `next_cursor` unchanged",
            )
        };
        let parts: Vec<&str> = value.split('.').collect();
        let [prefix, nanos, id, skipped, filters, check] = parts[..] else {
            return Err(refused());
        };
        if prefix != CURSOR_PREFIX || Cursor::check(&parts[..5]) != check {
            return Err(refused());
        }
        let nanos: i64 = nanos.parse().map_err(|_| refused())?;
        let mut digest = [0u8; 8];
        hex::decode_to_slice(filters, &mut digest).map_err(|_| refused())?;
        Ok(Cursor {
            created_at: DateTime::from_timestamp_nanos(nanos),
            id: id.parse().map_err(|_| refused())?,
            skipped: skipped.parse().map_err(|_| refused())?,
            filters: digest,
        })
    }

    /// The check field over the fields before it.
    fn check(fields: &[&str]) -> String {
        hex::encode(first_eight(&Sha256::digest(fields.join(".").as_bytes())))
    }
}

/// Writes the cursor as a page's `next_cursor` gives it.
impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Instants after 2262 have no nanosecond count; a shipment's
        // creation time never is one.
        let nanos = self.created_at.timestamp_nanos_opt().unwrap_or(i64::MAX);
        let fields = [
            CURSOR_PREFIX.to_owned(),
            nanos.to_string(),
            self.id.to_string(),
            self.skipped.to_string(),
            hex::encode(self.filters),
        ];
        let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
        write!(f, "{}.{}", fields.join("."), Cursor::check(&fields))
    }
}

fn first_eight(digest: &[u8]) -> [u8; 8] {
    let mut out = [0u8; 8];
    out.copy_from_slice(&digest[..8]);
    out
}

/// Parses a query that only pages (`page`, `page_size`), such as a
/// webhook's delivery log; returns `(page, page_size)`.
pub fn parse_page(raw: &str) -> Result<(u32, u32), FieldError> {
    let (mut page, mut page_size) = (None, None);
    for (name, value) in url::form_urlencoded::parse(raw.as_bytes()) {
        let slot = match name.as_ref() {
            "page" => &mut page,
            "page_size" => &mut page_size,
            other => return Err(FieldError::unknown(other)),
        };
        if slot.is_some() {
            return Err(FieldError::invalid(
                name.as_ref(),
                format!("`{name}` is given more than once"),
            ));
        }
        let max = if name == "page" {
            MAX_PAGE
        } else {
            MAX_PAGE_SIZE
        };
        *slot = Some(bounded(&name, &value, 1, max)?);
    }
    Ok((page.unwrap_or(1), page_size.unwrap_or(DEFAULT_PAGE_SIZE)))
}

fn bounded(name: &str, value: &str, min: u32, max: u32) -> Result<u32, FieldError> {
    value
        .parse::<u32>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            FieldError::invalid(
                name,
                format!("`{name}` must be an integer from {min} to {max}"),
            )
        })
}

/// RFC 3339 (`2026-11-21T09:30:12Z`, any offset) or a date (`2026-11-21`,
/// meaning its first instant in UTC).
pub(crate) fn instant(name: &str, value: &str) -> Result<DateTime<Utc>, FieldError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(value) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc());
    }
    Err(FieldError::invalid(
        name,
        format!(
            "`{name}` must be an RFC 3339 timestamp (2026-11-21T09:30:00Z) or a date (2026-11-21)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::FieldErrorKind;

    #[test]
    fn an_empty_query_gives_the_defaults() {
        assert_eq!(ListQuery::parse("").unwrap(), ListQuery::default());
    }

    #[test]
    fn every_parameter_is_read() {
        let q = ListQuery::parse(
            "page=3&page_size=100&status=in_transit&courier_company_id=7\
             &created_after=2026-11-01&created_before=2026-11-21T10%3A00%3A00%2B01%3A00\
             &updated_after=2026-11-02T00:00:00Z",
        )
        .unwrap();
        assert_eq!(q.page, 3);
        assert_eq!(q.page_size, 100);
        assert_eq!(q.offset(), 200);
        assert_eq!(q.status, Some(Status::InTransit));
        assert_eq!(q.courier_company_id, Some(CourierId::new(7)));
        assert_eq!(
            q.created_after.unwrap().to_rfc3339(),
            "2026-11-01T00:00:00+00:00"
        );
        assert_eq!(
            q.created_before.unwrap().to_rfc3339(),
            "2026-11-21T09:00:00+00:00"
        );
        assert!(q.updated_after.is_some());
    }

    #[test]
    fn page_size_is_bounded_at_both_edges() {
        assert_eq!(ListQuery::parse("page_size=1").unwrap().page_size, 1);
        assert_eq!(ListQuery::parse("page_size=100").unwrap().page_size, 100);
        for bad in [
            "page_size=0",
            "page_size=101",
            "page_size=-1",
            "page_size=ten",
            "page_size=",
        ] {
            let err = ListQuery::parse(bad).unwrap_err();
            assert_eq!(
                (err.kind, err.field.as_str()),
                (FieldErrorKind::Invalid, "page_size"),
                "{bad}"
            );
        }
    }

    #[test]
    fn page_starts_at_one() {
        assert_eq!(ListQuery::parse("page=0").unwrap_err().field, "page");
        assert_eq!(ListQuery::parse("page=1000001").unwrap_err().field, "page");
    }

    #[test]
    fn unknown_statuses_parameters_and_repeats_are_refused() {
        assert_eq!(ListQuery::parse("status=lost").unwrap_err().field, "status");
        let err = ListQuery::parse("pagesize=10").unwrap_err();
        assert_eq!(
            (err.kind, err.field.as_str()),
            (FieldErrorKind::Unknown, "pagesize")
        );
        assert_eq!(ListQuery::parse("page=1&page=2").unwrap_err().field, "page");
    }

    #[test]
    fn malformed_dates_are_refused() {
        for bad in [
            "created_after=yesterday",
            "updated_after=2026-13-01",
            "created_before=2026-11-21T25:00:00Z",
        ] {
            assert!(ListQuery::parse(bad).is_err(), "{bad}");
        }
    }

    fn merchant(id: i64) -> Actor {
        Actor::Merchant(shipment_sdk::model::MerchantId::new(id))
    }

    fn cursor_of(raw: &str, actor: Actor) -> String {
        let l = Listing::parse(raw).unwrap();
        let last = (
            DateTime::from_timestamp(1_790_000_000, 123_456_000).unwrap(),
            42,
        );
        l.next_cursor(actor, last, 20).to_string()
    }

    #[test]
    fn a_cursor_reads_back_as_written() {
        let written = cursor_of("status=delivered", merchant(1));
        let l = Listing::parse(&format!("status=delivered&cursor={written}")).unwrap();
        let c = l.cursor.clone().unwrap();
        assert_eq!((c.id, c.skipped), (42, 20));
        assert_eq!(c.created_at.timestamp_subsec_micros(), 123_456);
        assert_eq!(c.to_string(), written);
        assert_eq!(l.check_cursor(merchant(1)), Ok(()));
        assert_eq!(l.page_number(), 2, "20 rows passed at 20 a page");
        assert_eq!(l.offset(), 0);
    }

    #[test]
    fn a_cursor_with_other_filters_or_of_another_account_is_refused() {
        let written = cursor_of("status=delivered", merchant(1));
        for (raw, actor) in [
            (format!("cursor={written}"), merchant(1)),
            (format!("status=failed&cursor={written}"), merchant(1)),
            (
                format!("status=delivered&created_after=2026-01-01&cursor={written}"),
                merchant(1),
            ),
            (format!("status=delivered&cursor={written}"), merchant(2)),
        ] {
            let err = Listing::parse(&raw)
                .unwrap()
                .check_cursor(actor)
                .unwrap_err();
            assert_eq!(
                (err.kind, err.field.as_str()),
                (FieldErrorKind::Invalid, "cursor"),
                "{raw}"
            );
            assert!(err.detail.contains("other filters"), "{}", err.detail);
        }
    }

    #[test]
    fn a_malformed_or_altered_cursor_is_refused() {
        let written = cursor_of("", merchant(1));
        let altered = written.replacen(".42.", ".41.", 1);
        assert_ne!(altered, written);
        for bad in [
            String::new(),
            "abc".to_owned(),
            "c1.1.2.3.4.5".to_owned(),
            altered,
            written[..written.len() - 1].to_owned(),
            format!("{written}.0"),
            written.replacen("c1", "c2", 1),
        ] {
            let err = Listing::parse(&format!("cursor={bad}")).unwrap_err();
            assert_eq!(
                (err.kind, err.field.as_str()),
                (FieldErrorKind::Invalid, "cursor"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_cursor_with_a_page_number_is_refused_naming_page() {
        let written = cursor_of("", merchant(1));
        for raw in [
            format!("page=2&cursor={written}"),
            format!("cursor={written}&page=1"),
        ] {
            let err = Listing::parse(&raw).unwrap_err();
            assert_eq!(err.field, "page", "{raw}");
        }
        let with_size = Listing::parse(&format!("page_size=100&cursor={written}")).unwrap();
        assert_eq!(with_size.page_number(), 1, "20 rows passed at 100 a page");
    }

    #[test]
    fn the_query_alone_knows_no_cursor() {
        let written = cursor_of("", merchant(1));
        let err = ListQuery::parse(&format!("cursor={written}")).unwrap_err();
        assert_eq!(
            (err.kind, err.field.as_str()),
            (FieldErrorKind::Unknown, "cursor")
        );
    }
}
