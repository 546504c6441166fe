//! The dispatcher's side of the outbox: claims under a lease, the
//! targets of a claimed row, renewing and releasing the lease, logging
//! attempts and finishing the row (written at commit, `finished`), and the
//! backlog.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use chrono::{DateTime, Duration, Utc};

use super::finished::{Attempt, Finished, Logged};
use crate::domain::ids::EventId;
use crate::store::listen::ListenerRow;
use crate::store::{Backend, Store, StoreError, Tx, now};

/// A claimed change, with what its delivery needs.
#[derive(Debug, Clone, sqlx::FromRow)]
#[allow(missing_docs)]
pub struct OutboxRow {
    pub id: i64,
    pub shipment_id: i64,
    pub merchant_id: i64,
    pub shipment_code: String,
    pub version: i64,
    /// The shipment's JSON at that change: the delivery body, byte for byte.
    pub payload: String,
    /// The shipment's own `webhook_url` at that change, if it had one.
    pub webhook_url: Option<String>,
    /// The sealed shipment signing key that signs the delivery to
    /// `webhook_url`, when the merchant has one.
    pub signing_key_sealed: Option<String>,
    /// Deliveries already logged for this row: more than zero only when a
    /// process died before it marked the row done.
    pub attempts: i64,
    /// A redelivery goes to this webhook only (even if it is disabled now:
    /// someone asked for it); `None` for a change's own row, which goes to
    /// every target.
    pub only_webhook_id: Option<i64>,
    /// The delivery (log id) a redelivery sends again, logged with each
    /// attempt; `None` for a change's own row.
    pub redelivery_of: Option<i64>,
    /// The outbox id of the change this row delivers: its own for a
    /// change's row; for a redelivery, the change's own row (its shipment
    /// and version, not a redelivery), so that every attempt of one change
    /// to one target carries one `webhook-id` (`webhooks::message_id`).
    pub change_id: i64,
    /// The W3C `traceparent` of the request that made the change (or, for
    /// a redelivery, that asked for it), when it had one or the server
    /// exported its spans then.
    #[sqlx(default)]
    pub trace_parent: Option<String>,
    /// The change's listen position, once it was fed to listeners
    /// ([`Store::feed_listeners`]): set for a row claimed again after its
    /// process died, which listeners have had already.
    #[sqlx(default)]
    pub listen_position: Option<i64>,
}

impl OutboxRow {
    /// The delivery to the shipment's own `webhook_url`, if it had one.
    fn own_target(&self) -> Option<Target> {
        Some(Target {
            webhook_id: None,
            url: self.webhook_url.clone()?,
            signing_key_sealed: self.signing_key_sealed.clone(),
        })
    }

    /// Whether listeners are still owed this change: a change's own row
    /// (a redelivery is for one webhook) not yet given a listen position.
    fn unfed(&self) -> bool {
        self.only_webhook_id.is_none() && self.listen_position.is_none()
    }
}

/// Where one change goes.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct Target {
    /// The registered webhook, or `None` for the shipment's own `webhook_url`.
    pub webhook_id: Option<i64>,
    /// The URL to POST to.
    pub url: String,
    /// The sealed signing key, or `None` when the merchant has none (only
    /// possible for a shipment's own URL).
    pub signing_key_sealed: Option<String>,
}

/// Age and count of the rows not yet delivered.
#[derive(Debug, Clone, Copy, Default, sqlx::FromRow)]
pub struct Backlog {
    /// Rows not done.
    pub depth: i64,
    /// When the oldest of them was written.
    pub oldest: Option<DateTime<Utc>>,
}

/// The claim of [`Store::claim_outbox`], with `$lock` after the `LIMIT`
/// (the only part that differs between the engines). A row written before
/// the outbox captured its delivery (its `signing_key_merchant_id` is NULL)
/// gets its URL from the shipment here, in the same statement.
///
/// A redelivery's `change_id` is found here too: the change's own row is
/// the one of its shipment and version that repeats nothing (a change is
/// its shipment and version, `redelivery.rs` says), one probe of the
/// partial index `outbox_changes_by_shipment`, made for redeliveries only.
/// Rows are never deleted but with their merchant, so it is always there;
/// the row's own id stands in should it not be.
macro_rules! claim_sql {
    ($lock:literal) => {
        concat!(
            "UPDATE outbox SET claimed_by = $1, claimed_until = $2 WHERE id IN (",
            "SELECT o.id FROM outbox o ",
            "WHERE o.done_at IS NULL AND (o.claimed_until IS NULL OR o.claimed_until < $3) ",
            "AND o.id <= (SELECT MIN(e.id) FROM outbox e ",
            "WHERE e.shipment_id = o.shipment_id AND e.done_at IS NULL) ",
            "ORDER BY o.id LIMIT $4",
            $lock,
            ") RETURNING id, shipment_id, merchant_id, shipment_code, version, payload, ",
            "only_webhook_id, redelivery_of, trace_parent, listen_position, ",
            "CASE WHEN outbox.redelivery_of IS NULL THEN outbox.id ",
            "ELSE COALESCE((SELECT MIN(c.id) FROM outbox c ",
            "WHERE c.shipment_id = outbox.shipment_id AND c.version = outbox.version ",
            "AND c.redelivery_of IS NULL), outbox.id) END AS change_id, ",
            "CASE WHEN outbox.signing_key_merchant_id IS NULL ",
            "THEN (SELECT s.webhook_url FROM shipments s WHERE s.id = outbox.shipment_id) ",
            "ELSE outbox.webhook_url END AS webhook_url, ",
            "(SELECT k.signing_key_encrypted FROM shipment_signing_keys k WHERE k.merchant_id = ",
            "COALESCE(outbox.signing_key_merchant_id, outbox.merchant_id)) AS signing_key_sealed, ",
            "(SELECT COUNT(*) FROM webhook_deliveries d WHERE d.outbox_id = outbox.id) AS attempts",
        )
    };
}

/// Takes `$1` positions: the last one given before them is the result
/// less `$1`. Holds the one row until the transaction commits, so the
/// positions of two transactions grow in the order they commit.
const TAKE_POSITIONS: &str = "UPDATE listen_positions SET last_position = last_position + $1 \
                              RETURNING last_position";
/// Gives the rows `$2` (comma-separated ids, ascending) the positions after
/// `$1`, in that order.
const GIVE_POSITIONS_POSTGRES: &str = "UPDATE outbox o SET listen_position = $1 + t.n \
    FROM unnest(string_to_array($2, ',')::bigint[]) WITH ORDINALITY AS t(id, n) \
    WHERE o.id = t.id";
/// [`GIVE_POSITIONS_POSTGRES`] for SQLite (`json_each` counts from 0).
const GIVE_POSITIONS_SQLITE: &str = "UPDATE outbox SET listen_position = $1 + 1 + \
    (SELECT j.key FROM json_each('[' || $2 || ']') j WHERE j.value = outbox.id) \
    WHERE id IN (SELECT j.value FROM json_each('[' || $2 || ']') j)";

/// SQLite has no row locks: its claim runs in an immediate transaction.
const CLAIM_SQLITE: &str = claim_sql!("");
/// PostgreSQL skips the rows other processes are claiming.
const CLAIM_POSTGRES: &str = claim_sql!(" FOR UPDATE SKIP LOCKED");

impl Store {
    /// Claims up to `limit` rows for `worker` until now + `lease`, and
    /// commits the claim before returning, so no network call happens inside
    /// a transaction. The claim rides in a group commit (`Store::write`)
    /// with the writes of requests; on PostgreSQL it is announced to every
    /// process's listeners when it commits.
    ///
    /// Only the oldest undelivered row of each shipment is claimable, so the
    /// changes of one shipment leave in order even across processes. A row
    /// whose lease ran out (its process died) is claimable again. On
    /// PostgreSQL, `FOR UPDATE SKIP LOCKED` lets several processes claim at
    /// once without waiting on or taking each other's rows; on SQLite the
    /// claim runs in an immediate transaction, so claims are serialized.
    ///
    /// "Oldest of its shipment" is a correlated `MIN` rather than `NOT
    /// EXISTS` on purpose: PostgreSQL turns `NOT EXISTS` into an anti-join
    /// whose plan depends on statistics, and a plan cached while the outbox
    /// was small went quadratic once a burst left 20k rows waiting; the
    /// scalar subquery stays one index probe per candidate row. So are the
    /// signing key and the count of earlier attempts it returns per row.
    ///
    /// The test is written `o.id <= MIN(...)`, which means `=` here (the
    /// row is among the ones `MIN` sees), because PostgreSQL guesses an
    /// equality with a subquery to pass 0.5% of rows and an inequality a
    /// third: with `=`, during a burst whose statistics were still those of
    /// a small outbox, it ran the subquery for every waiting row and sorted
    /// them (70 ms per claim with 12k rows waiting, docs/src/appendix/benchmarks-history.md); with
    /// `<=` it walks `outbox_pending` in id order and stops at the limit.
    pub async fn claim_outbox(
        &self,
        worker: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        let worker = worker.to_owned();
        let mut rows = self
            .write(move |tx| Box::pin(claim(tx, worker.clone(), lease, limit)))
            .await?;
        rows.sort_by_key(|r| r.id);
        Ok(rows)
    }

    /// Feeds the claimed `rows` that listeners have not had to them: gives
    /// each its listen position (the stream's event id) and, on
    /// PostgreSQL, announces them to every process, in one transaction of
    /// its own that commits before this returns; returns them as listeners
    /// receive them, in position order (for this process's listeners on
    /// SQLite, where nothing is announced).
    ///
    /// Its own transaction, not the claim's: it holds the one row of
    /// `listen_positions` until it commits, so that positions grow in
    /// commit order (`store::listen` says why), and a claim rides in a
    /// group commit with other writes that may wait on row locks of their
    /// own, which could deadlock with the next claim's wait for that row.
    /// This transaction waits on nothing else, and is held for two short
    /// statements.
    ///
    /// Until this has committed, the dispatcher does not deliver `rows`:
    /// if it fails, the claim is released, and the next claim feeds them.
    pub(crate) async fn feed_listeners(
        &self,
        rows: &[OutboxRow],
    ) -> Result<Vec<ListenerRow>, StoreError> {
        let mut fed: Vec<&OutboxRow> = rows.iter().filter(|r| r.unfed()).collect();
        if fed.is_empty() {
            return Ok(Vec::new());
        }
        fed.sort_by_key(|r| r.id);
        let n = i64::try_from(fed.len()).expect("a claim is a few hundred rows");
        let ids = fed
            .iter()
            .map(|r| r.id.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let mut tx = self.begin().await?;
        let last: i64 = tx.query(TAKE_POSITIONS).bind(n).scalar().await?;
        let first = last - n + 1;
        let give = match tx.backend() {
            Backend::Sqlite => GIVE_POSITIONS_SQLITE,
            Backend::Postgres => GIVE_POSITIONS_POSTGRES,
        };
        tx.query(give)
            .bind(first - 1)
            .bind(ids.as_str())
            .execute()
            .await?;
        if tx.backend() == Backend::Postgres {
            crate::store::listen::announce_fed(&mut tx, &ids).await?;
        }
        tx.commit().await?;
        Ok((first..)
            .zip(fed)
            .map(|(position, row)| ListenerRow {
                id: row.id,
                position,
                merchant_id: row.merchant_id,
                shipment_code: row.shipment_code.clone(),
                version: row.version,
                payload: row.payload.clone(),
                trace_parent: row.trace_parent.clone(),
            })
            .collect())
    }

    /// Every place each claimed row goes, in the order of `rows`: its
    /// merchant's active webhooks, then the shipment's own `webhook_url`
    /// with the shipment signing key; less the URLs a process that died
    /// already attempted for that row, so a re-claim does not send them
    /// twice.
    ///
    /// A redelivery goes to its one webhook only, signed with that
    /// webhook's current key, whether or not the webhook is active (a
    /// person asked for it); to nothing if the webhook was deleted since,
    /// and the row is then simply finished.
    ///
    /// A merchant's webhooks are read once for the whole batch, however
    /// many of its rows the batch holds; attempted URLs only for the rarely
    /// re-claimed rows that have some.
    pub(crate) async fn outbox_targets(
        &self,
        rows: &[OutboxRow],
    ) -> Result<Vec<Vec<Target>>, StoreError> {
        let mut webhooks: HashMap<i64, Vec<Target>> = HashMap::new();
        for row in rows.iter().filter(|r| r.only_webhook_id.is_none()) {
            if let Entry::Vacant(merchant) = webhooks.entry(row.merchant_id) {
                merchant.insert(self.active_webhooks(row.merchant_id).await?);
            }
        }
        let mut targets = Vec::with_capacity(rows.len());
        for row in rows {
            let attempted = if row.attempts > 0 {
                self.attempted_urls(row.id).await?
            } else {
                Vec::new()
            };
            let all: Vec<Target> = match row.only_webhook_id {
                Some(id) => self
                    .webhook_target(row.merchant_id, id)
                    .await?
                    .into_iter()
                    .collect(),
                None => webhooks
                    .get(&row.merchant_id)
                    .into_iter()
                    .flatten()
                    .cloned()
                    .chain(row.own_target())
                    .collect(),
            };
            targets.push(
                all.into_iter()
                    .filter(|t| !attempted.contains(&t.url))
                    .collect(),
            );
        }
        Ok(targets)
    }

    /// One of the merchant's webhooks as a target, active or not.
    async fn webhook_target(
        &self,
        merchant_id: i64,
        webhook_id: i64,
    ) -> Result<Option<Target>, StoreError> {
        let sql = "SELECT id AS webhook_id, url, signing_key_encrypted AS signing_key_sealed \
                   FROM webhooks WHERE merchant_id = $1 AND id = $2";
        Ok(self
            .query(sql)
            .bind(merchant_id)
            .bind(webhook_id)
            .fetch_optional()
            .await?)
    }

    /// The merchant's active webhooks as targets, oldest first.
    async fn active_webhooks(&self, merchant_id: i64) -> Result<Vec<Target>, StoreError> {
        let sql = "SELECT id AS webhook_id, url, signing_key_encrypted AS signing_key_sealed \
                   FROM webhooks WHERE merchant_id = $1 AND active ORDER BY id";
        Ok(self.query(sql).bind(merchant_id).fetch_all().await?)
    }

    /// URLs already attempted for a row.
    async fn attempted_urls(&self, outbox_id: i64) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT url FROM webhook_deliveries WHERE outbox_id = $1";
        Ok(self.query(sql).bind(outbox_id).scalars().await?)
    }

    /// Logs one attempt, with the delivery a redelivery repeats. A second
    /// record for the same row and URL is ignored. Committed with other
    /// writes (`Store::write`). The dispatcher logs this way each attempt
    /// of a row but the last, which rides with [`Store::finish_outbox_logging`].
    pub(crate) async fn record_delivery(
        &self,
        row: &OutboxRow,
        target: &Target,
        attempt: &Attempt,
    ) -> Result<(), StoreError> {
        self.write_at_commit(logged(row, target, attempt)).await
    }

    /// Marks a row delivered, if `worker` still holds it, and logs the
    /// attempts of `unlogged` in the same write, so a row with one target
    /// costs the dispatcher one write after its claim.
    /// Committed with other writes (`Store::write`).
    ///
    /// A row's other attempts were logged as each ended
    /// ([`Store::record_delivery`]), so a process that dies while a row has
    /// deliveries in flight leaves only those unlogged, and a re-claim sends
    /// only them again (the receiver spots the repeat by its delivery id).
    ///
    /// `unlogged` holds the last attempt (none when the row had no target)
    /// and any whose own record failed (the database was unreachable for a
    /// moment). Writing it again after a
    /// failure is harmless: the row is marked done again, and an attempt
    /// logged already is not logged twice.
    pub(crate) async fn finish_outbox_logging<'a>(
        &self,
        row: &OutboxRow,
        worker: &str,
        unlogged: impl IntoIterator<Item = (&'a Target, &'a Attempt)>,
    ) -> Result<(), StoreError> {
        let finished = Finished {
            id: row.id,
            worker: worker.to_owned(),
            unlogged: unlogged
                .into_iter()
                .map(|(target, attempt)| logged(row, target, attempt))
                .collect(),
        };
        self.write_at_commit(finished).await
    }

    /// Extends `worker`'s claim on row `id` to now + `lease`; returns
    /// whether `worker` still held it (false: its lease ran out and another
    /// process took the row, or the row is done). Committed with other
    /// writes (`Store::write`).
    ///
    /// The dispatcher renews the claim of a row whose delivery outlasts a
    /// third of its lease (a slow receiver, or a wait for its turn at one),
    /// so no other process takes a row that is still being delivered.
    pub(crate) async fn renew_outbox(
        &self,
        id: EventId,
        worker: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let worker = worker.to_owned();
        self.write(move |tx| Box::pin(renew(tx, id.get(), worker.clone(), lease)))
            .await
    }

    /// Lets go of every row `worker` holds but `keep` (the rows its
    /// process is delivering), so that the next claim takes them at once;
    /// returns how many it released.
    ///
    /// For a claim whose answer was lost (the database went away as it
    /// committed): its rows are held by `worker` until their lease runs
    /// out, and with them every later change of their shipments, though
    /// nobody is delivering them. Rows a process holds are few, and this
    /// runs only after a claim failed, so they are read and released one
    /// by one.
    pub(crate) async fn release_outbox(
        &self,
        worker: &str,
        keep: &[EventId],
    ) -> Result<u32, StoreError> {
        let held: Vec<i64> = self
            .query("SELECT id FROM outbox WHERE claimed_by = $1 AND done_at IS NULL")
            .bind(worker)
            .scalars()
            .await?;
        let release = "UPDATE outbox SET claimed_until = NULL \
                       WHERE id = $1 AND claimed_by = $2 AND done_at IS NULL";
        let mut released = 0;
        for id in held
            .into_iter()
            .filter(|&id| !keep.contains(&EventId::new(id)))
        {
            let q = self.query(release).bind(id).bind(worker);
            released += u32::from(q.execute().await? == 1);
        }
        Ok(released)
    }

    /// How many rows wait, and since when (for `/metrics` and tests).
    pub async fn outbox_backlog(&self) -> Result<Backlog, StoreError> {
        let sql = "SELECT COUNT(*) AS depth, MIN(created_at) AS oldest FROM outbox \
                   WHERE done_at IS NULL";
        Ok(self.query(sql).fetch_one().await?)
    }
}

/// See [`Store::claim_outbox`].
async fn claim(
    tx: &mut Tx,
    worker: String,
    lease: Duration,
    limit: u32,
) -> Result<Vec<OutboxRow>, StoreError> {
    let backend = tx.backend();
    let at = now();
    let query = match backend {
        Backend::Sqlite => tx.query(CLAIM_SQLITE),
        // Planned each time: a generic plan cached while the outbox was
        // nearly empty scanned it whole for every candidate row once a
        // burst had filled it (a claim ran for minutes).
        Backend::Postgres => tx.query(CLAIM_POSTGRES).planned_each_time(),
    };
    let rows: Vec<OutboxRow> = query
        .bind(worker.as_str())
        .bind(at + lease)
        .bind(at)
        .bind(i64::from(limit))
        .fetch_all()
        .await?;
    Ok(rows)
}

/// See [`Store::renew_outbox`].
async fn renew(tx: &mut Tx, id: i64, worker: String, lease: Duration) -> Result<bool, StoreError> {
    let sql = "UPDATE outbox SET claimed_until = $1 \
               WHERE id = $2 AND claimed_by = $3 AND done_at IS NULL";
    let q = tx.query(sql).bind(now() + lease).bind(id);
    Ok(q.bind(worker.as_str()).execute().await? == 1)
}

/// `attempt` of delivering `row` to `target`, for the delivery log.
fn logged(row: &OutboxRow, target: &Target, attempt: &Attempt) -> Logged {
    Logged {
        outbox_id: row.id,
        webhook_id: target.webhook_id,
        merchant_id: row.merchant_id,
        url: target.url.clone(),
        shipment_code: row.shipment_code.clone(),
        version: row.version,
        redelivery_of: row.redelivery_of,
        attempt: attempt.clone(),
        at: now(),
    }
}
