//! The webhook pages: register, refuse, pause and resume, rotate the
//! shipment signing key, delete.

use reqwest::StatusCode;
use shipment_sdk::model::{MerchantId, WebhookId};
use shipment_testkit::{TestApp, db_tests};

use super::browser::{hidden_or_field, signed_in};

db_tests!(webhooks_are_registered_toggled_and_deleted_from_the_pages);

async fn webhooks_are_registered_toggled_and_deleted_from_the_pages(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let url = "https://127.0.0.1:9/hooks";
    let created = browser
        .submit("/webhooks", "/webhooks", &[("url", url)])
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let signing_key = hidden_or_field(&created.body, "new-signing-key");
    assert!(signing_key.starts_with("whsec_"), "{signing_key}");
    let listed = browser.get("/webhooks").await;
    assert!(listed.body.contains(url) && listed.body.contains("Active"));
    assert!(!listed.body.contains(&signing_key));

    let taken = browser
        .submit("/webhooks", "/webhooks", &[("url", url)])
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT);
    assert!(taken.body.contains("You have already registered this URL."));
    let plain = browser
        .submit(
            "/webhooks",
            "/webhooks",
            &[("url", "http://shop.example.com/h")],
        )
        .await;
    assert_eq!(plain.status, StatusCode::BAD_REQUEST);
    assert!(plain.body.contains("https"), "{}", plain.body);

    let id = app
        .store
        .webhooks(MerchantId::new(f.merchant_id))
        .await
        .unwrap()[0]
        .id;
    let off = browser
        .submit("/webhooks", &format!("/webhooks/{id}/disable"), &[])
        .await;
    assert_eq!(off.location(), "/webhooks?disabled");
    assert!(
        !app.store
            .webhook(MerchantId::new(f.merchant_id), WebhookId::new(id))
            .await
            .unwrap()
            .unwrap()
            .active
    );
    let on = browser
        .submit(
            "/webhooks",
            &format!("/webhooks/{id}/enable"),
            &[("back", "detail")],
        )
        .await;
    assert_eq!(on.location(), format!("/webhooks/{id}"));
    let detail = browser.get(&format!("/webhooks/{id}")).await;
    assert_eq!(detail.status, StatusCode::OK);
    assert!(detail.body.contains("Delivery log"));
    assert!(detail.body.contains("Active"));
    assert_eq!(
        browser.get(&format!("/webhooks/{id}?page=0")).await.status,
        StatusCode::BAD_REQUEST
    );

    let rotated = browser
        .submit("/webhooks/signing-key", "/webhooks/signing-key", &[])
        .await;
    assert_eq!(rotated.status, StatusCode::CREATED);
    assert!(hidden_or_field(&rotated.body, "new-shipment-signing-key").starts_with("whsec_"));
    assert!(
        app.store
            .shipment_signing_key(MerchantId::new(f.merchant_id))
            .await
            .unwrap()
            .is_some()
    );

    let gone = browser
        .submit(
            &format!("/webhooks/{id}/delete"),
            &format!("/webhooks/{id}/delete"),
            &[],
        )
        .await;
    assert_eq!(gone.location(), "/webhooks?deleted");
    assert!(
        app.store
            .webhooks(MerchantId::new(f.merchant_id))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        browser.get(&format!("/webhooks/{id}")).await.status,
        StatusCode::NOT_FOUND
    );
}
