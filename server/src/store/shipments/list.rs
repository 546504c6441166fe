//! The shipment list: filters, the page, and its total.
//!
//! The one query whose SQL depends on the request (which filters are set),
//! so it is built with [`sqlx::QueryBuilder`], which writes each parameter's
//! placeholder as it binds it. A builder is typed by its engine, so this is
//! also the one place the store is generic over [`sqlx::Database`], with the
//! bounds that takes spelled out on [`page_on`].

use chrono::{DateTime, Utc};
use shipment_sdk::model::Shipment;
use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, Pool, QueryBuilder, Type};

use super::{Actor, ShipmentRecord};
use crate::domain::list_query::ListQuery;
use crate::store::{Store, StoreError};

impl Store {
    /// A page of the actor's shipments, newest first, and the total count.
    pub async fn list_shipments(
        &self,
        actor: Actor,
        q: &ListQuery,
    ) -> Result<(Vec<Shipment>, u64), StoreError> {
        let (rows, total) = match self.pool() {
            crate::store::Pool::Sqlite(pool) => page_on(pool, actor, q).await?,
            crate::store::Pool::Postgres(pool) => page_on(pool, actor, q).await?,
        };
        let data = rows
            .iter()
            .map(ShipmentRecord::to_model)
            .collect::<Result<_, _>>()?;
        Ok((data, u64::try_from(total).unwrap_or(0)))
    }
}

/// Whether the total can come from the kept counts: a list filtered by
/// nothing but status and courier company (a merchant's or a courier
/// company's); a filter by time counts the matching rows.
fn counted(q: &ListQuery) -> bool {
    q.created_after.is_none() && q.created_before.is_none() && q.updated_after.is_none()
}

/// The page and the total on one engine's pool.
async fn page_on<DB>(
    pool: &Pool<DB>,
    actor: Actor,
    q: &ListQuery,
) -> sqlx::Result<(Vec<ShipmentRecord>, i64)>
where
    DB: Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    for<'q> DateTime<Utc>: Encode<'q, DB> + Type<DB>,
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
    let mut page = QueryBuilder::new("SELECT * FROM shipments");
    push_filter(&mut page, actor, q);
    page.push(" ORDER BY created_at DESC, id DESC LIMIT ")
        .push_bind(i64::from(q.page_size))
        .push(" OFFSET ")
        .push_bind(q.offset());
    let total = count.build_query_scalar().fetch_one(pool).await?;
    let rows = page.build_query_as().fetch_all(pool).await?;
    Ok((rows, total))
}

/// The merchant or courier company whose shipments these are.
fn owner(actor: Actor) -> i64 {
    match actor {
        Actor::Merchant(id) | Actor::Courier(id) => id,
    }
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
        b.push(" AND courier_company_id = ").push_bind(c);
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
