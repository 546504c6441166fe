//! Restricted and expiring keys in a merchant's tests, on SQLite and on
//! PostgreSQL (skipped without `TEST_DATABASE_URL`): keys made by the kit,
//! and one made to expire now through the test control.

use shipment_sdk::chrono::{TimeDelta, Utc};
use shipment_sdk::model::{CreateApiKey, Permissions, ProblemCode};
use shipment_testkit::{Db, TestServer, db_tests};

db_tests!(
    db;
    a_restricted_key_made_by_the_kit_reads_and_is_refused_writes,
    a_key_expired_by_the_kit_is_refused_with_its_own_code,
    a_per_test_merchant_makes_and_expires_its_own_keys,
);

async fn a_restricted_key_made_by_the_kit_reads_and_is_refused_writes(db: Db) {
    let server = TestServer::builder().database(db).start().await;
    let shipment = server.create_shipment().await;
    let support = server
        .create_api_key(&CreateApiKey {
            name: Some("support".into()),
            permissions: Some(Permissions::read_only()),
            ..CreateApiKey::default()
        })
        .await;
    assert!(support.key.expose().starts_with("rk_test_"));
    let client = server.sdk_with(support.key.expose());
    assert_eq!(
        client.shipments().get(&shipment.code).await.unwrap().code,
        shipment.code
    );
    let err = client.shipments().cancel(&shipment.code).await.unwrap_err();
    assert_eq!(err.required_permission(), Some("shipments: write"), "{err}");
    assert_eq!(err.code(), Some(&ProblemCode::InsufficientPermission));
    let me = client.current_key().await.unwrap();
    assert_eq!((me.id, me.restricted), (support.api_key.id, true));
    server.stop().await;
}

async fn a_key_expired_by_the_kit_is_refused_with_its_own_code(db: Db) {
    let server = TestServer::builder().database(db).start().await;
    let ci = server
        .create_api_key(&CreateApiKey {
            name: Some("ci".into()),
            expires_at: Some(Utc::now() + TimeDelta::days(30)),
            ..CreateApiKey::default()
        })
        .await;
    let client = server.sdk_with(ci.key.expose());
    client.couriers().list().await.unwrap();
    assert_eq!(client.key_expiry_warning(), None, "30 days away");

    let listed = server.expire_api_key(ci.key.expose()).await;
    assert_eq!(listed.id, ci.api_key.id);
    assert!(listed.expired, "{listed:?}");
    let err = client.couriers().list().await.unwrap_err();
    assert!(err.is_key_expired(), "{err}");
    assert_eq!(err.code(), Some(&ProblemCode::ApiKeyExpired));
    // The first merchant's own key, which asked, still works.
    server.sdk().couriers().list().await.unwrap();
    server.stop().await;
}

async fn a_per_test_merchant_makes_and_expires_its_own_keys(db: Db) {
    let server = TestServer::builder().database(db).start().await;
    let merchant = server.new_merchant().await;
    let key = merchant
        .create_api_key(&CreateApiKey {
            permissions: Some(Permissions::none()),
            ..CreateApiKey::default()
        })
        .await;
    let client = server.sdk_with(key.key.expose());
    let me = client.current_key().await.unwrap();
    assert_eq!(me.merchant_id, merchant.id);
    assert!(
        client
            .couriers()
            .list()
            .await
            .unwrap_err()
            .required_permission()
            .is_some()
    );
    merchant.expire_api_key(key.key.expose()).await;
    assert!(client.current_key().await.unwrap_err().is_key_expired());
    merchant.delete().await;
    server.stop().await;
}
