//! How long a `TestServer` takes to start and to stop, on SQLite and (with
//! `TEST_DATABASE_URL`) on PostgreSQL: the median and p99 of `RUNS` runs
//! (default 50). BENCHMARKS.md, "The test kit", has the figures.
//!
//! ```text
//! TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!     cargo run --example start_stop -p shipment-testkit
//! ```

use std::time::{Duration, Instant};

use shipment_testkit::{Db, TEST_DATABASE_URL, TestServer};

/// The `q` quantile (0 to 1) of sorted `times`, nearest rank.
fn quantile(times: &[Duration], q: f64) -> Duration {
    let rank = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len());
    times[rank - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(50);
    let mut dbs = vec![Db::Sqlite];
    if std::env::var_os(TEST_DATABASE_URL).is_some() {
        dbs.push(Db::Postgres);
    }
    for db in dbs {
        let mut starts = Vec::with_capacity(runs);
        let mut stops = Vec::with_capacity(runs);
        for _ in 0..runs {
            let started = Instant::now();
            let server = TestServer::builder().database(db).start().await;
            starts.push(started.elapsed());
            let stopping = Instant::now();
            server.stop().await;
            stops.push(stopping.elapsed());
        }
        starts.sort();
        stops.sort();
        println!(
            "{db:?}: {runs} runs; start median {}, p99 {}; stop median {}, p99 {}",
            ms(quantile(&starts, 0.5)),
            ms(quantile(&starts, 0.99)),
            ms(quantile(&stops, 0.5)),
            ms(quantile(&stops, 0.99)),
        );
    }
}
