//! The query string of the shipment lists: parsed strictly, with an error
//! that names the parameter at fault.

use chrono::{DateTime, NaiveDate, Utc};
use shipment_sdk::model::{CourierId, Status};

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
    /// `page=2&status=delivered&created_after=2026-11-01`.
    pub fn parse(raw: &str) -> Result<ListQuery, FieldError> {
        let mut q = ListQuery::default();
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
                other => return Err(FieldError::unknown(other)),
            }
        }
        Ok(q)
    }
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
}
