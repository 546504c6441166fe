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

use super::{Actor, ShipmentRecord};
use crate::domain::list_query::{ListQuery, MAX_PAGE_SIZE};
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
    /// A page of the actor's shipments, newest first, and the total count.
    ///
    /// `held` gets the page's rows (id and version), in order, and gives
    /// back what the caller already holds for each; only the others are
    /// read and decoded.
    pub(crate) async fn list_shipments<T>(
        &self,
        actor: Actor,
        q: &ListQuery,
        held: impl FnOnce(&[RowVersion]) -> Vec<Option<T>>,
    ) -> Result<(Vec<PageRow<T>>, u64), StoreError> {
        let whole = page_reads_whole_rows(self.backend());
        let (rows, total) = match self.pool() {
            crate::store::Pool::Sqlite(pool) => {
                let mut conn = pool.acquire().await?;
                page_on::<sqlx::Sqlite, _>(&mut *conn, actor, q, whole, held).await?
            }
            crate::store::Pool::Postgres(pool) => {
                let mut conn = self.postgres_connection(pool).await?;
                page_on::<sqlx::Postgres, _>(&mut *conn, actor, q, whole, held).await?
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
        Ok((rows, u64::try_from(total).unwrap_or(0)))
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

/// Whether the total can come from the kept counts: a list filtered by
/// nothing but status and courier company (a merchant's or a courier
/// company's); a filter by time counts the matching rows.
fn counted(q: &ListQuery) -> bool {
    q.created_after.is_none() && q.created_before.is_none() && q.updated_after.is_none()
}

/// The page, of whole rows or of ids and versions
/// ([`page_reads_whole_rows`]), and the total on a connection of one
/// engine's pool; rows
/// that `held` does not hold are decoded if read whole, or else left to be
/// read by id.
async fn page_on<DB, T>(
    conn: &mut DB::Connection,
    actor: Actor,
    q: &ListQuery,
    whole: bool,
    held: impl FnOnce(&[RowVersion]) -> Vec<Option<T>>,
) -> sqlx::Result<(Vec<Paged<T>>, i64)>
where
    DB: Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    RowVersion: for<'r> FromRow<'r, DB::Row>,
    ShipmentRecord: for<'r> FromRow<'r, DB::Row>,
    (i64,): for<'r> FromRow<'r, DB::Row>,
{
    let mut count = if counted(q) {
        let mut count = QueryBuilder::new(
            "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM shipment_counts_by_courier",
        );
        push_filter(&mut count, actor, q);
        count
    } else {
        let mut count = QueryBuilder::new("SELECT COUNT(*) FROM shipments");
        push_filter(&mut count, actor, q);
        count
    };
    let columns = if whole { "*" } else { "id, version" };
    let mut page = QueryBuilder::new(format!("SELECT {columns} FROM shipments"));
    push_filter(&mut page, actor, q);
    page.push(" ORDER BY created_at DESC, id DESC LIMIT ")
        .push_bind(i64::from(q.page_size))
        .push(" OFFSET ")
        .push_bind(q.offset());
    let total = count.build_query_scalar().fetch_one(&mut *conn).await?;
    let rows = page.build().fetch_all(&mut *conn).await?;
    let versions = rows
        .iter()
        .map(RowVersion::from_row)
        .collect::<sqlx::Result<Vec<_>>>()?;
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
    Ok((page, total))
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
