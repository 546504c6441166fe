//! `TestServer` as a merchant's tests use it, on SQLite and on PostgreSQL
//! (skipped without `TEST_DATABASE_URL`): fixtures, the SDK, advance,
//! faults, duplicate deliveries and the verified webhook inbox.

use std::time::Duration;

use shipment_sdk::model::{CreateShipment, ProblemCode, Status};
use shipment_testkit::{
    CourierFixture, Db, Fault, Fixtures, MerchantFixture, TestServer, db_tests, new_signing_key,
};

db_tests!(
    db;
    the_default_fixtures_give_a_working_sdk_and_dashboard,
    fixtures_from_code_are_what_the_server_starts_with,
    advance_delivers_every_step_to_the_verified_inbox,
    a_status_fault_is_retried_by_the_sdk_and_creates_once,
    duplicate_deliveries_arrive_twice_with_one_delivery_id,
    a_refusal_at_start_names_the_fixtures_not_the_kits_copy,
    merchants_per_test_see_only_their_own_and_are_deleted,
);

async fn start(db: Db) -> TestServer {
    TestServer::builder().database(db).start().await
}

async fn the_default_fixtures_give_a_working_sdk_and_dashboard(db: Db) {
    let server = start(db).await;
    let couriers = server.sdk().couriers().list().await.unwrap();
    assert_eq!(couriers.len(), 1);
    assert_eq!(couriers[0].name, shipment_testkit::DEFAULT_COURIER);
    let keys = server.dashboard().await.api_keys().list().await.unwrap();
    assert_eq!(keys.len(), 1);
    assert!(server.api_key().ends_with(&keys[0].last4));
    server.stop().await;
}

async fn fixtures_from_code_are_what_the_server_starts_with(db: Db) {
    let key = server_key();
    let fixtures = Fixtures::empty()
        .courier(
            CourierFixture::new("Slow Couriers")
                .fees("2", "0.5", "0")
                .driver("Eli"),
        )
        .merchant(
            MerchantFixture::new("Acme", "dev@acme.test")
                .api_keys([key.clone()])
                .courier("Slow Couriers"),
        );
    let server = TestServer::builder()
        .database(db)
        .fixtures(fixtures)
        .start()
        .await;
    assert_eq!(server.api_key(), key);
    let couriers = server.sdk().couriers().list().await.unwrap();
    assert_eq!(couriers[0].name, "Slow Couriers");
    assert_eq!(couriers[0].base_fee, "2".parse().unwrap());
    let shipment = server.create_shipment().await;
    assert_eq!(shipment.total_fee, "2".parse().unwrap());
    server.stop().await;
}

async fn advance_delivers_every_step_to_the_verified_inbox(db: Db) {
    let server = start(db).await;
    let mut inbox = server.webhook_inbox().await;
    let shipment = server.create_shipment().await;
    let first = inbox.next().await;
    assert_eq!(
        (first.shipment.code.clone(), first.shipment.version),
        (shipment.code.clone(), 1)
    );

    let delivered = server.advance(&shipment.code, Status::Delivered).await;
    assert_eq!(delivered.status, Status::Delivered);
    let seen = inbox.wait_for(&shipment.code, Status::Delivered).await;
    assert_eq!(seen.shipment.version, delivered.version);
    // Every step on the way was a change of its own, delivered in order.
    let versions: Vec<i64> = inbox.all().iter().map(|d| d.shipment.version).collect();
    assert_eq!(versions, (1..=delivered.version).collect::<Vec<_>>());
    server.stop().await;
}

async fn a_status_fault_is_retried_by_the_sdk_and_creates_once(db: Db) {
    let server = start(db).await;
    let courier = server.sdk().couriers().list().await.unwrap()[0].id;
    server
        .fault(
            Fault::status("POST", "/shipments", 503)
                .retry_after(1)
                .times(1),
        )
        .await;
    // The SDK retries a 503 with the same Idempotency-Key: one shipment.
    let created = server
        .sdk()
        .shipments()
        .create(&CreateShipment::new(courier))
        .send()
        .await
        .unwrap();
    let all = server.sdk().shipments().list().send().await.unwrap();
    assert_eq!(
        (all.total, all.data[0].code.clone()),
        (1, created.code.clone())
    );

    // Without retries the fault shows as the problem it is.
    server
        .fault(Fault::status("GET", "/shipments/{code}", 429).times(1))
        .await;
    let refused = shipment_sdk::Client::builder()
        .api_key(server.api_key())
        .base_url(server.base_url())
        .max_retries(0)
        .build()
        .unwrap()
        .shipments()
        .get(&created.code)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(&ProblemCode::RateLimited));
    server.clear_faults().await;
    server.sdk().shipments().get(&created.code).await.unwrap();
    server.stop().await;
}

async fn duplicate_deliveries_arrive_twice_with_one_delivery_id(db: Db) {
    let server = start(db).await;
    let mut inbox = server.webhook_inbox().await;
    server.duplicate_deliveries(1).await;
    let shipment = server.create_shipment().await;
    let (a, b) = (inbox.next().await, inbox.next().await);
    assert_eq!(a.received.body, b.received.body);
    assert_eq!(a.delivery_id, b.delivery_id);
    assert!(!a.delivery_id.is_empty());
    // Then single deliveries again.
    server
        .advance(&shipment.code, Status::AssignedToDriver)
        .await;
    let next = inbox.next().await;
    assert_eq!(next.shipment.version, 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(inbox.all().len(), 3);
    server.stop().await;
}

fn server_key() -> String {
    // A valid staging key of the server's shape, chosen by the test.
    let secret = new_signing_key();
    format!("sk_test_{}", &secret["whsec_".len()..])
}

/// The repository's example fixtures file, as a CI job would pass it
/// (`fixtures-example.toml` links to `server/fixtures/example.toml`;
/// `cargo package` puts the file itself in the package).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixtures_file_starts_the_server_with_its_keys() {
    let text = include_str!("fixtures-example.toml");
    let server = TestServer::builder()
        .database(Db::Sqlite)
        .fixtures_toml(text)
        .start()
        .await;
    assert!(text.contains(server.api_key()));
    let couriers = server.sdk().couriers().list().await.unwrap();
    assert!(!couriers.is_empty());
    server.stop().await;
}

/// Issue 28, item 8: the kit's fixtures dropped fields they did not know,
/// so a typo (`api_key` for `api_keys`) gave a merchant without a key and
/// a confusing 401 later.
#[test]
fn a_typo_in_a_fixtures_text_is_refused_naming_its_line() {
    let text = format!(
        "[[merchants]]\nname = \"Acme\"\nemail = \"dev@acme.test\"\n\
         password = \"correct horse battery staple\"\napi_key = [\"{}\"]\n",
        server_key()
    );
    let err = Fixtures::from_toml(&text).expect_err("an unknown field is refused");
    let message = err.to_string();
    assert_eq!(
        message,
        format!(
            "{}, line 5: `merchants`: unknown field `api_key`, expected one of `name`, `email`, `password`, \
             `api_keys`, `couriers`, `shipment_signing_key`, `webhooks`",
            shipment_testkit::TOML_TEXT
        )
    );
    // In every table.
    for (from, to) in [
        ("[[merchants]]\n", "colour = 1\n[[merchants]]\n"),
        ("name = \"Acme\"", "nam = \"Acme\""),
    ] {
        let typo = text.replace("api_key =", "api_keys =").replace(from, to);
        assert!(Fixtures::from_toml(&typo).is_err(), "{typo}");
    }
    let courier = "[[couriers]]\nname = \"Swift\"\nbase_fees = 5\n";
    assert_eq!(Fixtures::from_toml(courier).unwrap_err().lines(), [3]);
    let hook = format!(
        "{}[[merchants.webhooks]]\nurl = \"https://localhost/h\"\nsigning_key = \"{}\"\nsecret = 1\n",
        text.replace("api_key =", "api_keys ="),
        new_signing_key()
    );
    assert_eq!(Fixtures::from_toml(&hook).unwrap_err().lines(), [9]);
}

/// The text of a file reaches the server as written (so its lines are the
/// server's), and a file is named in every message, never a value of it.
#[test]
fn a_fixtures_file_is_read_as_written_and_named_in_its_messages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ci.toml");
    let text = include_str!("fixtures-example.toml");
    std::fs::write(&path, text).unwrap();
    let fixtures = Fixtures::from_file(&path).unwrap();
    assert_eq!(fixtures.to_toml(), text, "comments and lines kept");
    assert_eq!(fixtures.source_name(), path.display().to_string());
    // Values of the file's types as the server reads them: fees as
    // integers and strings too.
    let fees = text
        .replace("base_fee = 5.0", "base_fee = 5")
        .replace("per_kg = 1.5", "per_kg = \"1.50\"");
    assert!(Fixtures::from_toml(&fees).is_ok());

    let leaky = text.replace(
        "[\"sk_test_llQ4cEamIu7sKZT1jElDpUseMjgse0wW\"]",
        r#""sk_test_\"LEAKME\"_rest""#,
    );
    std::fs::write(&path, leaky).unwrap();
    let message = Fixtures::from_file(&path).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}, line 22: ", path.display())),
        "{message}"
    );
    assert!(!message.contains("LEAKME"), "{message}");

    let panicked = std::panic::catch_unwind(|| TestServer::builder().fixtures_file(&path))
        .expect_err("a refused file panics");
    let shown = panic_message(&*panicked);
    assert!(
        shown.starts_with(&format!("{}, line 22: ", path.display())),
        "{shown}"
    );

    // At most 1 MiB, as the server reads it.
    std::fs::write(&path, " ".repeat(1024 * 1024 + 1)).unwrap();
    let message = Fixtures::from_file(&path).unwrap_err().to_string();
    assert!(message.contains("larger than 1 MiB"), "{message}");

    // Changed in code, they are fixtures built in code.
    let extended = Fixtures::from_toml(text)
        .unwrap()
        .courier(CourierFixture::new("Other"));
    assert_eq!(extended.source_name(), shipment_testkit::BUILT_IN_CODE);
    assert!(extended.to_toml().contains("name = \"Other\""));
    assert!(
        extended
            .to_toml()
            .contains("sk_test_llQ4cEamIu7sKZT1jElDpUseMjgse0wW")
    );
}

/// Issue 28, item 8: a refusal at start named the kit's temporary copy.
async fn a_refusal_at_start_names_the_fixtures_not_the_kits_copy(db: Db) {
    // A key of the other environment: the server refuses it at start.
    let live = server_key().replace("sk_test_", "sk_live_");
    let fixtures = Fixtures::empty()
        .merchant(MerchantFixture::new("Acme", "dev@acme.test").api_keys([live.clone()]));
    let line = fixtures
        .to_toml()
        .lines()
        .position(|l| l.contains(&live))
        .unwrap()
        + 1;
    let started = tokio::spawn(
        TestServer::builder()
            .database(db)
            .fixtures(fixtures)
            .start(),
    )
    .await;
    let panicked = match started {
        Ok(server) => {
            server.stop().await;
            panic!("started with a key of the other environment");
        }
        Err(e) => e.into_panic(),
    };
    let shown = panic_message(&*panicked);
    assert!(
        shown.starts_with(&format!(
            "fixtures built in code, line {line}: `api_keys`: a `sk_live_` key"
        )),
        "{shown}"
    );
    assert!(
        !shown.contains("fixtures.toml") && !shown.contains(&live),
        "{shown}"
    );
}

/// What a panic said.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

/// Two merchants of one server, used at once: each sees its own shipment
/// and deliveries only; the inbox's signing key verifies the real
/// deliveries as a merchant's own handler would; deleting one refuses its
/// key and leaves the other working; the root URL answers `/readyz`.
async fn merchants_per_test_see_only_their_own_and_are_deleted(db: Db) {
    use shipment_testkit::{StatusCode, reqwest};

    let server = start(db).await;
    let (mut a, mut b) = tokio::join!(server.new_merchant(), server.new_merchant());
    assert_ne!(a.id, b.id);
    assert!(a.api_key.starts_with("sk_test_") && a.courier_key.is_some());
    let create = |m: &shipment_testkit::TestMerchant| {
        let sdk = m.sdk().clone();
        let courier = m.courier_company_ids[0];
        async move {
            sdk.shipments()
                .create(&CreateShipment::new(courier))
                .send()
                .await
                .unwrap()
                .into_inner()
        }
    };
    let (sa, sb) = tokio::join!(create(&a), create(&b));
    a.advance(&sa.code, Status::InTransit).await;
    let seen = a.inbox().wait_for(&sa.code, Status::InTransit).await;
    // The merchant's own handler verifies the same bytes with the key.
    let header = seen
        .received
        .headers
        .get(webhook_verify::SIGNATURE_HEADER)
        .unwrap();
    let verifier = webhook_verify::Verifier::new(a.inbox().signing_key());
    assert_eq!(
        verifier.verify(&seen.received.body, header.as_bytes()),
        Ok(())
    );
    let first_of_b = b.inbox().next().await;
    assert_eq!(first_of_b.shipment.code, sb.code);
    // Neither sees the other's shipment.
    let list = a.sdk().shipments().list().send().await.unwrap();
    assert_eq!(list.total, 1);
    assert!(b.sdk().shipments().get(&sa.code).await.is_err());

    let ready = reqwest::get(format!("{}/readyz", server.root_url()))
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);

    let a_sdk = a.sdk().clone();
    let removed = a.delete().await;
    assert_eq!(removed["shipments"], 1);
    assert_eq!(removed["webhooks"], 1);
    assert!(a_sdk.shipments().list().send().await.is_err());
    assert_eq!(b.sdk().shipments().list().send().await.unwrap().total, 1);
    server.stop().await;
}
