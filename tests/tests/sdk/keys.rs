//! Restricted and expiring keys through the SDK against the real reference
//! server, on SQLite and PostgreSQL: made with `create_with`, listed,
//! introspected with `current_key`, refused with the typed errors, and the
//! expiry warning as the server sends it.

use reqwest::Method;
use shipment_sdk::chrono::{TimeDelta, Utc};
use shipment_sdk::model::{Access, CreateApiKey, CreateShipment, Permissions, Resource};
use shipment_sdk::{DashboardClient, Error};
use shipment_testkit::{Fixture, TestApp, db_tests, send};

db_tests!(
    config = |c| c.test_controls = true;
    a_read_only_key_reads_and_lists_and_every_write_names_its_permission,
    a_key_warns_in_its_last_week_and_is_refused_once_expired,
);

async fn login(server: &TestApp, f: &Fixture) -> DashboardClient {
    let (email, password) = f.credentials();
    DashboardClient::login(&server.base, &email, &password)
        .await
        .expect("the merchant signs in")
}

async fn a_read_only_key_reads_and_lists_and_every_write_names_its_permission(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let dashboard = login(server, &f).await;
    let full = server.sdk(&f.key);
    let shipment = full
        .shipments()
        .create(&CreateShipment::new(f.courier_id.into()))
        .send()
        .await
        .unwrap()
        .into_inner();

    let created = dashboard
        .api_keys()
        .create_with(&CreateApiKey {
            name: Some("  support  ".into()),
            permissions: Some(Permissions::read_only()),
            expires_at: None,
        })
        .await
        .unwrap();
    assert!(created.key.expose().starts_with("rk_test_"));
    assert_eq!(created.api_key.name, "support", "the name is trimmed");
    assert_eq!(created.api_key.prefix, "rk_test_");
    assert_eq!(created.api_key.permissions, Some(Permissions::read_only()));
    let listed = dashboard.api_keys().list().await.unwrap();
    let mine = listed.iter().find(|k| k.id == created.api_key.id).unwrap();
    assert_eq!(mine.permissions, Some(Permissions::read_only()));
    assert!(!mine.expired);
    assert!(
        listed.iter().any(|k| k.permissions.is_none()),
        "the full key"
    );

    let support = server.sdk(created.key.expose());
    assert_eq!(
        support.shipments().get(&shipment.code).await.unwrap().code,
        shipment.code
    );
    assert_eq!(support.shipments().list().send().await.unwrap().total, 1);
    assert_eq!(support.couriers().list().await.unwrap().len(), 1);

    let me = support.current_key().await.unwrap();
    assert_eq!(me.id, created.api_key.id);
    assert!(me.restricted);
    assert_eq!(me.permissions, Permissions::read_only());
    assert_eq!(me.merchant_id.get(), f.merchant_id);

    for err in [
        support
            .shipments()
            .cancel(&shipment.code)
            .await
            .unwrap_err(),
        support
            .shipments()
            .rate(&shipment.code, 5)
            .await
            .unwrap_err(),
        support
            .shipments()
            .generate_confirmation_code(&shipment.code)
            .await
            .unwrap_err(),
        support
            .shipments()
            .create(&CreateShipment::new(f.courier_id.into()))
            .send()
            .await
            .unwrap_err(),
    ] {
        match &err {
            Error::InsufficientPermission { required, error } => {
                assert_eq!(required, "shipments: write");
                assert!(error.detail.as_deref().unwrap().contains("shipments: read"));
            }
            other => panic!("not InsufficientPermission: {other:?}"),
        }
        assert!(err.is_forbidden() && !err.is_retryable(), "{err}");
    }
    let err = support.listener().signing_key().await.unwrap_err();
    assert_eq!(err.required_permission(), Some("listen: read"), "{err}");
    assert_eq!(
        full.shipments().get(&shipment.code).await.unwrap().status,
        shipment.status,
        "nothing changed"
    );

    // A full key sees itself with every resource at its highest level.
    let me = full.current_key().await.unwrap();
    assert!(!me.restricted);
    assert_eq!(me.permissions, Permissions::full());
    assert!(me.permissions.allows(Resource::Testing, Access::Write));
}

async fn a_key_warns_in_its_last_week_and_is_refused_once_expired(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let dashboard = login(server, &f).await;
    let make = |days: i64| CreateApiKey {
        name: Some(format!("{days} days")),
        permissions: None,
        expires_at: Some(Utc::now() + TimeDelta::days(days)),
    };
    let soon = dashboard.api_keys().create_with(&make(3)).await.unwrap();
    let later = dashboard.api_keys().create_with(&make(30)).await.unwrap();
    assert!(
        soon.key.expose().starts_with("sk_test_"),
        "no permissions: a full key"
    );

    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let hook = seen.clone();
    let client = shipment_sdk::Client::builder()
        .api_key(soon.key.expose())
        .base_url(&server.base)
        .on_key_expiry_warning(move |w| hook.lock().unwrap().push(w.to_owned()))
        .build()
        .unwrap();
    client.couriers().list().await.unwrap();
    client.current_key().await.unwrap();
    let warnings = seen.lock().unwrap().clone();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let warning = client.key_expiry_warning().unwrap();
    assert!(warning.starts_with("this API key expires at "), "{warning}");
    assert!(
        warning.ends_with(" in 2 days") || warning.ends_with(" in 3 days"),
        "{warning}"
    );

    let quiet = server.sdk(later.key.expose());
    quiet.couriers().list().await.unwrap();
    assert_eq!(quiet.key_expiry_warning(), None, "30 days away: no warning");

    let id = soon.api_key.id.get();
    let (status, body) = send(server.req(
        Method::POST,
        &format!("/testing/api-keys/{id}/expire"),
        &f.key,
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    for err in [
        client.couriers().list().await.unwrap_err(),
        client.current_key().await.unwrap_err(),
        client.shipments().list().send().await.unwrap_err(),
    ] {
        match &err {
            Error::ApiKeyExpired { expired_at, .. } => {
                let at = expired_at.expect("X-Key-Expires-At on the refusal");
                assert!(at <= Utc::now(), "{at}");
            }
            other => panic!("not ApiKeyExpired: {other:?}"),
        }
        assert!(err.is_unauthenticated() && err.is_key_expired(), "{err}");
    }
    let listed = dashboard.api_keys().list().await.unwrap();
    assert!(
        listed
            .iter()
            .find(|k| k.id == soon.api_key.id)
            .unwrap()
            .expired
    );
    let verdict = dashboard
        .api_keys()
        .verify(soon.key.expose())
        .await
        .unwrap();
    assert!(!verdict.valid);
    assert_eq!(verdict.expired, Some(true));
}
