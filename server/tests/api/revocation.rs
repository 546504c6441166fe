//! Revoking an API key while server processes remember verified keys
//! (`cache::keys`): the process that deleted the key refuses it at once,
//! every other process sharing the database at once on PostgreSQL (the
//! deletion is announced) and within the key cache's TTL on SQLite. And the
//! listener streams a credential opened end with it: a deleted key, a
//! signed-out or expired session.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use shipment_server::KEY_CACHE_TTL;
use shipment_testkit::{Db, TestApp, send};

async fn a_key_deleted_through_one_process_is_refused_by_another_within_a_second(db: Db) {
    let Some((a, b)) = crate::OtherProcess::beside(db, |_| {}).await else {
        return;
    };
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
    a_key_expired_through_one_process_is_refused_by_another_at_once,
);

/// The test controls' expiry of a key (`POST /testing/api-keys/{id}/expire`)
/// through process B reaches A as a deletion does: on PostgreSQL A refuses
/// the key (`api_key_expired`) at once, though it had just verified it and
/// remembers it, since the change is announced; on SQLite within the key
/// cache's TTL.
async fn a_key_expired_through_one_process_is_refused_by_another_at_once(db: Db) {
    let Some((a, b)) = crate::OtherProcess::beside(db, |c| c.test_controls = true).await else {
        return;
    };
    let f = a.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = a.login(&email, &password).await;
    let (_, made) = send(
        a.bearer(Method::POST, "/api-keys", &token)
            .json(&serde_json::json!({"permissions": {"shipments": "read"}})),
    )
    .await;
    let key = made["key"].as_str().unwrap().to_owned();
    let id = made["id"].as_i64().unwrap();
    let on_a = || a.req(Method::GET, "/shipments", &key);
    // A verifies the key afresh and then takes it from memory.
    tokio::time::sleep(KEY_CACHE_TTL).await;
    assert_eq!(send(on_a()).await.0, StatusCode::OK);
    let remembered = Instant::now();
    assert_eq!(send(on_a()).await.0, StatusCode::OK);

    let (status, body) = send(
        a.client
            .post(format!("{}/testing/api-keys/{id}/expire", b.base))
            .header("X-API-KEY", &f.key),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // B, which made the change: at once.
    let (status, body) = send(
        a.client
            .get(format!("{}/shipments", b.base))
            .header("X-API-KEY", &key),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["code"], "api_key_expired");
    let expired = Instant::now();
    let bound = match db {
        Db::Postgres => ANNOUNCED,
        _ => KEY_CACHE_TTL + Duration::from_millis(200),
    };
    loop {
        let (status, body) = send(on_a()).await;
        if status == StatusCode::UNAUTHORIZED {
            assert_eq!(body["code"], "api_key_expired", "{body}");
            break;
        }
        assert_eq!(status, StatusCode::OK);
        assert!(
            expired.elapsed() < bound,
            "A still takes the expired key {:?} after its expiry",
            expired.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if db == Db::Postgres {
        assert!(
            remembered.elapsed() < KEY_CACHE_TTL,
            "A's memory had not expired yet, so the announcement did it"
        );
    }
    b.stop().await;
    a.stop().await;
}

/// How long, on PostgreSQL, another process may take the key after its
/// deletion was answered: the deletion's announcement has to reach it,
/// which takes a few milliseconds; a bound well under [`KEY_CACHE_TTL`],
/// so that the cache's expiry cannot pass this test.
const ANNOUNCED: Duration = Duration::from_millis(200);

/// PostgreSQL: another process refuses a deleted key at once, though it
/// verified the key a moment before (and would otherwise take it for
/// [`KEY_CACHE_TTL`]): the deletion announces itself and its listener
/// relay forgets the key. The request to B is made right after the
/// deletion's answer; since the announcement travels on its own
/// connection, it may be a few milliseconds later than that answer, so B
/// is asked again until [`ANNOUNCED`] has passed (it usually refuses the
/// first request).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_deleted_through_one_process_is_refused_by_another_at_once_on_postgres() {
    let Some((a, b)) = crate::OtherProcess::beside(Db::Postgres, |_| {}).await else {
        return;
    };
    let f = a.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = a.login(&email, &password).await;
    let on_b = || {
        a.client
            .get(format!("{}/shipments", b.base))
            .header("X-API-KEY", &f.key)
    };
    let (_, keys) = send(a.bearer(Method::GET, "/api-keys", &token)).await;
    let id = keys["data"][0]["id"].as_i64().unwrap();

    // B verifies the key afresh (what it remembered before has expired), so
    // without the announcement it would take it for the whole TTL.
    assert_eq!(send(on_b()).await.0, StatusCode::OK);
    tokio::time::sleep(KEY_CACHE_TTL + Duration::from_millis(50)).await;
    assert_eq!(send(on_b()).await.0, StatusCode::OK);
    let remembered = Instant::now();
    assert_eq!(
        send(on_b()).await.0,
        StatusCode::OK,
        "B takes it from memory"
    );

    let (status, _) = send(a.bearer(Method::DELETE, &format!("/api-keys/{id}"), &token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let deleted = Instant::now();
    let mut asked = 0;
    loop {
        asked += 1;
        let (status, _) = send(on_b()).await;
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert_eq!(status, StatusCode::OK);
        assert!(
            deleted.elapsed() < ANNOUNCED,
            "B still takes the key {:?} after its deletion",
            deleted.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        remembered.elapsed() < KEY_CACHE_TTL,
        "B's memory had not expired yet, so the announcement did it ({asked} requests)"
    );
    eprintln!(
        "refused by B {:?} after the deletion, at request {asked}",
        deleted.elapsed()
    );
    b.stop().await;
    a.stop().await;
}

/// How long a stream may outlive its credential in the process that
/// revoked it (the bound), plus a margin for a loaded test machine.
const HERE: Duration = Duration::from_millis(1_000 + 500);
/// The same in another process sharing PostgreSQL, which is told of the
/// revocation by its announcement: well under `app::listen::RECHECK`
/// (1 s), the streams' own check of their credential.
const ELSEWHERE: Duration = Duration::from_millis(500);

/// Waits for `stream` to end (within `bound`), and checks that it ended
/// without an error event: the server closed it.
async fn ends_within(stream: &mut shipment_sdk::ListenerStream, bound: Duration, what: &str) {
    let started = Instant::now();
    loop {
        match tokio::time::timeout(bound.saturating_sub(started.elapsed()), stream.next()).await {
            Err(_) => panic!("the listener stream outlived {what} by {bound:?}"),
            Ok(None) => return,
            // A change that was on its way is fine; the stream must still end.
            Ok(Some(Ok(_))) => {}
            Ok(Some(Err(e))) => panic!("the stream failed instead of ending: {e}"),
        }
    }
}

/// A change made now reaches `stream` (so it is still open and fed).
async fn still_fed(
    app: &TestApp,
    f: &shipment_testkit::Fixture,
    stream: &mut shipment_sdk::ListenerStream,
) {
    let code = app.create_default(f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("a change within 10 s")
            .expect("the stream stays open")
            .expect("a well-formed change");
        if event.delivery.shipment_code == code {
            return;
        }
    }
}

async fn a_listener_stream_ends_when_its_key_is_deleted(db: Db) {
    let Some(app) = TestApp::spawn(db).await else {
        return;
    };
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let (_, keys) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    let id = keys["data"][0]["id"].as_i64().unwrap();
    // Another key of the same merchant, whose stream must go on.
    let (_, other) = send(
        app.bearer(Method::POST, "/api-keys", &token)
            .json(&serde_json::json!({"name": "kept"})),
    )
    .await;
    let kept_key = other["key"].as_str().unwrap().to_owned();

    let mut doomed = app.sdk(&f.key).listener().connect(None).await.unwrap();
    let mut kept = app.sdk(&kept_key).listener().connect(None).await.unwrap();
    still_fed(&app, &f, &mut doomed).await;

    let (status, _) = send(app.bearer(Method::DELETE, &format!("/api-keys/{id}"), &token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    ends_within(&mut doomed, HERE, "its deleted key").await;
    let with_kept_key = shipment_testkit::Fixture {
        key: kept_key.clone(),
        ..f.clone()
    };
    still_fed(&app, &with_kept_key, &mut kept).await;
    let again = app.sdk(&f.key).listener().connect(None).await;
    assert!(
        again
            .as_ref()
            .is_err_and(shipment_sdk::Error::is_unauthenticated),
        "{again:?}"
    );
    app.stop().await;
}

async fn a_listener_stream_ends_when_its_session_signs_out(db: Db) {
    let Some(app) = TestApp::spawn(db).await else {
        return;
    };
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let signed_out = app.login(&email, &password).await;
    let other = app.login(&email, &password).await;
    let session = |token: &str| {
        shipment_sdk::DashboardClient::builder()
            .base_url(&app.base)
            .token(token)
            .unwrap()
    };
    let mut doomed = session(&signed_out).listener().connect(None).await.unwrap();
    let mut kept = session(&other).listener().connect(None).await.unwrap();
    still_fed(&app, &f, &mut doomed).await;

    let (status, _) = send(app.bearer(Method::POST, "/auth/logout", &signed_out)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    ends_within(&mut doomed, HERE, "its signed-out session").await;
    still_fed(&app, &f, &mut kept).await;
    app.stop().await;
}

async fn a_listener_stream_ends_when_its_session_expires(db: Db) {
    let Some(app) = TestApp::spawn(db).await else {
        return;
    };
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let dashboard = shipment_sdk::DashboardClient::builder()
        .base_url(&app.base)
        .token(&token)
        .unwrap();
    let mut stream = dashboard.listener().connect(None).await.unwrap();
    still_fed(&app, &f, &mut stream).await;
    let expires = chrono::Utc::now() + chrono::Duration::milliseconds(300);
    crate::execute(&app.store, "UPDATE sessions SET expires_at = $1", expires).await;
    let until_expiry = (expires - chrono::Utc::now()).to_std().unwrap_or_default();
    ends_within(&mut stream, until_expiry + HERE, "its expired session").await;
    app.stop().await;
}

/// PostgreSQL (one SQLite file has one server process): a stream held by
/// one process ends at once when another process deletes its key or ends
/// its session (the deletion is announced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_stream_on_another_process_ends_when_its_credential_is_revoked() {
    let Some((a, b)) = crate::OtherProcess::beside(Db::Postgres, |_| {}).await else {
        return;
    };

    let f = a.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = a.login(&email, &password).await;
    let listened = a.login(&email, &password).await;
    let on_b = shipment_sdk::Client::builder()
        .api_key(&f.key)
        .base_url(&b.base)
        .build()
        .unwrap();
    let session_on_b = shipment_sdk::DashboardClient::builder()
        .base_url(&b.base)
        .token(&listened)
        .unwrap();
    let mut by_key = on_b.listener().connect(None).await.unwrap();
    let mut by_session = session_on_b.listener().connect(None).await.unwrap();
    still_fed(&a, &f, &mut by_key).await;

    let (_, keys) = send(a.bearer(Method::GET, "/api-keys", &token)).await;
    let id = keys["data"][0]["id"].as_i64().unwrap();
    let (status, _) = send(a.bearer(Method::DELETE, &format!("/api-keys/{id}"), &token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    ends_within(
        &mut by_key,
        ELSEWHERE,
        "its key deleted through another process",
    )
    .await;

    let (status, _) = send(a.bearer(Method::POST, "/auth/logout", &listened)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    ends_within(
        &mut by_session,
        ELSEWHERE,
        "its session ended through another process",
    )
    .await;
    b.stop().await;
    a.stop().await;
}

shipment_testkit::db_tests!(
    db;
    a_listener_stream_ends_when_its_key_is_deleted,
    a_listener_stream_ends_when_its_session_signs_out,
    a_listener_stream_ends_when_its_session_expires,
);

/// Real server processes on one PostgreSQL database (the `Cluster`
/// helper): an API key deleted through process A is refused by process B,
/// which had verified (and remembered) it a moment before, within a
/// second, 20 keys in a row. Prints the times taken (the figure in
/// `BENCHMARKS.md`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_deleted_through_one_server_process_is_refused_by_another() {
    use crate::cluster::{Cast, Cluster, NO_TAKEOVER};
    let Some(cluster) = Cluster::start(Db::Postgres, 2, NO_TAKEOVER).await else {
        return;
    };
    let cast = Cast::make(&cluster, None).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let token = cast.login(&client, cluster.base(0)).await;
    let as_session = |method: Method, path: &str| {
        client
            .request(method, format!("{}{path}", cluster.base(0)))
            .bearer_auth(&token)
    };
    let mut times = Vec::new();
    for i in 0..20 {
        let (status, made) = send(
            as_session(Method::POST, "/api-keys")
                .json(&serde_json::json!({"name": format!("k{i}")})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{made}");
        let key = made["key"].as_str().unwrap().to_owned();
        let id = made["id"].as_i64().unwrap();
        let on_b = || {
            client
                .get(format!("{}/shipments", cluster.base(1)))
                .header("X-API-KEY", &key)
        };
        assert_eq!(send(on_b()).await.0, StatusCode::OK, "B remembers the key");
        let (status, _) = send(as_session(Method::DELETE, &format!("/api-keys/{id}"))).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let deleted = Instant::now();
        loop {
            let (status, _) = send(on_b()).await;
            if status == StatusCode::UNAUTHORIZED {
                times.push(deleted.elapsed());
                break;
            }
            assert_eq!(status, StatusCode::OK);
            assert!(
                deleted.elapsed() < HERE,
                "B still takes the key {:?} after its deletion through A",
                deleted.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    let (median, max) = crate::listen_processes::median_and_max(&mut times);
    eprintln!(
        "API key deleted through A: refused by B after {median:.1} ms (median of 20), {max:.1} ms at most"
    );
    cluster.stop().await;
}
