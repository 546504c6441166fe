//! Whole server processes on one database (the [`Cluster`] helper): a
//! server killed with SIGKILL in the middle of a burst loses no committed
//! change, and servers sharing PostgreSQL deliver every change exactly once.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::cluster::{Cast, Cluster, NO_TAKEOVER, TAKEOVER, burst, committed_changes, drive};
use crate::outbox_drained;
use crate::receiver::Receiver;
use shipment_testkit::Db;

fn received_changes(receiver: &Receiver) -> Vec<(String, i64)> {
    receiver
        .received()
        .iter()
        .map(|r| {
            let b: Value = serde_json::from_slice(&r.body).unwrap();
            (
                b["code"].as_str().unwrap().to_owned(),
                b["version"].as_i64().unwrap(),
            )
        })
        .collect()
}

async fn a_killed_server_loses_no_committed_change(db: Db) {
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let Some(mut cluster) = Cluster::start(db, 1, TAKEOVER).await else {
        return;
    };
    let cast = Arc::new(Cast::make(&cluster, Some(&receiver.url)).await);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let created = Arc::new(AtomicUsize::new(0));
    let mut burst = Vec::new();
    for _ in 0..40 {
        let (client, base, cast, created) = (
            client.clone(),
            cluster.base(0).to_owned(),
            cast.clone(),
            created.clone(),
        );
        burst.push(tokio::spawn(async move {
            drive(&client, &base, &cast, 3, &created).await;
        }));
    }
    // Kill it while the burst is under way; started again, it takes over
    // what the killed one held once the lease ran out.
    while created.load(Ordering::SeqCst) < 10 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cluster.kill(0).await;
    for task in burst {
        task.await.unwrap();
    }
    cluster.restart(0).await;

    outbox_drained(&cluster.store, Duration::from_secs(30)).await;
    let got: HashSet<(String, i64)> = received_changes(&receiver).into_iter().collect();
    let committed = committed_changes(&cluster.store).await;
    assert!(committed.len() >= 10, "{} changes", committed.len());
    for (code, version) in committed {
        assert!(
            got.contains(&(code.clone(), version)),
            "{code} version {version} was never delivered"
        );
    }
    cluster.stop().await;
}

async fn two_servers_deliver_every_change_exactly_once(db: Db) {
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let Some(cluster) = Cluster::start(db, 2, NO_TAKEOVER).await else {
        return;
    };
    let cast = Arc::new(Cast::make(&cluster, Some(&receiver.url)).await);

    // 125 shipments x 4 changes = 500 changes, spread over both servers.
    burst(&cluster, &cast, 125).await;
    outbox_drained(&cluster.store, Duration::from_secs(30)).await;
    let got = received_changes(&receiver);
    let mut per_change: HashMap<(String, i64), usize> = HashMap::new();
    for change in &got {
        *per_change.entry(change.clone()).or_default() += 1;
    }
    let twice: Vec<_> = per_change.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    assert_eq!(per_change.len(), 500, "every change delivered");
    cluster.stop().await;
}

shipment_testkit::db_tests!(
    db;
    a_killed_server_loses_no_committed_change,
    two_servers_deliver_every_change_exactly_once,
);
