//! A merchant's integration test, written as a merchant would with
//! `shipment-testkit`: "our checkout" hands paid orders to a courier and
//! "our receiver" keeps each shipment's latest state from signed webhooks.
//! Run with: cargo test -p examples --test merchant_integration
//!
//! The server under test is the real reference server, started in-process
//! with declared fixtures; its test controls make it fail on purpose, so the
//! test proves the checkout survives a 503 without shipping twice and the
//! receiver drops duplicate deliveries.

use std::collections::HashMap;

use shipment_sdk::Client;
use shipment_sdk::model::{CourierId, CreateShipment, Shipment, Status};
use shipment_testkit::{Fault, TestServer};
use webhook_verify::shipment::Deduplicator;

/// Our checkout: one shipment per paid order, keyed by the order number so a
/// retry (ours or the SDK's) never ships twice.
async fn ship_order(sdk: &Client, courier: CourierId, order: &str) -> Shipment {
    sdk.shipments()
        .create(&CreateShipment::new(courier).description(format!("order {order}")))
        .idempotency_key(format!("order-{order}"))
        .send()
        .await
        .expect("the order ships")
        .into_inner()
}

/// Our receiver's state: the latest status per shipment, duplicates and
/// late deliveries dropped.
#[derive(Default)]
struct Tracking {
    seen: Deduplicator,
    status: HashMap<String, Status>,
}

impl Tracking {
    fn on_delivery(&mut self, shipment: &Shipment) {
        if self.seen.accept_shipment(shipment) {
            self.status
                .insert(shipment.code.to_string(), shipment.status.clone());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paid_order_ships_once_and_its_delivery_is_tracked() {
    let server = TestServer::start().await;
    let sdk = server.sdk();
    let courier = sdk.couriers().list().await.unwrap()[0].id;
    let mut inbox = server.webhook_inbox().await;

    // The service is briefly unavailable when the order is paid.
    server
        .fault(
            Fault::status("POST", "/shipments", 503)
                .retry_after(1)
                .times(2),
        )
        .await;
    let shipment = ship_order(&sdk, courier, "10293").await;
    // Paying twice (a double click) ships nothing new.
    let again = ship_order(&sdk, courier, "10293").await;
    assert_eq!(again.code, shipment.code);
    assert_eq!(sdk.shipments().list().send().await.unwrap().total, 1);

    // Every delivery arrives twice; the receiver must not care.
    server.duplicate_deliveries(10).await;
    server.advance(&shipment.code, Status::Delivered).await;
    let mut tracking = Tracking::default();
    loop {
        let delivery = inbox.next().await;
        tracking.on_delivery(&delivery.shipment);
        if delivery.shipment.status == Status::Delivered {
            break;
        }
    }
    assert_eq!(
        tracking.status.get(shipment.code.as_str()),
        Some(&Status::Delivered)
    );
    server.stop().await;
}
