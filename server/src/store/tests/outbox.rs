//! The outbox on real engines: what a claim carries, rows written at
//! commit in order, the dispatcher's finishes and log rows, and claims
//! planned afresh on PostgreSQL.

use chrono::Duration;

use super::{on_each_engine, on_postgres, raw_shipment, shop};
use crate::domain::ids::EventId;
use crate::store::{PoolSettings, Store, now};

/// A claimed row carries the shipment's own URL and signing key, captured
/// at the change or, for a row written before the capture, read from the
/// shipment; a re-claim leaves out the URLs already attempted; a row
/// finished with its last attempt logged is in the log and not claimed
/// again.
async fn claims_carry_what_delivery_needs(store: &Store) {
    let (merchant, courier) = shop(store).await;
    store
        .set_shipment_signing_key(merchant, "key-1")
        .await
        .unwrap();
    let hook = store
        .create_webhook(merchant, "https://example.com/hook", "hook-key")
        .await
        .unwrap();
    let insert_shipment = async |code: &str, url: Option<&str>| {
        raw_shipment(store, (merchant, courier), code, url).await
    };
    let own = insert_shipment("SHP-0000-0001", Some("https://example.com/own")).await;
    let plain = insert_shipment("SHP-0000-0002", None).await;
    let legacy = insert_shipment("SHP-0000-0003", Some("https://example.com/legacy")).await;
    let outbox = "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, \
                  payload, webhook_url, signing_key_merchant_id, created_at) \
                  VALUES ($1, $2, 'SHP', 1, '{}', $3, $4, $5)";
    let enqueue = async |shipment: i64, url: Option<&str>, key: Option<i64>| {
        let q = store
            .query(outbox)
            .bind(shipment)
            .bind(merchant.get())
            .bind(url);
        q.bind(key).bind(now()).execute().await.unwrap();
    };
    enqueue(own, Some("https://example.com/own"), Some(merchant.get())).await;
    enqueue(plain, None, Some(merchant.get())).await;
    // Written before the outbox captured anything: nothing to go on.
    enqueue(legacy, None, None).await;

    let lease = Duration::milliseconds(1);
    let rows = store.claim_outbox("w1", lease, 10).await.unwrap();
    let got: Vec<_> = rows
        .iter()
        .map(|r| (r.webhook_url.as_deref(), r.signing_key_sealed.as_deref()))
        .collect();
    let own_url = Some("https://example.com/own");
    let legacy_url = Some("https://example.com/legacy");
    assert_eq!(
        got,
        [
            (own_url, Some("key-1")),
            (None, Some("key-1")),
            (legacy_url, Some("key-1"))
        ]
    );
    let targets = store.outbox_targets(&rows).await.unwrap();
    let urls: Vec<Vec<&str>> = targets
        .iter()
        .map(|t| t.iter().map(|t| t.url.as_str()).collect())
        .collect();
    let hook_url = "https://example.com/hook";
    assert_eq!(
        urls,
        [
            vec![hook_url, "https://example.com/own"],
            vec![hook_url],
            vec![hook_url, "https://example.com/legacy"],
        ]
    );
    assert_eq!(targets[0][0].webhook_id, Some(hook.id));
    assert_eq!(
        targets[0][0].signing_key_sealed.as_deref(),
        Some("hook-key")
    );

    // The first worker dies after one delivery of the first row; a key
    // rotated since signs what is left.
    let attempt = crate::store::outbox::Attempt {
        status_code: Some(200),
        error: None,
        duration_ms: 1,
    };
    let first = &targets[0][0];
    store
        .record_delivery(&rows[0], first, &attempt)
        .await
        .unwrap();
    store
        .set_shipment_signing_key(merchant, "key-2")
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let again = store.claim_outbox("w2", lease, 10).await.unwrap();
    assert_eq!(again.len(), 3);
    assert_eq!(again[0].attempts, 1);
    assert_eq!(again[0].signing_key_sealed.as_deref(), Some("key-2"));
    let targets = store.outbox_targets(&again).await.unwrap();
    let left: Vec<&str> = targets[0].iter().map(|t| t.url.as_str()).collect();
    assert_eq!(left, ["https://example.com/own"]);

    // The second worker finishes the row, its last attempt logged in the
    // same write: the row is done and both attempts are in the log.
    store
        .finish_outbox_logging(&again[0], "w2", Some((&targets[0][0], &attempt)))
        .await
        .unwrap();
    let logged: i64 = store
        .query("SELECT COUNT(*) FROM webhook_deliveries WHERE outbox_id = $1")
        .bind(again[0].id)
        .scalar()
        .await
        .unwrap();
    assert_eq!(logged, 2);
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let rest = store.claim_outbox("w3", lease, 10).await.unwrap();
    assert!(rest.iter().all(|r| r.id != again[0].id), "{rest:?}");
}

#[tokio::test]
async fn each_engine_claims_what_delivery_needs() {
    on_each_engine(claims_carry_what_delivery_needs).await;
}

/// Outbox rows wait for their transaction's commit and are then written in
/// the order they were enqueued, however many statements that takes; a
/// transaction that does not commit writes none.
async fn enqueued_rows_are_written_at_commit_in_order(store: &Store) {
    use shipment_sdk::model::{Shipment, ShipmentCode, ShipmentId};
    let (merchant, courier) = shop(store).await;
    let id = raw_shipment(store, (merchant, courier), "SHP-0000-0001", None).await;
    let shipment = |version: i64| {
        let code = ShipmentCode::parse("SHP-0000-0001").unwrap();
        let mut s = Shipment::new(
            ShipmentId::new(id),
            code,
            merchant,
            courier,
            crate::domain::fee::from_minor_units(0),
            now(),
        );
        s.version = version;
        s
    };
    let versions = async || {
        let sql = "SELECT version FROM outbox ORDER BY id";
        store.query(sql).scalars::<i64>().await.unwrap()
    };

    let mut dropped = store.begin().await.unwrap();
    crate::store::outbox::enqueue(&mut dropped, id, merchant.get(), &shipment(1), None);
    drop(dropped);
    assert!(versions().await.is_empty());

    // Three statements: 64, 64 and 2 rows.
    let mut tx = store.begin().await.unwrap();
    for version in 1..=130 {
        crate::store::outbox::enqueue(&mut tx, id, merchant.get(), &shipment(version), None);
    }
    assert!(versions().await.is_empty(), "written before the commit");
    tx.commit().await.unwrap();
    assert_eq!(versions().await, (1..=130).collect::<Vec<_>>());
    let sql = "SELECT payload FROM outbox ORDER BY id DESC LIMIT 1";
    let last: String = store.query(sql).scalar().await.unwrap();
    let last: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!((&last["id"], &last["version"]), (&id.into(), &130.into()));
}

#[tokio::test]
async fn each_engine_writes_enqueued_rows_at_commit_in_order() {
    on_each_engine(enqueued_rows_are_written_at_commit_in_order).await;
}

#[tokio::test]
async fn each_engine_writes_concurrent_finishes_and_their_log_rows_at_commit() {
    on_each_engine(concurrent_finishes_and_log_rows_are_all_written).await;
}

/// The dispatcher's finished rows and delivery log rows wait in their
/// transaction and are written at its commit, one statement of each kind
/// for a group (`outbox::finished`): under concurrency every finished row
/// is done and every attempt logged once, a row logged twice to one URL
/// keeps one record, and a worker that no longer holds a row cannot
/// finish it.
async fn concurrent_finishes_and_log_rows_are_all_written(store: &Store) {
    use crate::store::outbox::{Attempt, Target};
    let shop = shop(store).await;
    let outbox = "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, \
                  payload, webhook_url, signing_key_merchant_id, created_at) \
                  VALUES ($1, $2, 'SHP', 1, '{}', NULL, NULL, $3)";
    for i in 0..100 {
        let id = raw_shipment(store, shop, &format!("SHP-{i:04}-0000"), None).await;
        let q = store.query(outbox).bind(id).bind(shop.0.get()).bind(now());
        q.execute().await.unwrap();
    }
    let rows = store
        .claim_outbox("w1", Duration::minutes(5), 100)
        .await
        .unwrap();
    assert_eq!(rows.len(), 100);
    let target = Target {
        webhook_id: None,
        url: "https://example.com/own".into(),
        signing_key_sealed: None,
    };
    let attempt = Attempt {
        status_code: Some(200),
        error: None,
        duration_ms: 3,
    };
    store
        .finish_outbox_logging(&rows[0], "another-worker", None)
        .await
        .unwrap();
    let done = "SELECT COUNT(*) FROM outbox WHERE done_at IS NOT NULL";
    assert_eq!(store.query(done).scalar::<i64>().await.unwrap(), 0);

    let finishes: Vec<_> = rows
        .into_iter()
        .enumerate()
        .map(|(i, row)| {
            let (store, target, attempt) = (store.clone(), target.clone(), attempt.clone());
            tokio::spawn(async move {
                if i % 2 == 0 {
                    let last = Some((&target, &attempt));
                    store.finish_outbox_logging(&row, "w1", last).await
                } else {
                    // Logged alone, twice (a repeat is ignored), then
                    // finished with nothing more to log.
                    for _ in 0..2 {
                        store.record_delivery(&row, &target, &attempt).await?;
                    }
                    store.finish_outbox_logging(&row, "w1", None).await
                }
            })
        })
        .collect();
    for finish in finishes {
        finish.await.unwrap().unwrap();
    }
    assert_eq!(store.query(done).scalar::<i64>().await.unwrap(), 100);
    let logged = "SELECT COUNT(*), COUNT(DISTINCT outbox_id) FROM webhook_deliveries \
                  WHERE status_code = 200 AND url = 'https://example.com/own'";
    let counts: (i64, i64) = store.query(logged).fetch_one().await.unwrap();
    assert_eq!(counts, (100, 100));
}

#[tokio::test]
async fn each_engine_releases_the_rows_of_a_lost_claim() {
    on_each_engine(a_worker_releases_what_it_holds_but_delivers_not).await;
}

/// A claim whose answer was lost leaves rows held by a worker that is not
/// delivering them: released, they are claimable at once, not after the
/// lease; the rows it is delivering, and finished ones, stay as they are.
async fn a_worker_releases_what_it_holds_but_delivers_not(store: &Store) {
    let shop = shop(store).await;
    let outbox = "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, \
                  payload, webhook_url, signing_key_merchant_id, created_at) \
                  VALUES ($1, $2, 'SHP', 1, '{}', NULL, NULL, $3)";
    for i in 0..3 {
        let id = raw_shipment(store, shop, &format!("SHP-{i:04}-0009"), None).await;
        let q = store.query(outbox).bind(id).bind(shop.0.get()).bind(now());
        q.execute().await.unwrap();
    }
    let lease = Duration::minutes(5);
    let rows = store.claim_outbox("w1", lease, 10).await.unwrap();
    assert_eq!(rows.len(), 3);
    store
        .finish_outbox_logging(&rows[2], "w1", None)
        .await
        .unwrap();
    assert!(
        store
            .claim_outbox("w2", lease, 10)
            .await
            .unwrap()
            .is_empty()
    );

    let released = store
        .release_outbox("w1", &[EventId::new(rows[0].id)])
        .await
        .unwrap();
    assert_eq!(released, 1);
    let taken = store.claim_outbox("w2", lease, 10).await.unwrap();
    let ids: Vec<i64> = taken.iter().map(|r| r.id).collect();
    assert_eq!(ids, [rows[1].id]);
    assert_eq!(
        store
            .release_outbox("w1", &[EventId::new(rows[0].id)])
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn postgres_plans_each_claim_afresh() {
    let one = PoolSettings {
        max_connections: 1,
        ..PoolSettings::default()
    };
    on_postgres(one, each_claim_is_planned_afresh).await;
}

/// The dispatcher's claim is not kept prepared on PostgreSQL (so it never
/// runs on a generic plan made while the outbox was nearly empty), while
/// other statements are: on a pool of one connection, after more claims
/// than PostgreSQL takes to switch a kept statement to a generic plan, the
/// session holds no prepared claim.
async fn each_claim_is_planned_afresh(store: &Store) {
    let shop = shop(store).await;
    let outbox = "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, \
                  payload, created_at) VALUES ($1, $2, 'SHP', 1, '{}', $3)";
    for i in 0..8 {
        let id = raw_shipment(store, shop, &format!("SHP-{i:04}-0000"), None).await;
        let q = store.query(outbox).bind(id).bind(shop.0.get()).bind(now());
        q.execute().await.unwrap();
        let claimed = store.claim_outbox("w1", Duration::minutes(5), 1).await;
        assert_eq!(claimed.unwrap().len(), 1);
    }
    let prepared = "SELECT COUNT(*) FROM pg_prepared_statements WHERE statement LIKE $1";
    let count = async |like: &str| -> i64 {
        let q = store.query(prepared).bind(like.to_owned());
        q.scalar().await.unwrap()
    };
    assert_eq!(count("UPDATE outbox SET claimed_by%").await, 0);
    assert_eq!(count("INSERT INTO outbox%").await, 1, "others are kept");
}
