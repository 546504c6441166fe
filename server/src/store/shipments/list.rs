//! The shipment list: filters, the page, and its total.

use chrono::{DateTime, Utc};
use shipment_sdk::model::Shipment;
use sqlx::AssertSqlSafe;

use super::{Actor, COLUMNS, ShipmentRecord};
use crate::domain::list_query::ListQuery;
use crate::store::{Store, StoreError, on_pool};

/// A typed value bound into dynamic SQL.
enum Bind {
    Int(i64),
    Text(String),
    Time(DateTime<Utc>),
}

macro_rules! bind_all {
    ($query:expr, $binds:expr) => {{
        let mut q = $query;
        for b in $binds {
            q = match b {
                Bind::Int(v) => q.bind(*v),
                Bind::Text(v) => q.bind(v.clone()),
                Bind::Time(v) => q.bind(*v),
            };
        }
        q
    }};
}

impl Store {
    /// A page of the actor's shipments, newest first, and the total count.
    pub async fn list_shipments(
        &self,
        actor: Actor,
        q: &ListQuery,
    ) -> Result<(Vec<Shipment>, u64), StoreError> {
        let (owner_column, owner) = match actor {
            Actor::Merchant(id) => ("merchant_id", id),
            Actor::Courier(id) => ("courier_company_id", id),
        };
        let mut filter = format!(" WHERE {owner_column} = $1");
        let mut binds = vec![Bind::Int(owner)];
        let mut add = |clause: &str, bind: Bind| {
            binds.push(bind);
            filter.push_str(&format!(" AND {clause} ${}", binds.len()));
        };
        if let Some(s) = &q.status {
            add("status =", Bind::Text(s.as_str().to_owned()));
        }
        if let Some(c) = q.courier_company_id {
            add("courier_company_id =", Bind::Int(c));
        }
        if let Some(t) = q.created_after {
            add("created_at >=", Bind::Time(t));
        }
        if let Some(t) = q.created_before {
            add("created_at <", Bind::Time(t));
        }
        if let Some(t) = q.updated_after {
            add("updated_at >=", Bind::Time(t));
        }
        // A merchant's list filtered by nothing or by status alone (the
        // common pages) takes its total from the maintained counts; any
        // other filter counts the matching rows.
        let counted = matches!(actor, Actor::Merchant(_))
            && q.courier_company_id.is_none()
            && q.created_after.is_none()
            && q.created_before.is_none()
            && q.updated_after.is_none();
        let count_sql = if counted {
            let status = if q.status.is_some() {
                " AND status = $2"
            } else {
                ""
            };
            format!(
                "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM shipment_counts WHERE merchant_id = $1{status}"
            )
        } else {
            format!("SELECT COUNT(*) FROM shipments{filter}")
        };
        let page_sql = format!(
            "SELECT {COLUMNS} FROM shipments{filter} ORDER BY created_at DESC, id DESC \
             LIMIT {} OFFSET {}",
            q.page_size,
            q.offset()
        );
        let total: i64 = on_pool!(self, |pool| bind_all!(
            sqlx::query_scalar(AssertSqlSafe(count_sql.clone())),
            &binds
        )
        .fetch_one(pool)
        .await)?;
        let rows: Vec<ShipmentRecord> = on_pool!(self, |pool| bind_all!(
            sqlx::query_as(AssertSqlSafe(page_sql.clone())),
            &binds
        )
        .fetch_all(pool)
        .await)?;
        let data = rows
            .iter()
            .map(ShipmentRecord::to_model)
            .collect::<Result<_, _>>()?;
        Ok((data, u64::try_from(total).unwrap_or(0)))
    }
}
