//! The store on real engines: the unique-constraint mapping, the group
//! commit, creates, reads by code and pages; the outbox in [`outbox`].
//! Each check runs on SQLite, and on PostgreSQL when `TEST_DATABASE_URL`
//! names a server.

use std::mem::discriminant;

use shipment_sdk::model::{CourierId, MerchantId};

use super::error::unique_violation;
use super::{PoolSettings, Store, StoreError, now};

mod delivery_health;
mod outbox;

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
            let q = store
                .query(sql)
                .bind(merchant.get())
                .bind(courier.get())
                .bind(at);
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
async fn shop(store: &Store) -> (MerchantId, CourierId) {
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
    (merchant, courier): (MerchantId, CourierId),
    code: &str,
    webhook_url: Option<&str>,
) -> i64 {
    let sql = "INSERT INTO shipments (code, merchant_id, courier_company_id, status, items, \
               total_fee_minor, webhook_url, version, created_at, updated_at) \
               VALUES ($1, $2, $3, 'assigned_to_courier', '[]', 0, $4, 1, $5, $5) \
               RETURNING id";
    let q = store
        .query(sql)
        .bind(code)
        .bind(merchant.get())
        .bind(courier.get());
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
    async fn insert(tx: &mut super::Tx, email: String) -> Result<i64, StoreError> {
        let sql = "INSERT INTO merchants (name, email, password_hash, created_at) \
                   VALUES ('Shop', $1, 'x', $2) RETURNING id";
        let q = tx.query(sql).bind(email.as_str()).bind(now());
        Ok(q.scalar().await?)
    }
    let writes = (0..200).map(|i| {
        let store = store.clone();
        // Every tenth write takes the same e-mail: one of them wins.
        let email = if i % 10 == 0 {
            "taken@example.com".to_owned()
        } else {
            format!("shop-{i}@example.com")
        };
        let written = email.clone();
        tokio::spawn(async move {
            let id = store
                .write(move |tx| Box::pin(insert(tx, written.clone())))
                .await;
            (email, id)
        })
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
        tokio::spawn(async move { store.create_shipment(merchant, new, i, None, None).await })
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

/// Concurrent reads by code are served in batches (`shipments::ByCode`):
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
    use crate::domain::actor::Actor;
    use crate::domain::list_query::{ListQuery, Listing};
    use crate::store::shipments::{PageRow, RowVersion};
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
    let q = Listing::from(ListQuery::default());
    let listed = store
        .list_shipments(Actor::Merchant(shop.0), &q, held)
        .await
        .unwrap();
    let (page, total) = (listed.rows, listed.total);
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

/// The statements sqlx logged inside a span named `traced_request`, each
/// with the spans it was logged in (innermost first), for
/// [`a_requests_span_shows_its_sql`].
mod traced {
    use std::fmt::Write as _;
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::{Event, Subscriber};
    use tracing_subscriber::layer::{Context, Layer};
    use tracing_subscriber::registry::LookupSpan;

    /// One logged statement: its text and the spans it ran in, each as
    /// `name` or `name{fields}`.
    pub(super) type Logged = (String, Vec<String>);

    #[derive(Clone, Default)]
    pub(super) struct Statements(pub(super) Arc<Mutex<Vec<Logged>>>);

    /// The statements logged in this process: SQLite's statements are
    /// logged on its connections' worker threads, which only a global
    /// subscriber sees (the worker enters the caller's span there).
    pub(super) fn statements() -> &'static Statements {
        use tracing_subscriber::layer::SubscriberExt as _;
        static STATEMENTS: std::sync::OnceLock<Statements> = std::sync::OnceLock::new();
        STATEMENTS.get_or_init(|| {
            let statements = Statements::default();
            let subscriber = tracing_subscriber::registry().with(statements.clone());
            tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
            statements
        })
    }

    struct Text(String);

    impl Visit for Text {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            let _ = write!(self.0, "{}={value:?} ", field.name());
        }
    }

    /// The fields of a span, kept in its extensions as it is made.
    struct Fields(String);

    impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Statements {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            id: &tracing::span::Id,
            ctx: Context<'_, S>,
        ) {
            let mut text = Text(String::new());
            attrs.record(&mut text);
            if let Some(span) = ctx.span(id) {
                span.extensions_mut().insert(Fields(text.0));
            }
        }

        fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
            if event.metadata().target() != "sqlx::query" {
                return;
            }
            let mut text = Text(String::new());
            event.record(&mut text);
            let spans: Vec<String> = ctx.event_scope(event).map_or_else(Vec::new, |scope| {
                scope
                    .map(|span| {
                        let fields = span.extensions().get::<Fields>().map(|f| f.0.clone());
                        format!("{}{{{}}}", span.name(), fields.unwrap_or_default().trim())
                    })
                    .collect()
            });
            if spans.iter().any(|s| s.starts_with("traced_request")) {
                self.0.lock().unwrap().push((text.0, spans));
            }
        }
    }
}

/// A request's span shows its SQL, though the group commit and the
/// batched reads run it on tasks of their own: a create's `INSERT`s (its
/// shipment's and its outbox row's, written at commit), a change's
/// `UPDATE`, and a read by code's `SELECT`.
#[tokio::test]
async fn a_requests_span_shows_its_sql() {
    use tracing::Instrument as _;

    use crate::domain::actor::Actor;
    use crate::domain::validation::NewShipment;
    use crate::store::shipments::Created;

    let statements = traced::statements();
    on_each_engine(async |store: &Store| {
        statements.0.lock().unwrap().clear();
        let (merchant, courier) = shop(store).await;
        let new = NewShipment {
            courier_company_id: courier,
            description: None,
            weight_kg: None,
            dimensions: None,
            items: Vec::new(),
            start_address: None,
            end_address: None,
            webhook_url: None,
        };
        let create = store.create_shipment(merchant, new, 100, None, None);
        let created = create
            .instrument(tracing::info_span!("traced_request", n = 1))
            .await
            .unwrap();
        let Created::New(shipment) = created else {
            panic!("not created");
        };
        let code = shipment.code.as_str().to_owned();
        let read = store.shipment(&code);
        let read = read
            .instrument(tracing::info_span!("traced_request", n = 2))
            .await;
        assert!(read.unwrap().is_some());
        let cancel = store.update_shipment(&code, Actor::Merchant(merchant), None, |s, at| {
            crate::domain::lifecycle::transition(s, crate::domain::lifecycle::Operation::Cancel, at)
        });
        let cancel = cancel
            .instrument(tracing::info_span!("traced_request", n = 3))
            .await;
        assert!(matches!(
            cancel.unwrap(),
            super::shipments::ShipmentUpdate::Done(_)
        ));
        let logged = statements.0.lock().unwrap().clone();
        for (n, statement) in [
            (1, "INSERT INTO shipments"),
            (1, "INSERT INTO outbox"),
            (2, "SELECT * FROM shipments WHERE code IN"),
            (3, "UPDATE shipments SET status"),
        ] {
            let request = format!("traced_request{{n={n}}}");
            let found = logged
                .iter()
                .any(|(text, spans)| text.contains(statement) && spans.contains(&request));
            assert!(found, "{statement} in {request}: {logged:#?}");
        }
    })
    .await;
}
