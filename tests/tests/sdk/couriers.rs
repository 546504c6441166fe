//! `client.couriers()` against the real reference server, on SQLite and
//! PostgreSQL: the linked courier companies, and only those.

use shipment_sdk::model::MerchantId;
use shipment_testkit::{TestApp, db_tests};

use crate::dec;

db_tests!(couriers_lists_the_linked_companies);

async fn couriers_lists_the_linked_companies(server: &TestApp) {
    let f = server.fixture().await;
    let client = server.sdk(&f.key);
    let couriers = client.couriers().list().await.unwrap();
    assert_eq!(couriers.len(), 1);
    let c = &couriers[0];
    assert_eq!(c.id, f.courier_id.into());
    assert_eq!(c.name, "Swift Couriers");
    assert!(c.active);
    assert_eq!(
        (c.base_fee, c.per_kg, c.per_km),
        (dec("5.00"), dec("1.50"), dec("0.10"))
    );

    // A second linked company shows up too; an unlinked one does not.
    let second = server
        .store
        .create_courier("Rapid", 300, 0, 0)
        .await
        .unwrap();
    server
        .store
        .create_courier("Unlinked", 100, 0, 0)
        .await
        .unwrap();
    server
        .store
        .link_courier(MerchantId::new(f.merchant_id), second)
        .await
        .unwrap();
    let ids: Vec<i64> = client
        .couriers()
        .list()
        .await
        .unwrap()
        .iter()
        .map(|c| c.id.get())
        .collect();
    assert_eq!(ids, [f.courier_id, second.get()]);
}
