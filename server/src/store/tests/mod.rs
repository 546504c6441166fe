//! The store on real engines: the unique-constraint mapping, and what the
//! outbox captures and claims. Each check runs on SQLite, and on
//! PostgreSQL when `TEST_DATABASE_URL` names a server.

use std::mem::discriminant;

use chrono::Duration;

use super::{PoolSettings, Store, StoreError, now, unique_violation};

/// Every unique constraint: its PostgreSQL name, SQLite's `table.column`s,
/// and the variant it becomes.
fn constraints() -> [(&'static str, &'static str, StoreError); 7] {
    [
        (
            "merchants_email_key",
            "merchants.email",
            StoreError::EmailTaken,
        ),
        (
            "shipments_code_key",
            "shipments.code",
            StoreError::ShipmentCodeTaken,
        ),
        (
            "webhooks_merchant_id_url_key",
            "webhooks.merchant_id, webhooks.url",
            StoreError::WebhookUrlTaken,
        ),
        (
            "idempotency_keys_pkey",
            "idempotency_keys.merchant_id, idempotency_keys.idem_key",
            StoreError::IdempotencyKeyTaken,
        ),
        (
            "api_keys_key_digest_key",
            "api_keys.key_digest",
            StoreError::ApiKeyDigestTaken,
        ),
        (
            "courier_keys_key_digest_key",
            "courier_keys.key_digest",
            StoreError::CourierKeyDigestTaken,
        ),
        (
            "sessions_token_digest_key",
            "sessions.token_digest",
            StoreError::SessionTokenTaken,
        ),
    ]
}

fn same(got: &StoreError, expected: &StoreError) -> bool {
    discriminant(got) == discriminant(expected)
}

#[test]
fn each_unique_constraint_is_named_alike_on_both_engines() {
    for (constraint, columns, expected) in constraints() {
        let detail = "duplicate key value violates unique constraint";
        let postgres = unique_violation(Some(constraint), detail);
        let sqlite = unique_violation(None, &format!("UNIQUE constraint failed: {columns}"));
        for got in [postgres, sqlite] {
            let named = got.as_ref().is_some_and(|e| same(e, &expected));
            assert!(named, "{constraint}: {got:?}");
        }
    }
}

#[test]
fn an_unknown_unique_constraint_stays_a_database_error() {
    assert!(unique_violation(Some("outbox_pkey"), "").is_none());
    assert!(unique_violation(None, "UNIQUE constraint failed: outbox.id").is_none());
    assert!(unique_violation(None, "database is locked").is_none());
}

/// Writes every row a unique constraint guards twice, on a real database,
/// and checks the second write's error.
async fn each_duplicate_is_named(store: &Store) {
    let (merchant, courier) = shop(store).await;
    let at = now();
    let inserts = [
        "INSERT INTO merchants (name, email, password_hash, created_at) \
         VALUES ('Again', 'shop@example.com', 'x', $3)",
        "INSERT INTO shipments (code, merchant_id, courier_company_id, status, items, \
         total_fee_minor, version, created_at, updated_at) \
         VALUES ('SHP-0000-0000', $1, $2, 'assigned_to_courier', '[]', 0, 1, $3, $3)",
        "INSERT INTO webhooks (merchant_id, url, signing_key_encrypted, active, created_at) \
         VALUES ($1, 'https://example.com/hook', 'sealed', TRUE, $3)",
        "INSERT INTO idempotency_keys \
         (merchant_id, idem_key, request_digest, response_body, created_at) \
         VALUES ($1, 'key', 'digest', '{}', $3)",
        "INSERT INTO api_keys (merchant_id, name, prefix, last4, key_digest, created_at) \
         VALUES ($1, 'k', 'sk_test_', 'abcd', 'digest', $3)",
        "INSERT INTO courier_keys (courier_company_id, prefix, last4, key_digest, created_at) \
         VALUES ($2, 'ck_test_', 'abcd', 'digest', $3)",
        "INSERT INTO sessions (merchant_id, token_digest, created_at, expires_at) \
         VALUES ($1, 'digest', $3, $3)",
    ];
    for (sql, (constraint, _, expected)) in inserts.into_iter().zip(constraints()) {
        let insert = || async {
            let q = store.query(sql).bind(merchant).bind(courier).bind(at);
            q.execute().await.map_err(StoreError::from)
        };
        // The merchant is there already.
        if constraint != "merchants_email_key" {
            insert().await.unwrap();
        }
        let again = insert().await;
        let named = again.as_ref().is_err_and(|e| same(e, &expected));
        assert!(named, "{constraint}: {again:?}");
    }
}

/// A merchant and a courier company, for checks that need their ids.
async fn shop(store: &Store) -> (i64, i64) {
    let merchant = store
        .create_merchant("Shop", "shop@example.com", "x")
        .await
        .unwrap();
    let courier = store.create_courier("Swift", 1, 1, 1).await.unwrap();
    (merchant, courier)
}

/// A shipment row written directly, bypassing the create path (no count,
/// no outbox row); its id.
async fn raw_shipment(
    store: &Store,
    (merchant, courier): (i64, i64),
    code: &str,
    webhook_url: Option<&str>,
) -> i64 {
    let sql = "INSERT INTO shipments (code, merchant_id, courier_company_id, status, items, \
               total_fee_minor, webhook_url, version, created_at, updated_at) \
               VALUES ($1, $2, $3, 'assigned_to_courier', '[]', 0, $4, 1, $5, $5) \
               RETURNING id";
    let q = store.query(sql).bind(code).bind(merchant).bind(courier);
    q.bind(webhook_url).bind(now()).scalar().await.unwrap()
}

/// Runs `check` on a fresh, migrated database of each engine: SQLite in a
/// temporary directory, and PostgreSQL next to `TEST_DATABASE_URL`'s, if
/// it is set.
async fn on_each_engine(check: impl AsyncFn(&Store)) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("store.db").display());
    let store = Store::connect(&url, PoolSettings::default()).await.unwrap();
    store.migrate().await.unwrap();
    check(&store).await;
    store.close().await;
    on_postgres(PoolSettings::default(), check).await;
}

/// Runs `check` on a fresh, migrated PostgreSQL database next to
/// `TEST_DATABASE_URL`'s, with a pool of `settings`; nothing when the
/// variable is not set.
async fn on_postgres(settings: PoolSettings, check: impl AsyncFn(&Store)) {
    let Ok(admin_url) = std::env::var("TEST_DATABASE_URL") else {
        return;
    };
    let admin = sqlx::PgPool::connect(&admin_url).await.unwrap();
    let name = format!("store_{}", uuid::Uuid::new_v4().simple());
    let admin_sql = async |sql: String| {
        let sql = sqlx::AssertSqlSafe(sql);
        sqlx::raw_sql(sql).execute(&admin).await.unwrap();
    };
    admin_sql(format!("CREATE DATABASE {name}")).await;
    let mut url = url::Url::parse(&admin_url).unwrap();
    url.set_path(&name);
    let store = Store::connect(url.as_str(), settings).await.unwrap();
    store.migrate().await.unwrap();
    check(&store).await;
    store.close().await;
    admin_sql(format!("DROP DATABASE {name}")).await;
}

/// Concurrent writes through the group commit each get their own answer:
/// the writes that fail (a taken e-mail) fail alone, and every write that
/// was answered with success is in the database.
async fn each_grouped_write_is_answered_alone(store: &Store) {
    let insert: super::group_commit::Job<String, i64> = |tx, email| {
        Box::pin(async move {
            let sql = "INSERT INTO merchants (name, email, password_hash, created_at) \
                       VALUES ('Shop', $1, 'x', $2) RETURNING id";
            Ok(tx
                .query(sql)
                .bind(email.as_str())
                .bind(now())
                .scalar()
                .await?)
        })
    };
    let writes = (0..200).map(|i| {
        let store = store.clone();
        // Every tenth write takes the same e-mail: one of them wins.
        let email = if i % 10 == 0 {
            "taken@example.com".to_owned()
        } else {
            format!("shop-{i}@example.com")
        };
        tokio::spawn(async move { (email.clone(), store.write(email, insert).await) })
    });
    let mut stored = std::collections::HashSet::new();
    let mut taken = 0;
    for write in writes.collect::<Vec<_>>() {
        match write.await.unwrap() {
            (email, Ok(id)) => assert!(stored.insert((email, id))),
            (email, Err(StoreError::EmailTaken)) => {
                assert_eq!(email, "taken@example.com");
                taken += 1;
            }
            (_, Err(e)) => panic!("{e}"),
        }
    }
    assert_eq!((stored.len(), taken), (181, 19));
    let sql = "SELECT email, id FROM merchants";
    let rows: Vec<(String, i64)> = store.query(sql).fetch_all().await.unwrap();
    assert_eq!(
        rows.into_iter().collect::<std::collections::HashSet<_>>(),
        stored
    );
}

#[tokio::test]
async fn each_engine_answers_each_grouped_write_alone() {
    on_each_engine(each_grouped_write_is_answered_alone).await;
}

#[tokio::test]
async fn each_engine_reports_each_unique_constraint() {
    on_each_engine(each_duplicate_is_named).await;
}

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
        let q = store.query(outbox).bind(shipment).bind(merchant).bind(url);
        q.bind(key).bind(now()).execute().await.unwrap();
    };
    enqueue(own, Some("https://example.com/own"), Some(merchant)).await;
    enqueue(plain, None, Some(merchant)).await;
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
    let attempt = super::outbox::Attempt {
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
        .finish_outbox(&again[0], "w2", Some((&targets[0][0], &attempt)))
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
    use shipment_sdk::model::{CourierId, MerchantId, Shipment, ShipmentCode, ShipmentId};
    let (merchant, courier) = shop(store).await;
    let id = raw_shipment(store, (merchant, courier), "SHP-0000-0001", None).await;
    let shipment = |version: i64| {
        let code = ShipmentCode::parse("SHP-0000-0001").unwrap();
        let mut s = Shipment::new(
            ShipmentId::new(id),
            code,
            MerchantId::new(merchant),
            CourierId::new(courier),
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
    super::outbox::enqueue(&mut dropped, id, merchant, &shipment(1));
    drop(dropped);
    assert!(versions().await.is_empty());

    // Three statements: 64, 64 and 2 rows.
    let mut tx = store.begin().await.unwrap();
    for version in 1..=130 {
        super::outbox::enqueue(&mut tx, id, merchant, &shipment(version));
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

/// Concurrent creates without an `Idempotency-Key` are written together at
/// their group's commit: each request gets its own shipment, with its own
/// outbox row (the shipment as created, byte for byte) and its count.
async fn concurrent_creates_each_get_their_own_shipment(store: &Store) {
    use crate::domain::validation::NewShipment;
    use crate::store::shipments::Created;
    let (merchant, courier) = shop(store).await;
    let creates = (0..150).map(|i| {
        let store = store.clone();
        let new = NewShipment {
            courier_company_id: courier,
            description: Some(format!("parcel {i}")),
            weight_kg: None,
            dimensions: None,
            items: vec![format!("item {i}")],
            start_address: None,
            end_address: None,
            webhook_url: None,
        };
        tokio::spawn(async move { store.create_shipment(merchant, new, i, None).await })
    });
    let mut made = std::collections::HashMap::new();
    for create in creates.collect::<Vec<_>>() {
        let Created::New(shipment) = create.await.unwrap().unwrap() else {
            panic!("not a new shipment");
        };
        let fee_minor = shipment.total_fee.mantissa();
        assert_eq!(shipment.description, Some(format!("parcel {fee_minor}")));
        assert!(made.insert(shipment.id.get(), shipment).is_none());
    }
    assert_eq!(made.len(), 150);
    let sql = "SELECT shipment_id, payload FROM outbox";
    let rows: Vec<(i64, String)> = store.query(sql).fetch_all().await.unwrap();
    assert_eq!(rows.len(), 150);
    for (id, payload) in rows {
        assert_eq!(payload, serde_json::to_string(&made[&id]).unwrap());
    }
    let sql = "SELECT CAST(SUM(n) AS BIGINT) FROM shipment_counts_by_courier";
    assert_eq!(store.query(sql).scalar::<i64>().await.unwrap(), 150);
}

#[tokio::test]
async fn each_engine_gives_concurrent_creates_their_own_shipments() {
    on_each_engine(concurrent_creates_each_get_their_own_shipment).await;
}

#[tokio::test]
async fn each_engine_answers_concurrent_reads_by_code_each_with_its_own() {
    on_each_engine(concurrent_reads_by_code_each_get_their_own).await;
}

/// Concurrent reads by code are served in batches (`shipments::by_code`):
/// each gets the shipment with its own code, the same code read twice in
/// a batch gets it twice, and an unknown code gets nothing.
async fn concurrent_reads_by_code_each_get_their_own(store: &Store) {
    let shop = shop(store).await;
    let mut ids = std::collections::HashMap::new();
    for i in 0..100 {
        let code = format!("SHP-{i:04}-0000");
        ids.insert(code.clone(), raw_shipment(store, shop, &code, None).await);
    }
    // Every code twice, and 50 codes no shipment has, in one burst.
    let codes = (0..250).map(|i| match i {
        0..200 => format!("SHP-{:04}-0000", i % 100),
        _ => format!("SHP-{i:04}-9999"),
    });
    let reads: Vec<_> = codes
        .map(|code| {
            let store = store.clone();
            tokio::spawn(async move { (store.shipment(&code).await.unwrap(), code) })
        })
        .collect();
    for read in reads {
        let (record, code) = read.await.unwrap();
        match ids.get(&code) {
            Some(id) => assert_eq!(record.map(|r| (r.id, r.code)), Some((*id, code))),
            None => assert!(record.is_none(), "{code}"),
        }
    }
}

#[tokio::test]
async fn each_engine_reads_only_the_rows_of_a_page_not_held() {
    on_each_engine(a_page_reads_only_the_rows_not_held).await;
}

/// A page asks its caller which rows it holds at the page's version, and
/// reads only the others (`shipments::list`), newest first either way; a
/// caller that answers for fewer rows holds none of the rest.
async fn a_page_reads_only_the_rows_not_held(store: &Store) {
    use crate::domain::list_query::ListQuery;
    use crate::store::shipments::{Actor, PageRow, RowVersion};
    let shop = shop(store).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(raw_shipment(store, shop, &format!("SHP-{i:04}-0000"), None).await);
    }
    let newest_first: Vec<i64> = ids.iter().rev().copied().collect();
    let mut asked = Vec::new();
    let held = |rows: &[RowVersion]| {
        asked = rows.to_vec();
        // Every other row, and nothing said of the last.
        let answered = rows.len() - 1;
        rows[..answered]
            .iter()
            .map(|r| (r.id % 2 == 0).then_some(r.id))
            .collect()
    };
    let q = ListQuery::default();
    let (page, total) = store
        .list_shipments(Actor::Merchant(shop.0), &q, held)
        .await
        .unwrap();
    assert_eq!(total, 0, "raw rows are not counted");
    let versions: Vec<RowVersion> = newest_first
        .iter()
        .map(|&id| RowVersion { id, version: 1 })
        .collect();
    assert_eq!(asked, versions);
    let last = newest_first.len() - 1;
    for (n, (row, id)) in page.iter().zip(&newest_first).enumerate() {
        match row {
            PageRow::Held(held) => assert!(id % 2 == 0 && n < last && held == id, "{n}"),
            PageRow::Read(record) => {
                assert!(id % 2 == 1 || n == last, "{n}");
                assert_eq!(record.id, *id);
            }
        }
    }
    assert_eq!(page.len(), newest_first.len());
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
    use super::outbox::{Attempt, Target};
    let shop = shop(store).await;
    let outbox = "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, \
                  payload, webhook_url, signing_key_merchant_id, created_at) \
                  VALUES ($1, $2, 'SHP', 1, '{}', NULL, NULL, $3)";
    for i in 0..100 {
        let id = raw_shipment(store, shop, &format!("SHP-{i:04}-0000"), None).await;
        let q = store.query(outbox).bind(id).bind(shop.0).bind(now());
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
        .finish_outbox(&rows[0], "another-worker", None)
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
                    store.finish_outbox(&row, "w1", last).await
                } else {
                    // Logged alone, twice (a repeat is ignored), then
                    // finished with nothing more to log.
                    for _ in 0..2 {
                        store.record_delivery(&row, &target, &attempt).await?;
                    }
                    store.finish_outbox(&row, "w1", None).await
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
        let q = store.query(outbox).bind(id).bind(shop.0).bind(now());
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
