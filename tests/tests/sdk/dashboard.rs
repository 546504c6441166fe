//! The SDK's `DashboardClient` against the real reference server, on SQLite
//! and PostgreSQL: sign-in, API keys, webhooks, sign-out.

use shipment_sdk::model::ProblemCode;
use shipment_sdk::{DashboardClient, Error};
use shipment_testkit::{Fixture, TestApp, db_tests};

db_tests!(
    api_keys_are_created_verified_and_deleted,
    webhooks_are_registered_paused_and_deleted,
    sign_in_and_sign_out_guard_the_dashboard,
);

async fn login(server: &TestApp, f: &Fixture) -> DashboardClient {
    DashboardClient::login(
        &server.base,
        &f.email,
        f.password.as_deref().expect("a fixture with a login"),
    )
    .await
    .expect("the merchant signs in")
}

async fn api_keys_are_created_verified_and_deleted(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let dashboard = login(server, &f).await;
    let keys = dashboard.api_keys();

    let listed = keys.list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "e2e");
    assert_eq!(listed[0].prefix, "sk_test_");
    assert!(f.key.ends_with(&listed[0].last4));

    let created = keys.create("deploy").await.unwrap();
    assert_eq!(created.api_key.name, "deploy");
    assert!(created.key.expose().starts_with("sk_test_"));
    assert!(!format!("{created:?}").contains(created.key.expose()));
    assert_eq!(keys.list().await.unwrap().len(), 2);

    // The new key works on the API at once.
    let client = server.sdk(created.key.expose());
    assert_eq!(client.couriers().list().await.unwrap().len(), 1);

    let verdict = keys.verify(created.key.expose()).await.unwrap();
    assert!(verdict.valid);
    assert_eq!(verdict.id, Some(created.api_key.id));
    assert_eq!(verdict.name.as_deref(), Some("deploy"));
    assert!(!keys.verify("not a key at all").await.unwrap().valid);
    let other = server.fixture().await;
    assert!(
        !keys.verify(&other.key).await.unwrap().valid,
        "another merchant's key is not ours"
    );

    // Deleting it stops it at once; a second delete finds nothing.
    keys.delete(created.api_key.id).await.unwrap();
    let err = client.couriers().list().await.unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(401), Some(&ProblemCode::Unauthenticated))
    );
    let err = keys.delete(created.api_key.id).await.unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(404), Some(&ProblemCode::NotFound))
    );
    assert!(!keys.verify(created.key.expose()).await.unwrap().valid);

    // An empty name lets the server choose one.
    let unnamed = keys.create("  ").await.unwrap();
    assert!(!unnamed.api_key.name.is_empty());
}

async fn webhooks_are_registered_paused_and_deleted(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let dashboard = login(server, &f).await;
    let hooks = dashboard.webhooks();
    // The test server allows private targets; nothing listens there, and
    // nothing is delivered in this test.
    let url = "https://127.0.0.1:9/hooks";

    let created = hooks.register(url).await.unwrap();
    assert_eq!(created.webhook.url, url);
    assert!(created.webhook.active);
    assert!(created.signing_key.expose().starts_with("whsec_"));
    assert!(!format!("{created:?}").contains(created.signing_key.expose()));

    let err = hooks.register(url).await.unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(409), Some(&ProblemCode::WebhookUrlTaken))
    );
    let err = hooks
        .register("http://shop.example.com/hooks")
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.api().unwrap().field.as_deref(), Some("url"));

    let listed = hooks.list().await.unwrap();
    assert_eq!(listed, std::slice::from_ref(&created.webhook));

    let id = created.webhook.webhook_id;
    assert!(!hooks.set_active(id, false).await.unwrap().active);
    assert!(!hooks.list().await.unwrap()[0].active);
    assert!(hooks.set_active(id, true).await.unwrap().active);

    let log = hooks.deliveries(id).send().await.unwrap();
    assert_eq!((log.page, log.total, log.total_pages), (1, 0, 0));
    assert!(log.data.is_empty());
    let log = hooks.deliveries(id).page_size(5).send().await.unwrap();
    assert_eq!((log.page, log.page_size), (1, 5));

    let first = hooks.rotate_shipment_signing_key().await.unwrap();
    let second = hooks.rotate_shipment_signing_key().await.unwrap();
    assert!(first.signing_key.expose().starts_with("whsec_"));
    assert_ne!(first.signing_key, second.signing_key);

    hooks.delete(id).await.unwrap();
    assert!(hooks.list().await.unwrap().is_empty());
    let err = hooks.delete(id).await.unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(404), Some(&ProblemCode::NotFound))
    );
    let err = hooks.deliveries(id).page(1).send().await.unwrap_err();
    assert_eq!(err.status(), Some(404));
}

async fn sign_in_and_sign_out_guard_the_dashboard(server: &TestApp) {
    let f = server.fixture_with_login().await;

    let err = DashboardClient::login(&server.base, &f.email, "wrong password")
        .await
        .unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(401), Some(&ProblemCode::Unauthenticated))
    );
    assert!(!format!("{err} {err:?}").contains("wrong password"));

    let dashboard = login(server, &f).await;
    assert!(dashboard.expires_at().is_some());
    // A session can be resumed from its token, as a CLI would.
    let resumed = DashboardClient::builder()
        .base_url(&server.base)
        .token(dashboard.token().expose())
        .unwrap();
    assert_eq!(resumed.api_keys().list().await.unwrap().len(), 1);

    // An API key is not a session token.
    let with_api_key = DashboardClient::builder()
        .base_url(&server.base)
        .token(&f.key)
        .unwrap();
    let err = with_api_key.api_keys().list().await.unwrap_err();
    assert_eq!(err.status(), Some(401));

    dashboard.logout().await.unwrap();
    let err = resumed.webhooks().list().await.unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(401), Some(&ProblemCode::Unauthenticated))
    );
    assert!(matches!(err, Error::Api(_)));
}
