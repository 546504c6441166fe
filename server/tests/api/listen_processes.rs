//! Listeners on several server processes sharing PostgreSQL (the
//! [`Cluster`] helper): replacing the listener signing key through one
//! process ends the streams of every other; a listener that resumes with
//! `Last-Event-ID` on another process, over and over during a burst or
//! after its own process was killed, misses no change; and a process whose
//! notification connection drops never leaves a stream open with a hole in
//! it.
//!
//! PostgreSQL only: one SQLite file has one server process, and its
//! listeners are fed by that process's own dispatcher (the single-process
//! forms of these rules are in `listen.rs`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use shipment_testkit::Db;
use tokio::sync::watch;

use crate::cluster::{Cast, Cluster, NO_TAKEOVER, TAKEOVER, burst, committed_changes, drive};
use crate::outbox_drained;

/// How long a stream on another process may go on after the listener
/// signing key was replaced: the promised second, plus a margin for a
/// loaded test machine.
const REKEYED: Duration = Duration::from_millis(1_000 + 500);

/// Every change a listener saw, and how many streams it opened.
#[derive(Default)]
struct Seen {
    changes: Mutex<HashSet<(String, i64)>>,
    streams: AtomicUsize,
}

impl Seen {
    fn missing(&self, committed: &[(String, i64)]) -> Vec<(String, i64)> {
        let seen = self.changes.lock().unwrap();
        committed
            .iter()
            .filter(|c| !seen.contains(*c))
            .cloned()
            .collect()
    }
}

/// A listener as `shipctl listen` is one: it connects to the processes in
/// turn, and when a stream ends (or, with `every`, after that long) it
/// connects to the next, resuming after the last event it got. Runs until
/// `stop` turns true.
async fn listener(
    bases: Vec<String>,
    key: String,
    every: Option<Duration>,
    seen: Arc<Seen>,
    mut stop: watch::Receiver<bool>,
) {
    let mut last: Option<i64> = None;
    for i in 0.. {
        if *stop.borrow() {
            return;
        }
        let sdk = shipment_sdk::Client::builder()
            .api_key(&key)
            .base_url(&bases[i % bases.len()])
            .build()
            .unwrap();
        let mut stream = match sdk.listener().connect(last).await {
            Ok(stream) => stream,
            Err(e) => {
                eprintln!("listener: cannot connect ({e}); again");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        seen.streams.fetch_add(1, Ordering::SeqCst);
        let until = every.map(|d| tokio::time::Instant::now() + d);
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                () = async {
                    match until {
                        Some(until) => tokio::time::sleep_until(until).await,
                        None => std::future::pending().await,
                    }
                } => break,
                _ = stop.changed() => break,
            };
            match event {
                Some(Ok(event)) => {
                    let body: Value = serde_json::from_str(&event.delivery.body).unwrap();
                    assert_eq!(body["version"], event.delivery.version);
                    seen.changes
                        .lock()
                        .unwrap()
                        .insert((event.delivery.shipment_code.clone(), event.delivery.version));
                }
                Some(Err(e)) => {
                    eprintln!("listener: the stream broke off ({e})");
                    break;
                }
                None => break,
            }
        }
        last = stream.last_event_id().or(last);
    }
}

/// Waits (up to 30 s) until `seen` holds every change the database holds;
/// panics naming the ones missing.
async fn everything_seen(cluster: &Cluster, seen: &Seen) {
    outbox_drained(&cluster.store, Duration::from_secs(60)).await;
    let committed = committed_changes(&cluster.store).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let missing = seen.missing(&committed);
        if missing.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the listener never got {} of {} changes: {:?}",
            missing.len(),
            committed.len(),
            &missing[..missing.len().min(10)]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The median and the largest of `times`, in ms.
pub(crate) fn median_and_max(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(times[times.len() / 2]), ms(times[times.len() - 1]))
}

/// A listener stream held by process B ends within a second of the
/// listener signing key being replaced through process A, 20 times in a
/// row; the next stream on B has the new key. Prints the times taken
/// (the figure in `BENCHMARKS.md`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replacing_the_listener_key_through_one_process_ends_streams_on_another() {
    let Some(cluster) = Cluster::start(Db::Postgres, 2, NO_TAKEOVER).await else {
        return;
    };
    let cast = Cast::make(&cluster, None).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let on_b = cluster.sdk(1, &cast.key);
    let mut times = Vec::new();
    for _ in 0..20 {
        let mut stream = on_b.listener().connect(None).await.unwrap();
        let old = stream.signing_key().signing_key.expose().to_owned();
        let response = client
            .post(format!("{}/webhooks/listener-signing-key", cluster.base(0)))
            .header("X-API-KEY", &cast.key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        let rotated = Instant::now();
        let new: Value = response.json().await.unwrap();
        let new = new["signing_key"].as_str().unwrap().to_owned();
        assert_ne!(new, old);
        match tokio::time::timeout(REKEYED, stream.next()).await {
            Err(_) => panic!("the stream on B outlived the key replaced through A by {REKEYED:?}"),
            Ok(None) => times.push(rotated.elapsed()),
            Ok(Some(other)) => panic!("the stream went on: {other:?}"),
        }
        let again = on_b.listener().connect(None).await.unwrap();
        assert_eq!(again.signing_key().signing_key.expose(), new);
    }
    let (median, max) = median_and_max(&mut times);
    eprintln!(
        "listener key replaced through A: B's stream ended after {median:.1} ms (median of 20), {max:.1} ms at most"
    );
    cluster.stop().await;
}

/// A listener that leaves and resumes with `Last-Event-ID` every 0.3 s,
/// on each of three processes in turn, while changes are made through all
/// three, gets every change the database holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_resuming_on_other_processes_every_300_ms_misses_no_change() {
    let Some(cluster) = Cluster::start(Db::Postgres, 3, NO_TAKEOVER).await else {
        return;
    };
    let cast = Arc::new(Cast::make(&cluster, None).await);
    let seen = Arc::new(Seen::default());
    let (stop, stopped) = watch::channel(false);
    let bases: Vec<String> = (0..cluster.len())
        .map(|i| cluster.base(i).to_owned())
        .collect();
    let listening = tokio::spawn(listener(
        bases,
        cast.key.clone(),
        Some(Duration::from_millis(300)),
        seen.clone(),
        stopped,
    ));
    // Connected before the first change: it is owed every one.
    while seen.streams.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    burst(&cluster, &cast, 400).await;
    everything_seen(&cluster, &seen).await;
    stop.send_replace(true);
    listening.await.unwrap();
    eprintln!(
        "{} streams for {} changes",
        seen.streams.load(Ordering::SeqCst),
        seen.changes.lock().unwrap().len()
    );
    cluster.stop().await;
}

/// The process a listener is connected to is killed (SIGKILL) in the
/// middle of a burst made through both processes; the listener resumes on
/// the other, which also takes over what the killed one had claimed, and
/// gets every change the database holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_resuming_after_its_process_was_killed_misses_no_change() {
    // A webhook that takes a while, so that B dies with changes in flight,
    // whose shipments' next changes wait for A to take them over.
    let receiver =
        crate::receiver::Receiver::start(StatusCode::OK, Duration::from_millis(100)).await;
    let Some(mut cluster) = Cluster::start(Db::Postgres, 2, TAKEOVER).await else {
        return;
    };
    let cast = Arc::new(Cast::make(&cluster, Some(&receiver.url)).await);
    let seen = Arc::new(Seen::default());
    let (stop, stopped) = watch::channel(false);
    // On B first; once B is gone, only A answers.
    let listening = tokio::spawn(listener(
        vec![cluster.base(1).to_owned(), cluster.base(0).to_owned()],
        cast.key.clone(),
        None,
        seen.clone(),
        stopped,
    ));
    while seen.streams.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let created = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..200 {
        let (client, base, cast, created) = (
            client.clone(),
            cluster.base(i % 2).to_owned(),
            cast.clone(),
            created.clone(),
        );
        // Changes through B may fail once it is killed; A's must not.
        tasks.push(tokio::spawn(async move {
            let done = drive(&client, &base, &cast, 3, &created).await;
            (i % 2 == 0).then_some(done)
        }));
    }
    while created.load(Ordering::SeqCst) < 60 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cluster.kill(1).await;
    for task in tasks {
        if let Some(done) = task.await.unwrap() {
            done.expect("every change through A succeeds");
        }
    }
    everything_seen(&cluster, &seen).await;
    stop.send_replace(true);
    listening.await.unwrap();
    cluster.stop().await;
}

/// Terminates every `LISTEN` connection of the test's database (each
/// process's notification connection), as a database restart or a proxy
/// would; how many.
async fn drop_notification_connections(cluster: &Cluster) -> usize {
    let shipment_server::harness::Pool::Postgres(pool) = cluster.store.pool() else {
        unreachable!("PostgreSQL only");
    };
    let dropped: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid() \
         AND query ILIKE 'LISTEN%'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    dropped.len()
}

/// The notification connections of both processes are dropped twelve
/// times during a burst; a listener that reconnects (resuming) only when
/// its stream ends still gets every change: a stream that might have
/// missed one ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_notification_connection_never_leaves_a_stream_with_a_hole() {
    let Some(cluster) = Cluster::start(Db::Postgres, 2, NO_TAKEOVER).await else {
        return;
    };
    let cast = Arc::new(Cast::make(&cluster, None).await);
    let seen = Arc::new(Seen::default());
    let (stop, stopped) = watch::channel(false);
    // Listening on B; the changes are made through A, so every one reaches
    // B's listener through B's notification connection.
    let listening = tokio::spawn(listener(
        vec![cluster.base(1).to_owned()],
        cast.key.clone(),
        None,
        seen.clone(),
        stopped,
    ));
    while seen.streams.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cluster = Arc::new(cluster);
    let dropping = {
        let cluster = cluster.clone();
        tokio::spawn(async move {
            let mut drops = 0;
            while drops < 12 {
                tokio::time::sleep(Duration::from_millis(150)).await;
                if drop_notification_connections(&cluster).await > 0 {
                    drops += 1;
                }
            }
        })
    };
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let created = AtomicUsize::new(0);
    let mut shipments = 0;
    while !dropping.is_finished() {
        let batch = (0..8).map(|_| drive(&client, cluster.base(0), &cast, 3, &created));
        for done in futures_util::future::join_all(batch).await {
            done.expect("every change succeeds");
        }
        shipments += 8;
    }
    dropping.await.unwrap();
    everything_seen(&cluster, &seen).await;
    stop.send_replace(true);
    listening.await.unwrap();
    eprintln!(
        "{shipments} shipments; the listener opened {} streams",
        seen.streams.load(Ordering::SeqCst)
    );
    Arc::into_inner(cluster).unwrap().stop().await;
}
