//! The keys page: a new key is shown once, verified, and deleted.

use reqwest::header::CACHE_CONTROL;
use reqwest::{Method, StatusCode};
use shipment_sdk::model::MerchantId;
use shipment_testkit::{TestApp, db_tests, send};

use super::browser::{hidden_or_field, signed_in};

db_tests!(a_new_key_is_shown_once_verified_and_deleted);

async fn a_new_key_is_shown_once_verified_and_deleted(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let created = browser
        .submit("/keys", "/keys", &[("name", "checkout server")])
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.headers[CACHE_CONTROL], "no-store");
    let key = hidden_or_field(&created.body, "new-key");
    assert!(key.starts_with("sk_test_") && key.len() == 40, "{key}");
    assert!(created.body.contains("will not be shown again"));

    let listed = browser.get("/keys").await;
    assert!(listed.body.contains("checkout server"));
    assert!(!listed.body.contains(&key), "the key is shown only once");
    assert!(listed.body.contains(&format!("sk_test_…{}", &key[36..])));

    let verdict = browser
        .submit("/keys", "/keys/verify", &[("key", &key)])
        .await;
    assert_eq!(verdict.status, StatusCode::OK);
    assert!(
        verdict
            .body
            .contains("Valid: this is your key “checkout server”")
    );
    assert!(!verdict.body.contains(&key), "the pasted key is not echoed");
    let bogus = browser
        .submit("/keys", "/keys/verify", &[("key", "sk_test_nope")])
        .await;
    assert!(bogus.body.contains("Not valid"));

    let id = app
        .store
        .api_keys(MerchantId::new(f.merchant_id))
        .await
        .unwrap()
        .into_iter()
        .find(|k| k.name == "checkout server")
        .unwrap()
        .id;
    let confirm = browser.get(&format!("/keys/{id}/delete")).await;
    assert_eq!(confirm.status, StatusCode::OK);
    assert!(confirm.body.contains("Delete the key"));
    let (status, _) = send(app.req(Method::GET, "/merchant-couriers", &key)).await;
    assert_eq!(status, StatusCode::OK);
    let deleted = browser
        .submit(
            &format!("/keys/{id}/delete"),
            &format!("/keys/{id}/delete"),
            &[],
        )
        .await;
    assert_eq!(
        (deleted.status, deleted.location()),
        (StatusCode::SEE_OTHER, "/keys?deleted")
    );
    let (status, _) = send(app.req(Method::GET, "/merchant-couriers", &key)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let again = browser.get(&format!("/keys/{id}/delete")).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    // Another merchant's key id is not found either.
    let other = app.fixture().await;
    let theirs = app
        .store
        .api_keys(MerchantId::new(other.merchant_id))
        .await
        .unwrap()[0]
        .id;
    assert_eq!(
        browser.get(&format!("/keys/{theirs}/delete")).await.status,
        StatusCode::NOT_FOUND
    );
}
