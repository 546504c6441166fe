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

/// The repository's example fixtures file, as a CI job would pass it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixtures_file_starts_the_server_with_its_keys() {
    let text = include_str!("../../server/fixtures/example.toml");
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
