//! The keys page: a new key is shown once, verified, and deleted; a
//! restricted, expiring key made with the form and listed as such.

use reqwest::header::CACHE_CONTROL;
use reqwest::{Method, StatusCode};
use shipment_sdk::model::MerchantId;
use shipment_testkit::{TestApp, db_tests, send};

use super::browser::{hidden_or_field, signed_in};

db_tests!(
    config = |c| c.test_controls = true;
    a_new_key_is_shown_once_verified_and_deleted,
    a_restricted_expiring_key_is_made_with_the_form_and_listed_as_such,
);

async fn a_restricted_expiring_key_is_made_with_the_form_and_listed_as_such(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    // The form offers each resource only the levels it has.
    let page = browser.get("/keys").await;
    assert!(
        page.body
            .contains(r#"<select id="key-permission-couriers""#)
    );
    let couriers = page
        .body
        .split(r#"<select id="key-permission-couriers""#)
        .nth(1)
        .unwrap()
        .split("</select>")
        .next()
        .unwrap();
    assert!(couriers.contains(r#"value="read""#) && !couriers.contains(r#"value="write""#));
    let testing = page
        .body
        .split(r#"<select id="key-permission-testing""#)
        .nth(1)
        .unwrap()
        .split("</select>")
        .next()
        .unwrap();
    assert!(testing.contains(r#"value="write""#) && !testing.contains(r#"value="read""#));
    for label in [
        "for=\"key-access\"",
        "for=\"key-expires\"",
        "for=\"key-expires-on\"",
        "<legend>",
    ] {
        assert!(page.body.contains(label), "{label}");
    }

    let made = browser
        .submit(
            "/keys",
            "/keys",
            &[
                ("name", "support desk"),
                ("access", "restricted"),
                ("permission-shipments", "read"),
                ("permission-couriers", "read"),
                ("permission-listen", "none"),
                ("permission-testing", "none"),
                ("expires", "30"),
                ("expires-on", ""),
            ],
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let key = hidden_or_field(&made.body, "new-key");
    assert!(key.starts_with("rk_test_") && key.len() == 40, "{key}");
    let (status, _) = send(app.req(Method::GET, "/shipments", &key)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(
        app.req(Method::POST, "/shipments", &key)
            .json(&serde_json::json!({"courier_company_id": f.courier_id})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // A date beyond the limit is refused on the page, naming the limit.
    let refused = browser
        .submit(
            "/keys",
            "/keys",
            &[
                ("access", "full"),
                ("expires", "date"),
                ("expires-on", "2099-01-01"),
            ],
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert!(refused.body.contains("366 days"), "{}", refused.body);

    // Listed with its permissions and expiry; once expired, marked.
    let listed = browser.get("/keys").await;
    assert!(listed.body.contains("shipments: read, couriers: read"));
    assert!(listed.body.contains("full access"), "the fixture's key");
    assert!(!listed.body.contains("badge-bad"), "nothing expired yet");
    let id = app
        .store
        .api_keys(MerchantId::new(f.merchant_id))
        .await
        .unwrap()
        .into_iter()
        .find(|k| k.name == "support desk")
        .unwrap()
        .id;
    let (status, _) = send(app.req(
        Method::POST,
        &format!("/testing/api-keys/{id}/expire"),
        &f.key,
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    let listed = browser.get("/keys").await;
    assert!(
        listed
            .body
            .contains(r#"<span class="badge badge-bad">expired</span>"#)
    );
    let verdict = browser
        .submit("/keys", "/keys/verify", &[("key", &key)])
        .await;
    assert!(
        verdict
            .body
            .contains("Expired: this is your key “support desk”"),
        "{}",
        verdict.body
    );
}

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
