//! Revoking an API key while server processes remember verified keys
//! (`app::key_cache`): the process that deleted the key refuses it at once,
//! every other process sharing the database within a second.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use shipment_server::Config;
use shipment_server::domain::sealed::DataKey;
use shipment_testkit::{Db, TestApp, send};

async fn a_key_deleted_through_one_process_is_refused_by_another_within_a_second(db: Db) {
    let data_key = DataKey::generate().to_hex();
    let key = data_key.clone();
    let Some(a) = TestApp::spawn_with(db, move |c| c.data_key.data_key = Some(key)).await else {
        return;
    };
    let mut config = Config::local(&a.database_url);
    config.data_key.data_key = Some(data_key);
    let b = crate::OtherProcess::start(&config).await;
    let b_base = b.base.clone();

    let f = a.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = a.login(&email, &password).await;
    let on = |base: &str| {
        a.client
            .get(format!("{base}/shipments"))
            .header("X-API-KEY", &f.key)
    };
    // Both processes have verified (and remember) the key.
    for base in [&a.base, &b_base] {
        for _ in 0..3 {
            assert_eq!(send(on(base)).await.0, StatusCode::OK);
        }
    }
    let (_, keys) = send(a.bearer(Method::GET, "/api-keys", &token)).await;
    let id = keys["data"][0]["id"].as_i64().unwrap();
    let (status, _) = send(a.bearer(Method::DELETE, &format!("/api-keys/{id}"), &token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let deleted = Instant::now();

    // The deleting process: at once.
    assert_eq!(send(on(&a.base)).await.0, StatusCode::UNAUTHORIZED);
    // The other: within a second.
    loop {
        let (status, _) = send(on(&b_base)).await;
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert_eq!(status, StatusCode::OK);
        assert!(
            deleted.elapsed() < Duration::from_secs(1),
            "the other process still takes the deleted key"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    b.stop().await;
    a.stop().await;
}

shipment_testkit::db_tests!(
    db;
    a_key_deleted_through_one_process_is_refused_by_another_within_a_second,
);
