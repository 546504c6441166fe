//! The shipment list: filters, the page, and its total.
//!
//! The caller says which rows of a page it already holds at the version
//! the page has (`cache::listed` remembers each version a list showed), and
//! only the others are decoded: on SQLite the page is read as ids and
//! versions and the rows not held are read by id; on PostgreSQL the page is
//! read whole and only the rows not held are decoded
//! ([`page_reads_whole_rows`] says why the engines differ).
//!
//! The page is the one query whose SQL depends on the request (which
//! filters are set), so it is built with [`sqlx::QueryBuilder`], which
//! writes each parameter's placeholder as it binds it. A builder is typed
//! by its engine, so this is also the one place the store is generic over
//! [`sqlx::Database`], with the bounds that takes spelled out on
//! [`page_on`].

use std::collections::HashMap;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use shipment_sdk::model::MerchantId;
use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};

use super::{Actor, SECONDS_PER_DAY, ShipmentRecord, day_of};
use crate::domain::list_query::{ListQuery, Listing, MAX_PAGE_SIZE};
use crate::store::engine::PaddedIn;
use crate::store::{Backend, Store, StoreError};

/// A row of a page: which shipment, and which version of it (a shipment's
/// `version` goes up with every change written to its row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, sqlx::FromRow)]
pub(crate) struct RowVersion {
    /// The shipment's id.
    pub id: i64,
    /// Its version when the page was read.
    pub version: i64,
}

/// A row of a page, as [`Store::list_shipments`] gives it.
#[derive(Debug)]
pub(crate) enum PageRow<T> {
    /// What the caller holds for this row at the page's version.
    Held(T),
    /// A row the caller does not hold, read (its version may be newer than
    /// the page's, if it changed in between).
    Read(Box<ShipmentRecord>),
}

/// A page as [`Store::list_shipments`] gives it.
#[derive(Debug)]
pub(crate) struct ListedRows<R> {
    /// The page's rows, in the list's order.
    pub rows: Vec<R>,
    /// The rows the query matches across all pages.
    pub total: u64,
    /// The `created_at` and id of the page's last row when rows follow it
    /// (a next page's cursor starts after it); `None` on the last page.
    pub next: Option<(DateTime<Utc>, i64)>,
}

/// A row of a page before the rows not held are read by id (SQLite).
enum Paged<T> {
    Done(PageRow<T>),
    ById(i64),
}

/// Whether the page query reads whole rows on `backend`.
///
/// SQLite copies every column of every row it returns (an allocation each,
/// on its worker thread), so there the page reads ids and versions, and the
/// rows not held follow by id. PostgreSQL sends a row as one message, so
/// there the page reads whole rows: selecting columns would make it take
/// apart every row an `OFFSET` skips, to reach `version` past the text
/// columns, where for `SELECT *` it passes skipped rows on untouched (9.4
/// against 6.9 ms at offset 50,000; docs/src/appendix/benchmarks-history.md,
/// "List rows remembered by version").
pub(super) fn page_reads_whole_rows(backend: Backend) -> bool {
    match backend {
        Backend::Sqlite => false,
        Backend::Postgres => true,
    }
}

/// `SELECT * FROM shipments WHERE id IN (…)` for 1, 2, 4, … ids up to a
/// page.
static BY_IDS: LazyLock<PaddedIn> = LazyLock::new(|| {
    let most = usize::try_from(MAX_PAGE_SIZE).expect("a page size fits in usize");
    PaddedIn::new("SELECT * FROM shipments WHERE id", 1, most)
});

impl Store {
    /// A page of the actor's shipments, newest first, the total count, and
    /// where the next page starts.
    ///
    /// `held` gets the page's rows (id and version), in order, and gives
    /// back what the caller already holds for each; only the others are
    /// read and decoded.
    pub(crate) async fn list_shipments<T>(
        &self,
        actor: Actor,
        l: &Listing,
        held: impl FnOnce(&[RowVersion]) -> Vec<Option<T>>,
    ) -> Result<ListedRows<PageRow<T>>, StoreError> {
        let whole = page_reads_whole_rows(self.backend());
        let (rows, total, next) = match self.pool() {
            crate::store::Pool::Sqlite(pool) => {
                let mut conn = pool.acquire().await?;
                page_on::<sqlx::Sqlite, _>(&mut *conn, actor, l, whole, held).await?
            }
            crate::store::Pool::Postgres(pool) => {
                let mut conn = self.postgres_connection(pool).await?;
                page_on::<sqlx::Postgres, _>(&mut *conn, actor, l, whole, held).await?
            }
        };
        let ids: Vec<i64> = rows
            .iter()
            .filter_map(|row| match row {
                Paged::ById(id) => Some(*id),
                Paged::Done(_) => None,
            })
            .collect();
        let mut read: HashMap<i64, ShipmentRecord> = self
            .shipments_by_id(&ids)
            .await?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
        let rows = rows
            .into_iter()
            .map(|row| match row {
                Paged::Done(row) => Ok(row),
                Paged::ById(id) => read
                    .remove(&id)
                    .map(|r| PageRow::Read(Box::new(r)))
                    .ok_or_else(|| {
                        StoreError::Corrupt(format!("shipment {id} is on a page but has no row"))
                    }),
            })
            .collect::<Result<_, _>>()?;
        Ok(ListedRows {
            rows,
            total: u64::try_from(total).unwrap_or(0),
            next,
        })
    }

    /// How many of the merchant's shipments are in each status, from the
    /// kept counts (a probe of their primary key's merchant prefix, never
    /// a count of shipments): every status the merchant has a count of,
    /// zeros included, in no particular order.
    pub(crate) async fn shipments_by_status(
        &self,
        merchant_id: MerchantId,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let sql = "SELECT status, CAST(SUM(n) AS BIGINT) FROM shipment_counts_by_courier \
                   WHERE merchant_id = $1 GROUP BY status";
        Ok(self.query(sql).bind(merchant_id.get()).fetch_all().await?)
    }

    /// The shipments with these ids (at most a page's worth, distinct), in
    /// no particular order; an id no shipment has is left out.
    async fn shipments_by_id(&self, ids: &[i64]) -> Result<Vec<ShipmentRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let q = BY_IDS.query(|sql| self.query(sql), ids)?;
        Ok(q.fetch_all().await?)
    }
}

/// Page-number requests that skip at least this many rows find the day
/// their first row is on from the kept counts per day, instead of walking
/// every row before it with `OFFSET` (which stays for shallower pages,
/// where it is cheaper than summing the days).
const SEEK_FROM_OFFSET: i64 = 1_000;

/// The first instant of `day`.
fn day_start(day: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(day.saturating_mul(SECONDS_PER_DAY), 0)
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// The first whole day at or after `t`.
fn first_whole_day(t: DateTime<Utc>) -> i64 {
    let day = day_of(t);
    if day_start(day) == t { day } else { day + 1 }
}

/// A row of a page with the key of the list's order, for the next cursor.
#[derive(sqlx::FromRow)]
struct Keyed {
    id: i64,
    version: i64,
    created_at: DateTime<Utc>,
}

/// The page, of whole rows or of ids and versions
/// ([`page_reads_whole_rows`]), the total, and the key of its last row
/// when rows follow it, on a connection of one engine's pool; rows that
/// `held` does not hold are decoded if read whole, or else left to be
/// read by id.
async fn page_on<DB, T>(
    conn: &mut DB::Connection,
    actor: Actor,
    l: &Listing,
    whole: bool,
    held: impl FnOnce(&[RowVersion]) -> Vec<Option<T>>,
) -> sqlx::Result<(Vec<Paged<T>>, i64, Option<(DateTime<Utc>, i64)>)>
where
    DB: Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    Keyed: for<'r> FromRow<'r, DB::Row>,
    ShipmentRecord: for<'r> FromRow<'r, DB::Row>,
    (i64,): for<'r> FromRow<'r, DB::Row>,
    (i64, i64): for<'r> FromRow<'r, DB::Row>,
{
    let q = &l.query;
    let total = total_on::<DB>(conn, actor, q).await?;
    if l.offset() > 0 && l.offset() >= total {
        // Past the last row: nothing to walk to.
        return Ok((Vec::new(), total, None));
    }
    let seek = if l.offset() >= SEEK_FROM_OFFSET && by_owner_only(q) {
        seek_day::<DB>(conn, actor, q).await?
    } else {
        None
    };
    let columns = if whole {
        "*"
    } else {
        "id, version, created_at"
    };
    let mut page = QueryBuilder::new(format!("SELECT {columns} FROM shipments"));
    push_filter(&mut page, actor, q);
    if let Some(c) = &l.cursor {
        // A row value, so both engines seek the list's index to the
        // cursor's row instead of reading the rows before it.
        page.push(" AND (created_at, id) < (")
            .push_bind(c.created_at)
            .push(", ")
            .push_bind(c.id)
            .push(")");
    }
    let offset = match seek {
        Some((before, offset)) => {
            page.push(" AND created_at < ").push_bind(before);
            offset
        }
        None => l.offset(),
    };
    // One row more than the page: whether it exists says whether a next
    // cursor is given, so the last page's `next_cursor` is null.
    let size = usize::try_from(q.page_size).unwrap_or(usize::MAX);
    page.push(" ORDER BY created_at DESC, id DESC LIMIT ")
        .push_bind(i64::from(q.page_size) + 1)
        .push(" OFFSET ")
        .push_bind(offset);
    let mut rows = page.build().fetch_all(&mut *conn).await?;
    let more = rows.len() > size;
    rows.truncate(size);
    let keys = rows
        .iter()
        .map(Keyed::from_row)
        .collect::<sqlx::Result<Vec<_>>>()?;
    let next = keys.last().filter(|_| more).map(|k| (k.created_at, k.id));
    let versions: Vec<RowVersion> = keys
        .iter()
        .map(|k| RowVersion {
            id: k.id,
            version: k.version,
        })
        .collect();
    let mut held = held(&versions);
    held.resize_with(versions.len(), || None);
    let page = held
        .into_iter()
        .zip(versions.iter().zip(&rows))
        .map(|(held, (version, row))| {
            Ok(match held {
                Some(held) => Paged::Done(PageRow::Held(held)),
                None if whole => {
                    Paged::Done(PageRow::Read(Box::new(ShipmentRecord::from_row(row)?)))
                }
                None => Paged::ById(version.id),
            })
        })
        .collect::<sqlx::Result<_>>()?;
    Ok((page, total, next))
}

/// Whether the query filters by nothing but status and courier company,
/// which the kept counts (per courier and status, and per day) have.
fn by_owner_only(q: &ListQuery) -> bool {
    q.created_after.is_none() && q.created_before.is_none() && q.updated_after.is_none()
}

/// The exact number of rows the query matches, across all pages.
///
/// - Filtered by status and courier company only: the kept counts per
///   courier and status.
/// - Also by creation date: the kept counts of the whole days in the
///   range, plus the rows of the one or two days it cuts (read from the
///   list's index, a day's worth at most each); a range within one day
///   counts its rows.
/// - By `updated_after`: the matching rows are counted, on the index of
///   `updated_at` (a shipment's `updated_at` moves with every change, so no
///   count is kept by it): the cost grows with the shipments changed since
///   then, not with the account.
async fn total_on<DB>(conn: &mut DB::Connection, actor: Actor, q: &ListQuery) -> sqlx::Result<i64>
where
    DB: Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    (i64,): for<'r> FromRow<'r, DB::Row>,
{
    let scan = |from: Option<DateTime<Utc>>, until: Option<DateTime<Utc>>| {
        let mut count = QueryBuilder::<DB>::new("SELECT COUNT(*) FROM shipments");
        push_owner_filter(&mut count, actor, q);
        if let Some(t) = from {
            count.push(" AND created_at >= ").push_bind(t);
        }
        if let Some(t) = until {
            count.push(" AND created_at < ").push_bind(t);
        }
        if let Some(t) = q.updated_after {
            count.push(" AND updated_at >= ").push_bind(t);
        }
        count
    };
    if by_owner_only(q) {
        let mut count = QueryBuilder::new(
            "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM shipment_counts_by_courier",
        );
        push_owner_filter(&mut count, actor, q);
        return count.build_query_scalar().fetch_one(&mut *conn).await;
    }
    let (after, before) = (q.created_after, q.created_before);
    let first = after.map(first_whole_day);
    let end = before.map(day_of);
    let no_whole_day = matches!((first, end), (Some(first), Some(end)) if first >= end);
    if q.updated_after.is_some() || no_whole_day {
        return scan(after, before)
            .build_query_scalar()
            .fetch_one(&mut *conn)
            .await;
    }
    let mut days =
        QueryBuilder::new("SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM shipment_counts_by_day");
    push_owner_filter(&mut days, actor, q);
    if let Some(first) = first {
        days.push(" AND day >= ").push_bind(first);
    }
    if let Some(end) = end {
        days.push(" AND day < ").push_bind(end);
    }
    let mut total: i64 = days.build_query_scalar().fetch_one(&mut *conn).await?;
    if let (Some(after), Some(first)) = (after, first)
        && after < day_start(first)
    {
        let mut head = scan(Some(after), Some(day_start(first)));
        total += head
            .build_query_scalar::<i64>()
            .fetch_one(&mut *conn)
            .await?;
    }
    if let (Some(before), Some(end)) = (before, end)
        && day_start(end) < before
    {
        let mut tail = scan(Some(day_start(end)), Some(before));
        total += tail
            .build_query_scalar::<i64>()
            .fetch_one(&mut *conn)
            .await?;
    }
    Ok(total)
}

/// Where a deep page-number request starts, from the kept counts per day
/// (for a query filtered by status and courier company only): the end of
/// the day its first row is on, and how many rows of that day and earlier
/// to skip. `None` past the last row.
async fn seek_day<DB>(
    conn: &mut DB::Connection,
    actor: Actor,
    q: &ListQuery,
) -> sqlx::Result<Option<(DateTime<Utc>, i64)>>
where
    DB: Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    (i64, i64): for<'r> FromRow<'r, DB::Row>,
{
    let mut days =
        QueryBuilder::new("SELECT day, CAST(SUM(n) AS BIGINT) FROM shipment_counts_by_day");
    push_owner_filter(&mut days, actor, q);
    days.push(" GROUP BY day ORDER BY day DESC");
    let days: Vec<(i64, i64)> = days.build_query_as().fetch_all(&mut *conn).await?;
    let offset = q.offset();
    let mut newer = 0;
    for (day, n) in days {
        if newer + n > offset {
            return Ok(Some((day_start(day + 1), offset - newer)));
        }
        newer += n;
    }
    Ok(None)
}

/// The merchant or courier company whose shipments these are.
fn owner(actor: Actor) -> i64 {
    actor.raw_id()
}

/// Appends the `WHERE` clause: the actor's own shipments, and each filter
/// the query sets.
fn push_filter<DB>(b: &mut QueryBuilder<DB>, actor: Actor, q: &ListQuery)
where
    DB: Database,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
{
    push_owner_filter(b, actor, q);
    if let Some(t) = q.created_after {
        b.push(" AND created_at >= ").push_bind(t);
    }
    if let Some(t) = q.created_before {
        b.push(" AND created_at < ").push_bind(t);
    }
    if let Some(t) = q.updated_after {
        b.push(" AND updated_at >= ").push_bind(t);
    }
}

/// Appends the `WHERE` clause of the actor's own rows with the query's
/// status and courier company: columns the shipments and both tables of
/// kept counts share.
fn push_owner_filter<DB>(b: &mut QueryBuilder<DB>, actor: Actor, q: &ListQuery)
where
    DB: Database,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
{
    b.push(match actor {
        Actor::Merchant(_) => " WHERE merchant_id = ",
        Actor::Courier(_) => " WHERE courier_company_id = ",
    })
    .push_bind(owner(actor));
    if let Some(s) = &q.status {
        b.push(" AND status = ").push_bind(s.as_str().to_owned());
    }
    if let Some(c) = q.courier_company_id {
        b.push(" AND courier_company_id = ").push_bind(c.get());
    }
}
