//! Restricted and expiring keys in a merchant's tests, on SQLite and on
//! PostgreSQL (skipped without `TEST_DATABASE_URL`): keys made by the kit,
//! and one made to expire now through the test control.

use shipment_sdk::chrono::{TimeDelta, Utc};
use shipment_sdk::model::{CreateApiKey, Permissions, ProblemCode};
use shipment_testkit::{ApiKeyFixture, Db, Fixtures, MerchantFixture, TestServer, db_tests};

db_tests!(
    db;
    a_restricted_key_made_by_the_kit_reads_and_is_refused_writes,
    a_key_expired_by_the_kit_is_refused_with_its_own_code,
    a_per_test_merchant_makes_and_expires_its_own_keys,
    restricted_and_expiring_keys_declared_in_fixtures_work_as_declared,
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

async fn restricted_and_expiring_keys_declared_in_fixtures_work_as_declared(db: Db) {
    let soon = Utc::now() + TimeDelta::days(3);
    let fixtures = Fixtures::empty()
        .courier(shipment_testkit::CourierFixture::new("Swift Couriers"))
        .merchant(
            MerchantFixture::new("Acme", "dev@acme.test")
                .courier("Swift Couriers")
                .restricted_key(Permissions::read_only())
                .api_key(ApiKeyFixture::full().expires_at(soon))
                .api_key(ApiKeyFixture::full().expires_in("30d")),
        );
    let declared = fixtures.merchants()[0].api_key_fixtures().to_vec();
    assert!(declared[1].key().starts_with("rk_test_"));
    let server = TestServer::builder()
        .database(db)
        .fixtures(fixtures)
        .start()
        .await;

    let support = server.sdk_with(declared[1].key());
    assert_eq!(support.couriers().list().await.unwrap().len(), 1);
    let me = support.current_key().await.unwrap();
    assert_eq!(
        (me.restricted, me.permissions),
        (true, Permissions::read_only())
    );
    let err = support
        .shipments()
        .create(&shipment_sdk::model::CreateShipment::new(
            support.couriers().list().await.unwrap()[0].id,
        ))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.required_permission(), Some("shipments: write"));

    let ci = server.sdk_with(declared[2].key());
    let me = ci.current_key().await.unwrap();
    assert!(!me.restricted);
    let at = me.expires_at.expect("declared with an expiry");
    assert!((at - soon).num_seconds().abs() <= 1, "{at} vs {soon}");
    assert!(ci.key_expiry_warning().is_some(), "3 days away: warned");

    let later = server
        .sdk_with(declared[3].key())
        .current_key()
        .await
        .unwrap();
    let left = later.expires_at.expect("expires_in") - Utc::now();
    assert!(
        left > TimeDelta::days(29) && left <= TimeDelta::days(30),
        "{left}"
    );
    server.stop().await;
}

#[test]
fn a_fixtures_text_declares_keys_as_strings_or_tables_and_writes_them_back() {
    let text = r#"
[[merchants]]
name = "Acme"
email = "dev@acme.test"
password = "correct horse battery staple"
api_keys = [
    "sk_test_0123456789abcdefghijABCDEFGHIJ01",
    { key = "rk_test_0123456789abcdefghijABCDEFGHIJ02", permissions = { shipments = "read", couriers = "read" } },
    { key = "sk_test_0123456789abcdefghijABCDEFGHIJ03", expires_in = "30d" },
]
"#;
    let fixtures = Fixtures::from_toml(text).unwrap();
    let merchant = &fixtures.merchants()[0];
    assert_eq!(merchant.api_key_values().len(), 3);
    let keys = merchant.api_key_fixtures();
    assert_eq!(keys[0].permissions_value(), None);
    assert_eq!(keys[1].permissions_value(), Some(&Permissions::read_only()));
    assert_eq!(fixtures.to_toml(), text, "a text is handed on as written");

    // Built in code, they are written in the same form, and read back.
    let built = Fixtures::empty().merchant(
        MerchantFixture::new("Acme", "dev@acme.test")
            .restricted_key(Permissions::read_only())
            .api_key(ApiKeyFixture::full().expires_in("12h")),
    );
    let written = built.to_toml();
    let read = Fixtures::from_toml(&written).unwrap_or_else(|e| panic!("{e}\n{written}"));
    assert_eq!(
        read.merchants()[0].api_key_fixtures(),
        built.merchants()[0].api_key_fixtures()
    );

    // A level a resource does not have is refused as the server refuses it.
    let bad = text.replace(r#"couriers = "read""#, r#"couriers = "write""#);
    let e = Fixtures::from_toml(&bad).unwrap_err();
    assert_eq!(e.lines(), [8], "{e}");
}
