//! Shipments read by code in batches: concurrent [`Store::shipment`] calls
//! queue to a few tasks ([`Lanes`]), and each task reads everything queued
//! meanwhile in one `SELECT … WHERE code IN (…)`.
//!
//! Why: on SQLite a statement is a hand-off to the worker thread of a pooled
//! connection and back, and under load those wake-ups (futex, scheduler)
//! cost more than SQLite's own work; on PostgreSQL it is a round trip.
//! A batch pays them once. docs/src/appendix/benchmarks-history.md ("Reads by code
//! in batches, prices from memory, …") has the profile and the figures.
//!
//! A read still sees every write answered before it was asked: a task takes
//! a request off the queue before it starts the statement that serves it.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::ShipmentRecord;
use crate::store::lanes::{self, Lanes, Reply};
use crate::store::query::PaddedIn;
use crate::store::{Db, Store, StoreError};

/// Most reads served by one statement.
const BATCH: usize = 64;

/// Tasks reading at once: on SQLite, each on a pooled connection of its
/// own (WAL lets them read side by side); on PostgreSQL, round trips in
/// flight at once.
const SQLITE_TASKS: usize = 2;
const POSTGRES_TASKS: usize = 4;

/// The queue of reads by code (see the [module](self) documentation).
pub(in crate::store) type Reads = Lanes<Read>;

/// One read: the code, and where its answer goes.
pub(in crate::store) struct Read {
    code: String,
    reply: Reply<Option<ShipmentRecord>>,
}

/// `SELECT * FROM shipments WHERE code IN (…)` with 1, 2, 4, … [`BATCH`]
/// parameters.
static BY_CODES: LazyLock<PaddedIn> =
    LazyLock::new(|| PaddedIn::new("SELECT * FROM shipments WHERE code", 1, BATCH));

impl Store {
    /// One shipment by code, if it exists; read together with the reads by
    /// code of concurrent requests.
    pub async fn shipment(&self, code: &str) -> Result<Option<ShipmentRecord>, StoreError> {
        let read = |reply| Read {
            code: code.to_owned(),
            reply,
        };
        let tasks = [SQLITE_TASKS, POSTGRES_TASKS];
        let serving = || lanes::on(&self.db, tasks, BATCH, serve);
        (self.by_code)
            .ask(read, serving, "the tasks reading shipments by code")
            .await
    }
}

/// Reads `batch` in one statement and answers each read; if the statement
/// fails, each read is tried alone, so each gets its own answer.
async fn serve(db: Db, batch: Vec<Read>) {
    let mut codes: Vec<&str> = batch.iter().map(|r| r.code.as_str()).collect();
    codes.sort_unstable();
    codes.dedup();
    match read(&db, &codes).await {
        Ok(found) => {
            for read in batch {
                let record = found.get(read.code.as_str()).cloned();
                let _ = read.reply.send(Ok(record));
            }
        }
        Err(_) if batch.len() > 1 => {
            for read in batch {
                let alone = read_one(&db, &read.code).await;
                let _ = read.reply.send(alone);
            }
        }
        Err(e) => {
            if let Some(read) = batch.into_iter().next() {
                let _ = read.reply.send(Err(e));
            }
        }
    }
}

/// The shipments with these codes (at most [`BATCH`], distinct), by code.
async fn read(db: &Db, codes: &[&str]) -> Result<HashMap<String, ShipmentRecord>, StoreError> {
    let query = BY_CODES.query(|sql| db.query(sql), codes)?;
    let records: Vec<ShipmentRecord> = query.fetch_all().await?;
    Ok(records.into_iter().map(|r| (r.code.clone(), r)).collect())
}

async fn read_one(db: &Db, code: &str) -> Result<Option<ShipmentRecord>, StoreError> {
    Ok(read(db, &[code]).await?.remove(code))
}
