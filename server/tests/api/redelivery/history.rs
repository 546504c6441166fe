//! A shipment's delivery history: the deliveries to its merchant's webhooks
//! and to its own URL, newest first, paged; what of it may be redelivered;
//! and the query checked like the other lists'.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;

use shipment_testkit::{TestApp, WAIT, assert_problem, db_tests, send};

use super::{Switchable, code_of, merchant_with_webhook, redeliver, snapshot};

db_tests!(a_shipments_history_spans_its_webhooks_and_its_own_url);

async fn a_shipments_history_spans_its_webhooks_and_its_own_url(app: &TestApp) {
    let hook_receiver = Switchable::start(200).await;
    let own_receiver = Switchable::start(500).await;
    let (f, token, hook, _) = merchant_with_webhook(app, &hook_receiver.url).await;
    let (status, _) =
        send(app.bearer(Method::POST, "/webhooks/shipment-signing-key", &token)).await;
    assert_eq!(status, StatusCode::CREATED);
    let shipment = app
        .create(
            &f,
            json!({"courier_company_id": f.courier_id, "webhook_url": own_receiver.url}),
        )
        .await;
    let code = code_of(&shipment);
    app.advance(&f, &code, "assigned_to_driver").await;
    hook_receiver.wait_for(2).await;
    own_receiver.wait_for(2).await;
    // Another shipment's deliveries are not in this one's history.
    app.create_default(&f).await;
    hook_receiver.wait_for(3).await;

    let history = |query: String| {
        let token = token.clone();
        async move {
            send(app.bearer(
                Method::GET,
                &format!("/webhooks/deliveries?{query}"),
                &token,
            ))
            .await
        }
    };
    let full = {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let (status, page) = history(format!("shipment_code={code}")).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            if page["total"] == 4 {
                break page;
            }
            assert!(tokio::time::Instant::now() < deadline, "{page}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    assert_eq!(
        (&full["page"], &full["page_size"], &full["total_pages"]),
        (&json!(1), &json!(20), &json!(1))
    );
    let rows = full["data"].as_array().unwrap();
    let ids: Vec<i64> = rows.iter().map(|d| d["id"].as_i64().unwrap()).collect();
    assert!(ids.is_sorted_by(|a, b| a > b), "newest first: {ids:?}");
    let versions: Vec<i64> = rows
        .iter()
        .map(|d| d["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, [2, 2, 1, 1]);
    for d in rows {
        assert_eq!(d["shipment_code"], code.as_str());
        assert!(d["redelivery_of"].is_null());
        if d["webhook_id"] == hook {
            assert_eq!(
                (&d["url"], &d["success"]),
                (&json!(hook_receiver.url), &json!(true))
            );
        } else {
            assert!(d["webhook_id"].is_null(), "{d}");
            assert_eq!(
                (&d["url"], &d["success"]),
                (&json!(own_receiver.url), &json!(false))
            );
        }
    }
    let (_, second) = history(format!("shipment_code={code}&page_size=1&page=2")).await;
    assert_eq!(second["data"][0]["id"], ids[1]);
    assert_eq!(second["total_pages"], 4);

    // The own URL's failures are no webhook's to redeliver; the webhook's
    // deliveries are, and the history shows the redelivery.
    let own_failure = rows.iter().find(|d| d["webhook_id"].is_null()).unwrap()["id"]
        .as_i64()
        .unwrap();
    assert_problem(
        &redeliver(app, &token, hook, own_failure).await,
        404,
        "not_found",
    );
    let hooks_v1 = rows
        .iter()
        .find(|d| d["webhook_id"] == hook && d["version"] == 1)
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        redeliver(app, &token, hook, hooks_v1).await.0,
        StatusCode::ACCEPTED
    );
    hook_receiver.wait_for(4).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let newest = loop {
        let (_, page) = history(format!("shipment_code={code}&page_size=1")).await;
        if page["total"] == 5 {
            break page["data"][0].clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        (&newest["redelivery_of"], &newest["webhook_id"]),
        (&json!(hooks_v1), &json!(hook))
    );

    // The query is checked like the other lists'.
    let missing = assert_problem(&history("page=1".into()).await, 400, "missing_field");
    assert_eq!(missing["field"], "shipment_code");
    snapshot("shipment_deliveries_without_a_code", &missing);
    for (query, code_, field) in [
        (
            "shipment_code=SHP-NOPE".to_owned(),
            "invalid_field",
            "shipment_code",
        ),
        (
            format!("shipment_code={code}&shipment_code={code}"),
            "invalid_field",
            "shipment_code",
        ),
        (
            format!("shipment_code={code}&page=0"),
            "invalid_field",
            "page",
        ),
        (
            format!("shipment_code={code}&page_size=101"),
            "invalid_field",
            "page_size",
        ),
        (
            format!("shipment_code={code}&status=failed"),
            "unknown_field",
            "status",
        ),
    ] {
        let problem = assert_problem(&history(query.clone()).await, 400, code_);
        assert_eq!(problem["field"], field, "{query}");
    }
    // Another merchant's shipment, or none at all: 404 alike.
    let stranger = app.fixture().await;
    let theirs = code_of(&app.create_default(&stranger).await);
    let other = assert_problem(
        &history(format!("shipment_code={theirs}")).await,
        404,
        "not_found",
    );
    assert!(
        other["detail"].as_str().unwrap().contains(&theirs),
        "{other}"
    );
    assert_problem(
        &history("shipment_code=SHP-0000-0000".into()).await,
        404,
        "not_found",
    );
    let got = send(app.req(
        Method::GET,
        &format!("/webhooks/deliveries?shipment_code={code}"),
        &f.key,
    ))
    .await;
    assert_problem(&got, 401, "unauthenticated");
    // The static route sits beside `/webhooks/{id}`: its other methods are
    // 405, not an id that is not a number.
    for method in [Method::PATCH, Method::DELETE, Method::POST] {
        let got = send(
            app.bearer(method.clone(), "/webhooks/deliveries", &token)
                .json(&json!({"active": true})),
        )
        .await;
        assert_problem(&got, 405, "method_not_allowed");
    }
}
