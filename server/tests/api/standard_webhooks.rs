//! Standard Webhooks (standardwebhooks.com, v1) beside the seed's
//! `X-Service-Signature`, on every kind of delivery the server sends: to a
//! registered webhook and to a shipment's own `webhook_url`, a test-control
//! duplicate, a redelivery (and a redelivery of that), and a retry of a
//! row whose process died before it logged the attempt. Each verifies both
//! ways with the key as the API showed it, carries one `webhook-id` per
//! change and target, and a `webhook-timestamp` of when it was signed.

use std::time::Duration;

use axum::http::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::MerchantId;
use shipment_server::harness::{DataKey, DispatchSettings, Dispatcher};
use shipment_testkit::{Db, TestApp, db_tests, send};
use webhook_verify::standard::{Headers, ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use webhook_verify::{Scheme, Verifier, VerifyError};

use crate::receiver::{Received, Receiver, ca};
use crate::{duplicates, execute, signed_in_webhook};

db_tests!(
    config = |c| c.test_controls = true;
    every_kind_of_delivery_carries_both_schemes_and_one_id_per_change_and_target,
);

db_tests!(
    db;
    a_retry_keeps_the_webhook_id_and_is_signed_at_its_own_time,
    a_key_that_is_not_base64_still_gets_the_seeds_signature,
);

/// Checks the Standard Webhooks headers of a delivery with
/// `webhook-verify`'s [`Verifier`] and the `whsec_` key as shown, as a
/// receiver whose clock reads `now` (Unix seconds) would, with the default
/// tolerance (5 minutes, the specification's and its libraries').
pub(crate) fn standard_check(
    headers: &HeaderMap,
    body: &[u8],
    key: &str,
    now: i64,
) -> Result<(), VerifyError> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    let standard = Headers {
        id: get(ID_HEADER),
        timestamp: get(TIMESTAMP_HEADER),
        signature: get(SIGNATURE_HEADER),
    };
    Verifier::new(key).verify_standard_at(standard, body, now)
}

/// Now, in Unix seconds.
pub(crate) fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn header<'a>(r: &'a Received, name: &str) -> &'a str {
    r.headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
}

fn timestamp_of(r: &Received) -> i64 {
    header(r, TIMESTAMP_HEADER).parse().unwrap()
}

fn version_of(r: &Received) -> i64 {
    serde_json::from_slice::<Value>(&r.body).unwrap()["version"]
        .as_i64()
        .unwrap()
}

/// The outbox row an `X-Service-Delivery-Id` (`dlv_<row>_w<webhook>` or
/// `dlv_<row>_s`) names.
fn row_of(r: &Received) -> i64 {
    let id = header(r, "x-service-delivery-id");
    let row = id
        .strip_prefix("dlv_")
        .and_then(|rest| rest.split('_').next());
    row.and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a delivery id: {id}"))
}

/// Asserts that `r` verifies both ways with `key` now, and was signed
/// between `since` (Unix seconds, before the test made the change) and
/// now.
fn assert_both_verify(r: &Received, key: &str, since: i64) {
    let signature = header(r, "x-service-signature");
    assert_eq!(webhook_verify::verify(key, &r.body, signature), Ok(()));
    assert_eq!(standard_check(&r.headers, &r.body, key, unix_now()), Ok(()));
    let signed = timestamp_of(r);
    assert!(
        (since..=unix_now()).contains(&signed),
        "signed at {signed}, not between {since} and now"
    );
    assert!(header(r, SIGNATURE_HEADER).starts_with("v1,"));
}

/// What a receiver compares to tell repeats: every signed header.
fn signed_headers(r: &Received) -> [&str; 5] {
    [
        "x-service-signature",
        "x-service-delivery-id",
        ID_HEADER,
        TIMESTAMP_HEADER,
        SIGNATURE_HEADER,
    ]
    .map(|name| header(r, name))
}

/// The webhook's delivery log once it has `n` entries, newest first.
async fn log_of(app: &TestApp, token: &str, hook: i64, n: usize) -> Vec<Value> {
    for _ in 0..400 {
        let path = format!("/webhooks/{hook}/deliveries");
        let (status, log) = send(app.bearer(Method::GET, &path, token)).await;
        assert_eq!(status, StatusCode::OK, "{log}");
        let data = log["data"].as_array().unwrap();
        if data.len() >= n {
            return data.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the delivery log of webhook {hook} never reached {n} entries");
}

/// Asks for delivery `delivery` of webhook `hook` again.
async fn redeliver(app: &TestApp, token: &str, hook: i64, delivery: i64) {
    let path = format!("/webhooks/{hook}/deliveries/{delivery}/redeliver");
    let (status, body) = send(app.bearer(Method::POST, &path, token)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}

async fn every_kind_of_delivery_carries_both_schemes_and_one_id_per_change_and_target(
    app: &TestApp,
) {
    let since = unix_now();
    let hooked = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let own = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (token, hook, key) = signed_in_webhook(app, &f, &hooked.url).await;
    let path = "/webhooks/shipment-signing-key";
    let (_, signing) = send(app.bearer(Method::POST, path, &token)).await;
    let own_key = signing["signing_key"].as_str().unwrap().to_owned();
    let created = app
        .create(
            &f,
            json!({"courier_company_id": f.courier_id, "webhook_url": own.url}),
        )
        .await;
    let code = created["code"].as_str().unwrap().to_owned();

    // Version 1 to the webhook and to the shipment's own URL: one change,
    // named by its outbox row in both ids, each target with its own suffix.
    let to_hook = hooked.nth(0).await;
    let to_own = own.nth(0).await;
    assert_both_verify(&to_hook, &key, since);
    assert_both_verify(&to_own, &own_key, since);
    let change = row_of(&to_hook);
    assert_eq!(row_of(&to_own), change);
    assert_eq!(header(&to_hook, ID_HEADER), format!("msg_{change}_w{hook}"));
    assert_eq!(header(&to_own, ID_HEADER), format!("msg_{change}_s"));

    // The next change to each target is sent twice by the test controls:
    // byte for byte the same request, headers and all.
    let (status, armed) = duplicates(app, &f, 2).await;
    assert_eq!(status, StatusCode::OK, "{armed}");
    app.advance(&f, &code, "cancelled").await;
    let targets = [
        (&hooked, &key, format!("w{hook}")),
        (&own, &own_key, "s".to_owned()),
    ];
    for (receiver, key, target) in targets {
        let got = receiver.wait_for(3).await;
        let (once, twice) = (&got[1], &got[2]);
        assert_eq!(version_of(once), 2);
        assert_both_verify(once, key, since);
        assert_eq!(signed_headers(once), signed_headers(twice));
        assert_eq!(once.body, twice.body);
        // A change of its own: a webhook-id of its own.
        let next = row_of(once);
        assert_ne!(next, change);
        assert_eq!(header(once, ID_HEADER), format!("msg_{next}_{target}"));
    }

    // Version 1 redelivered to the webhook, then that redelivery
    // redelivered: new rows and delivery ids, the change's webhook-id,
    // each signed at its own time.
    let log = log_of(app, &token, hook, 2).await;
    let v1 = log.iter().find(|d| d["version"] == 1).unwrap();
    let mut asked = v1["id"].as_i64().unwrap();
    for n in [3, 4] {
        let signed_after = unix_now();
        redeliver(app, &token, hook, asked).await;
        let again = hooked.nth(n).await;
        assert_eq!(again.body, to_hook.body, "the same snapshot");
        assert_both_verify(&again, &key, signed_after);
        assert_ne!(row_of(&again), change, "a row of its own");
        assert_ne!(
            header(&again, "x-service-delivery-id"),
            header(&to_hook, "x-service-delivery-id")
        );
        assert_eq!(header(&again, ID_HEADER), format!("msg_{change}_w{hook}"));
        let log = log_of(app, &token, hook, n).await;
        assert_eq!(log[0]["redelivery_of"], asked, "{}", log[0]);
        asked = log[0]["id"].as_i64().unwrap();
    }
}

/// A server whose own dispatcher does not run, so the test drives one by
/// hand; with the data key it seals with.
async fn idle_app(db: Db) -> Option<(TestApp, DataKey)> {
    let key = DataKey::generate();
    let hex_key = key.to_hex();
    let app = TestApp::spawn_with(db, move |c| {
        c.webhooks.no_webhook_delivery = true;
        c.data_key.data_key = Some(hex_key);
    })
    .await?;
    Some((app, key))
}

/// A row sent, whose process died before the write that logs the attempt
/// and finishes the row (the database forgets both, as after that crash),
/// is sent again by the next claim: the same delivery id and `webhook-id`,
/// so the receiver drops the repeat, with a timestamp and signature of the
/// new attempt.
async fn a_retry_keeps_the_webhook_id_and_is_signed_at_its_own_time(db: Db) {
    let Some((app, data_key)) = idle_app(db).await else {
        return;
    };
    let since = unix_now();
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (_, hook, key) = signed_in_webhook(&app, &f, &receiver.url).await;
    app.create_default(&f).await;
    let settings = DispatchSettings {
        allow_private_targets: true,
        extra_roots_pem: Some(std::fs::read(&ca().pem_file).unwrap()),
        ..DispatchSettings::default()
    };
    let dispatcher = Dispatcher::new(app.store.clone(), data_key, settings).unwrap();
    assert_eq!(dispatcher.run_once().await.unwrap(), 1);
    let first = receiver.nth(0).await;
    let row = row_of(&first);

    let lost = "DELETE FROM webhook_deliveries WHERE outbox_id = $1";
    execute(&app.store, lost, row).await;
    let unfinished = "UPDATE outbox SET done_at = NULL, claimed_until = NULL WHERE id = $1";
    execute(&app.store, unfinished, row).await;
    // The retry is signed in a later second than the first attempt.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(dispatcher.run_once().await.unwrap(), 1);
    let retry = receiver.nth(1).await;

    assert_both_verify(&first, &key, since);
    assert_both_verify(&retry, &key, since);
    assert_eq!(header(&first, ID_HEADER), format!("msg_{row}_w{hook}"));
    for name in [ID_HEADER, "x-service-delivery-id", "x-service-signature"] {
        assert_eq!(header(&retry, name), header(&first, name), "{name}");
    }
    assert!(timestamp_of(&retry) > timestamp_of(&first));
    assert_ne!(
        header(&retry, SIGNATURE_HEADER),
        header(&first, SIGNATURE_HEADER)
    );
    app.stop().await;
}

/// Every key the server makes or accepts is base64; one written into the
/// database by other means (here, by hand) cannot sign Standard Webhooks,
/// and its webhook still gets the delivery with the seed's signature
/// alone, as before.
async fn a_key_that_is_not_base64_still_gets_the_seeds_signature(db: Db) {
    let data_key = DataKey::generate();
    let hex_key = data_key.to_hex();
    let Some(app) = TestApp::spawn_with(db, move |c| c.data_key.data_key = Some(hex_key)).await
    else {
        return;
    };
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let key = "whsec_not base64!";
    app.store
        .create_webhook(
            MerchantId::new(f.merchant_id),
            &receiver.url,
            &data_key.seal(key),
        )
        .await
        .unwrap();
    app.create_default(&f).await;
    let got = receiver.nth(0).await;
    let signature = header(&got, "x-service-signature");
    assert_eq!(webhook_verify::verify(key, &got.body, signature), Ok(()));
    for name in [ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER] {
        assert!(!got.headers.contains_key(name), "{name}");
    }
    // A receiver that takes the stronger scheme when its headers are
    // present verifies it with the seed's.
    let verifier = Verifier::new(key);
    assert_eq!(
        verifier.verify_strongest(&got.body, signature, Headers::default()),
        Ok(Scheme::Service)
    );
    app.stop().await;
}
