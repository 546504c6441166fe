//! The kit's own promises: a spawned server answers on both databases, and
//! every database it made is gone afterwards, on the normal path and when a
//! test panics.

use reqwest::{Method, StatusCode};
use serde_json::json;
use shipment_testkit::{Db, FreshDb, TEST_DATABASE_URL, TestApp, db_tests, send};

db_tests!(a_spawned_server_answers_healthz_and_its_fixtures_work);
db_tests!(
    config = |c| c.webhooks.allow_private_webhook_targets = false;
    the_configuration_closure_runs_before_the_server_starts,
);

async fn a_spawned_server_answers_healthz_and_its_fixtures_work(app: &TestApp) {
    let (status, _) = send(app.client.get(format!("{}/healthz", app.root))).await;
    assert_eq!(status, StatusCode::OK);
    let expected = match app.db {
        Db::Sqlite => "sqlite://",
        Db::Postgres => "postgres://",
    };
    assert!(
        app.database_url.starts_with(expected),
        "{}",
        app.database_url
    );

    let f = app.fixture().await;
    assert!(f.key.starts_with("sk_test_"), "{}", f.key);
    assert!(f.courier_key.starts_with("ck_test_"), "{}", f.courier_key);
    assert_eq!(f.password, None);
    let shipment = app.create_default(&f).await;
    let code = shipment["code"].as_str().unwrap();
    let delivered = app.advance(&f, code, "delivered").await;
    assert_eq!(delivered["status"], "delivered");

    // By default a test server delivers to private addresses (receivers
    // on this machine).
    assert_eq!(register_local_webhook(app).await, StatusCode::CREATED);
}

async fn the_configuration_closure_runs_before_the_server_starts(app: &TestApp) {
    assert_eq!(register_local_webhook(app).await, StatusCode::BAD_REQUEST);
}

/// Signs in as a new merchant and registers a webhook on 127.0.0.1.
async fn register_local_webhook(app: &TestApp) -> StatusCode {
    let (email, password) = app.fixture_with_login().await.credentials();
    let token = app.login(&email, &password).await;
    let request = app
        .bearer(Method::POST, "/webhooks", &token)
        .json(&json!({"url": "https://127.0.0.1:9/hooks"}));
    send(request).await.0
}

/// Whether the PostgreSQL server of `TEST_DATABASE_URL` has a database
/// named as the last path segment of `url`.
async fn exists(admin: &sqlx::PgPool, url: &str) -> bool {
    let name = url::Url::parse(url)
        .unwrap()
        .path()
        .trim_start_matches('/')
        .to_owned();
    assert!(name.starts_with("shipments_test_"), "{name}");
    sqlx::query_scalar::<_, bool>("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(name)
        .fetch_one(admin)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_postgres_database_is_dropped_after_use_and_after_a_panic() {
    let Ok(admin_url) = std::env::var(TEST_DATABASE_URL) else {
        eprintln!("SKIPPED (PostgreSQL): {TEST_DATABASE_URL} is not set");
        return;
    };
    let admin = sqlx::PgPool::connect(&admin_url).await.unwrap();

    // Dropped explicitly, with a connection still open.
    let fresh = FreshDb::create(Db::Postgres).await.unwrap();
    let url = fresh.url.clone();
    assert!(exists(&admin, &url).await);
    let open = sqlx::PgPool::connect(&url).await.unwrap();
    fresh.drop_database().await;
    assert!(!exists(&admin, &url).await);
    drop(open);

    // Dropped by `Drop`, as when a test panics.
    let fresh = FreshDb::create(Db::Postgres).await.unwrap();
    let url = fresh.url.clone();
    drop(fresh);
    assert!(!exists(&admin, &url).await);

    // A server stopped normally, and one whose test panicked.
    let app = TestApp::spawn(Db::Postgres).await.unwrap();
    let url = app.database_url.clone();
    assert!(exists(&admin, &url).await);
    app.stop().await;
    assert!(!exists(&admin, &url).await);

    let app = TestApp::spawn(Db::Postgres).await.unwrap();
    let url = app.database_url.clone();
    let panicked = tokio::spawn(async move {
        let _app = app;
        panic!("a failing test");
    })
    .await;
    assert!(panicked.unwrap_err().is_panic());
    assert!(!exists(&admin, &url).await);
    admin.close().await;
}

#[tokio::test]
async fn a_fresh_sqlite_database_goes_with_its_directory() {
    let fresh = FreshDb::create(Db::Sqlite).await.unwrap();
    let file = std::path::PathBuf::from(fresh.url.trim_start_matches("sqlite://"));
    let dir = file.parent().unwrap().to_owned();
    assert!(dir.is_dir());
    drop(fresh);
    assert!(!dir.exists(), "{} is left behind", dir.display());
}

/// The test kit's receiver and inbox verify both signature schemes, fed by
/// hand here (no server): what the server sends is the server's tests'.
mod verifying_receiver {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use reqwest::StatusCode;
    use shipment_testkit::webhook_verify::standard::{self, ID_HEADER, TIMESTAMP_HEADER};
    use shipment_testkit::webhook_verify::{SIGNATURE_HEADER, Scheme, Verifier, VerifyError, sign};
    use shipment_testkit::{WebhookInbox, WebhookReceiver, ca};

    const KEY: &str = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
    const ID: &str = "msg_41_w7";
    /// A delivery body as the server sends it: every key present.
    const SHIPMENT: &[u8] = br#"{
  "id": 42, "code": "SHP-7K3M-Q9ZX", "merchant_id": 3, "status": "in_transit",
  "courier_company_id": 7, "assigned_driver_id": 12, "description": "Two boxes of books",
  "weight_kg": 4.5, "dimensions": null, "items": ["book"], "start_address": "52.5200,13.4050",
  "end_address": "52.3759,4.8975", "total_fee": 12.75, "webhook_url": null, "version": 4,
  "rating": null, "failure_reason": null,
  "created_at": "2026-11-21T09:30:12.123456Z",
  "assigned_to_courier_at": "2026-11-21T09:30:12.123456Z",
  "assigned_to_driver_at": "2026-11-21T09:31:02.120000Z",
  "picked_up_at": "2026-11-21T10:02:00.000000Z", "delivered_at": null, "failed_at": null,
  "returned_at": null, "cancelled_at": null, "rated_at": null,
  "updated_at": "2026-11-21T10:02:00.000000Z"
}"#;

    fn now() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    fn client() -> reqwest::Client {
        let pem = std::fs::read(&ca().pem_file).unwrap();
        reqwest::Client::builder()
            .no_proxy()
            .tls_certs_merge(reqwest::Certificate::from_pem_bundle(&pem).unwrap())
            .build()
            .unwrap()
    }

    /// Posts `SHIPMENT` signed with `X-Service-Signature`, and with the
    /// Standard Webhooks headers signed at `signed_at` when given.
    async fn post(receiver: &WebhookReceiver, signed_at: Option<i64>) -> (StatusCode, String) {
        let mut request = client()
            .post(&receiver.url)
            .header(SIGNATURE_HEADER, sign(KEY, SHIPMENT))
            .body(SHIPMENT);
        if let Some(at) = signed_at {
            request = request
                .header(ID_HEADER, ID)
                .header(TIMESTAMP_HEADER, at.to_string())
                .header(
                    standard::SIGNATURE_HEADER,
                    standard::sign(KEY, ID, at, SHIPMENT).unwrap(),
                );
        }
        let response = request.send().await.unwrap();
        (response.status(), response.text().await.unwrap())
    }

    #[tokio::test]
    async fn a_verifying_receiver_refuses_a_replay_but_records_it() {
        let receiver = WebhookReceiver::start(StatusCode::OK, Duration::ZERO).await;
        receiver.verify_with(Verifier::new(KEY));

        assert_eq!(post(&receiver, Some(now())).await.0, StatusCode::OK);
        let (status, reason) = post(&receiver, Some(now() - 360)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(reason.ends_with("refused as a possible replay"), "{reason}");
        // Without the headers: only X-Service-Signature, which passes
        // unless the verifier requires the stronger scheme.
        assert_eq!(post(&receiver, None).await.0, StatusCode::OK);
        receiver.verify_with(Verifier::new(KEY).require_standard());
        let (status, reason) = post(&receiver, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(reason, "missing webhook-id header");

        let got = receiver.wait_for(4).await;
        assert_eq!(got[0].webhook_id(), Some(ID));
        assert_eq!(got[2].webhook_id(), None);
        let verifier = Verifier::new(KEY);
        assert_eq!(got[0].verify(&verifier), Ok(Scheme::Standard));
        assert!(matches!(
            got[1].verify(&verifier),
            Err(VerifyError::TimestampTooOld { .. })
        ));
        assert_eq!(got[2].verify(&verifier), Ok(Scheme::Service));
    }

    #[tokio::test]
    async fn a_receiver_without_a_verifier_answers_its_status_to_anything() {
        let receiver = WebhookReceiver::start(StatusCode::ACCEPTED, Duration::ZERO).await;
        assert_eq!(post(&receiver, Some(0)).await.0, StatusCode::ACCEPTED);
        let got = receiver.wait_for(1).await;
        assert!(matches!(
            got[0].verify(&Verifier::new(KEY)),
            Err(VerifyError::TimestampTooOld { .. })
        ));
    }

    #[tokio::test]
    async fn a_received_x_service_signature_is_checked_even_beside_standard_headers() {
        let receiver = WebhookReceiver::start(StatusCode::OK, Duration::ZERO).await;
        let at = now();
        let response = client()
            .post(&receiver.url)
            .header(
                SIGNATURE_HEADER,
                sign("whsec_Z9aY8bX7cW6dV5eU4fT3gS2hR1iQ0jPp", SHIPMENT),
            )
            .header(ID_HEADER, ID)
            .header(TIMESTAMP_HEADER, at.to_string())
            .header(
                standard::SIGNATURE_HEADER,
                standard::sign(KEY, ID, at, SHIPMENT).unwrap(),
            )
            .body(SHIPMENT)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let got = receiver.wait_for(1).await;
        assert_eq!(
            got[0].verify(&Verifier::new(KEY)),
            Err(VerifyError::Mismatch)
        );
    }

    #[tokio::test]
    async fn the_inbox_hands_over_verified_deliveries_with_their_webhook_id() {
        let receiver = WebhookReceiver::start(StatusCode::OK, Duration::ZERO).await;
        let url = receiver.url.clone();
        let mut inbox = WebhookInbox::new(receiver, KEY);
        let client = client();
        let at = now();
        let status = client
            .post(&url)
            .header(SIGNATURE_HEADER, sign(KEY, SHIPMENT))
            .header(ID_HEADER, ID)
            .header(TIMESTAMP_HEADER, at.to_string())
            .header(
                standard::SIGNATURE_HEADER,
                standard::sign(KEY, ID, at, SHIPMENT).unwrap(),
            )
            .body(SHIPMENT)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, StatusCode::OK);
        let delivery = inbox.next().await;
        assert_eq!(delivery.shipment.code, "SHP-7K3M-Q9ZX");
        assert_eq!(delivery.webhook_id(), Some(ID));

        // The inbox's receiver refuses a delivery that fails, as a real
        // receiver would; requiring the standard headers refuses one
        // without them.
        let stale = client
            .post(&url)
            .header(SIGNATURE_HEADER, sign(KEY, SHIPMENT))
            .header(ID_HEADER, ID)
            .header(TIMESTAMP_HEADER, (at - 600).to_string())
            .header(
                standard::SIGNATURE_HEADER,
                standard::sign(KEY, ID, at - 600, SHIPMENT).unwrap(),
            )
            .body(SHIPMENT)
            .send()
            .await
            .unwrap();
        assert_eq!(stale.status(), StatusCode::UNAUTHORIZED);
        inbox.require_standard_headers(true);
        let old_style = client
            .post(&url)
            .header(SIGNATURE_HEADER, sign(KEY, SHIPMENT))
            .body(SHIPMENT)
            .send()
            .await
            .unwrap();
        assert_eq!(old_style.status(), StatusCode::UNAUTHORIZED);
        inbox.require_standard_headers(false);
        let old_style = client
            .post(&url)
            .header(SIGNATURE_HEADER, sign(KEY, SHIPMENT))
            .body(SHIPMENT)
            .send()
            .await
            .unwrap();
        assert_eq!(old_style.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn the_inbox_fails_the_test_on_a_delivery_that_does_not_verify() {
        let receiver = WebhookReceiver::start(StatusCode::OK, Duration::ZERO).await;
        let url = receiver.url.clone();
        let inbox = WebhookInbox::new(receiver, KEY);
        client()
            .post(&url)
            .header(SIGNATURE_HEADER, sign(KEY, SHIPMENT))
            .header(ID_HEADER, ID)
            .header(TIMESTAMP_HEADER, "0")
            .header(
                standard::SIGNATURE_HEADER,
                standard::sign(KEY, ID, 0, SHIPMENT).unwrap(),
            )
            .body(SHIPMENT)
            .send()
            .await
            .unwrap();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inbox.all()))
            .expect_err("a stale delivery fails the test");
        let message = panicked
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(
            message.starts_with("a delivery failed verification: webhook-timestamp is"),
            "{message}"
        );
    }
}
