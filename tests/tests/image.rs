//! The reference server's container image with a real Docker daemon: built
//! once per run with `cargo xtask image` (docker/Dockerfile), then run as a
//! merchant's CI runs it: fixtures from a mounted file, the test controls
//! on, reached through a published port with the SDK, its HEALTHCHECK
//! turning healthy, a webhook from the container verified by a receiver in
//! this process, and `docker stop` ending it cleanly within 10 s.
//!
//! Without a Docker daemon the tests fail under CI (`CI` set; `.ci/run`
//! installs docker.io and starts `dockerd`) and print `SKIPPED (no docker)`
//! elsewhere. The first run builds the release server (minutes on two
//! cores); later runs reuse it.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use shipment_sdk::model::{CreateShipment, Status};
use shipment_testkit::{
    CourierFixture, Fixtures, MerchantFixture, WebhookInbox, WebhookReceiver, ca, new_signing_key,
};
use tokio::net::{TcpListener, TcpStream};

/// The tag these tests build (not `shipment-server:dev`, which is the
/// developer's own).
const TAG: &str = "shipment-server:e2e";

/// The image's size limit (issue 30: "aim for under 40 MB").
const MAX_IMAGE_BYTES: u64 = 40_000_000;

/// How long the HEALTHCHECK may take to report healthy: its first check
/// runs 5 s after the start (the Dockerfile's `--interval`).
const HEALTHY_WITHIN: Duration = Duration::from_secs(60);

/// `docker stop`'s grace period before SIGKILL, and the limit.
const STOP_WITHIN: Duration = Duration::from_secs(10);

/// Runs `docker` with `args`; its output, whatever the exit status.
fn docker(args: &[&str]) -> Output {
    Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs")
}

/// Runs `docker` with `args`, which must succeed; its trimmed stdout.
fn docker_ok(args: &[&str]) -> String {
    let out = docker(args);
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Whether a Docker daemon answers; `false` (after printing `SKIPPED`)
/// when none does and this is not CI.
fn docker_available() -> bool {
    let answers = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !answers {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Docker daemon answers: CI must install docker.io and start dockerd (.ci/run does)"
        );
        eprintln!("SKIPPED (no docker)");
    }
    answers
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// Builds the image once for every test of this binary
/// (`cargo xtask image --tag shipment-server:e2e`), and checks its size.
async fn build_image() {
    static BUILT: OnceLock<()> = OnceLock::new();
    tokio::task::spawn_blocking(|| {
        BUILT.get_or_init(|| {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let out = Command::new(cargo)
                .current_dir(workspace_root())
                .args(["xtask", "image", "--tag", TAG])
                .output()
                .expect("cargo runs");
            assert!(
                out.status.success(),
                "cargo xtask image: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let printed = String::from_utf8(out.stdout).unwrap();
            eprintln!("{printed}");
            assert!(printed.starts_with(&format!("built {TAG}: ")), "{printed}");
        });
    })
    .await
    .unwrap();
    let size: u64 = docker_ok(&["image", "inspect", "--format", "{{.Size}}", TAG])
        .parse()
        .unwrap();
    assert!(
        size < MAX_IMAGE_BYTES,
        "the image is {size} bytes, over {MAX_IMAGE_BYTES}"
    );
}

/// A container of this test, removed (with its anonymous volumes) when
/// dropped.
struct Container {
    id: String,
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = docker(&["rm", "--force", "--volumes", &self.id]);
    }
}

impl Container {
    /// `docker run --detach` of the test image with `args` before it and
    /// `command` (the server's subcommand and flags) after it.
    fn run(args: &[&str], command: &[&str]) -> Container {
        let mut all = vec!["run", "--detach"];
        all.extend_from_slice(args);
        all.push(TAG);
        all.extend_from_slice(command);
        Container {
            id: docker_ok(&all),
        }
    }

    fn inspect(&self, format: &str) -> String {
        docker_ok(&["inspect", "--format", format, &self.id])
    }

    /// The host address the container's `port` is published on.
    fn published(&self, port: u16) -> SocketAddr {
        let mapping = docker_ok(&["port", &self.id, &format!("{port}/tcp")]);
        let first = mapping.lines().next().expect("the port is published");
        first.parse().unwrap_or_else(|_| panic!("{mapping}"))
    }

    fn logs(&self) -> String {
        let out = docker(&["logs", &self.id]);
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// Waits until Docker reports the HEALTHCHECK healthy; it must not
    /// report unhealthy on the way.
    async fn wait_healthy(&self) -> Duration {
        let started = Instant::now();
        loop {
            let health = self.inspect("{{.State.Health.Status}}");
            match health.as_str() {
                "healthy" => return started.elapsed(),
                "starting" => {}
                other => panic!("health {other}: {}", self.logs()),
            }
            assert!(
                started.elapsed() < HEALTHY_WITHIN,
                "not healthy within {HEALTHY_WITHIN:?}: {}\n{}",
                self.inspect("{{json .State.Health}}"),
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// `docker stop` (SIGTERM, then SIGKILL after 10 s): the server, PID 1,
    /// must exit 0 by itself before that.
    async fn stop_gracefully(&self) {
        let id = self.id.clone();
        let started = Instant::now();
        let secs = STOP_WITHIN.as_secs().to_string();
        tokio::task::spawn_blocking(move || docker_ok(&["stop", "--time", &secs, &id]))
            .await
            .unwrap();
        let took = started.elapsed();
        let logs = self.logs();
        assert_eq!(
            self.inspect("{{.State.ExitCode}}"),
            "0",
            "the server exits 0 on SIGTERM: {logs}"
        );
        assert!(took < STOP_WITHIN, "docker stop took {took:?}: {logs}");
        assert!(logs.contains("shutting down"), "{logs}");
    }
}

/// Listens on every interface and passes every connection, bytes
/// untouched, to `to`: the test kit's receivers listen on 127.0.0.1 only,
/// which a container cannot reach, and where `host-gateway` points depends
/// on the daemon (the default bridge's gateway unless configured). TLS
/// passes through: the container checks the receiver's own certificate.
async fn forward(to: SocketAddr) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))
        .await
        .expect("bind the forwarder");
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut outbound) = TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (addr, task)
}

/// A file the container's user (10001) can read: a bind mount keeps the
/// host's owner and mode, and temporary files are the owner's alone.
fn readable_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_serves_ci_with_fixtures_health_webhooks_and_a_clean_stop() {
    if !docker_available() {
        return;
    }
    build_image().await;

    // A receiver in this process, reached from the container as
    // https://host.docker.internal:<port>/hook.
    let receiver = WebhookReceiver::start(StatusCode::OK, Duration::ZERO).await;
    let receiver_addr: SocketAddr = receiver
        .url
        .trim_start_matches("https://localhost:")
        .trim_end_matches("/hook")
        .parse::<u16>()
        .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
        .unwrap();
    let (forwarder, forwarding) = forward(receiver_addr).await;
    let hook = format!("https://host.docker.internal:{}/hook", forwarder.port());

    let signing_key = new_signing_key();
    let fixtures = Fixtures::empty()
        .courier(CourierFixture::new("Swift Couriers").driver("Dana"))
        .merchant(
            MerchantFixture::new("Acme", "ci@acme.test")
                .courier("Swift Couriers")
                .webhook(&hook, &signing_key),
        );
    let api_key = fixtures.merchants()[0].api_key_values()[0].clone();
    let dir = tempfile::tempdir().unwrap();
    let ci_toml = readable_file(dir.path(), "ci.toml", &fixtures.to_toml());
    let ca_pem = readable_file(
        dir.path(),
        "ca.pem",
        &std::fs::read_to_string(&ca().pem_file).unwrap(),
    );

    let container = Container::run(
        &[
            "--publish",
            "127.0.0.1::8080",
            "--volume",
            &format!("{}:/ci.toml:ro", ci_toml.display()),
            "--env",
            "SHIPMENT_FIXTURES=/ci.toml",
            "--volume",
            &format!("{}:/ca.pem:ro", ca_pem.display()),
            "--env",
            "SHIPMENT_WEBHOOK_CA_FILE=/ca.pem",
            "--add-host",
            "host.docker.internal:host-gateway",
        ],
        &[
            "serve",
            "--test-controls",
            "--allow-private-webhook-targets",
        ],
    );

    // The image's own defaults: a non-root user, port 8080.
    assert_eq!(container.inspect("{{.Config.User}}"), "10001:10001");
    let pid = container.inspect("{{.State.Pid}}");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert_eq!(
        uid.split_whitespace().nth(1),
        Some("10001"),
        "the server runs as 10001: {uid}"
    );

    let took = container.wait_healthy().await;
    eprintln!("healthy after {took:?}");
    let last = container.inspect("{{range .State.Health.Log}}{{.Output}}{{end}}");
    assert!(
        last.contains("http://127.0.0.1:8080/readyz answered 200 OK"),
        "{last}"
    );

    // Through the published port, with the fixtures' key.
    let base = format!("http://{}/api/v1", container.published(8080));
    let sdk = shipment_sdk::Client::builder()
        .api_key(&api_key)
        .base_url(&base)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let couriers = sdk.couriers().list().await.unwrap();
    assert_eq!(couriers.len(), 1, "{couriers:?}");
    let shipment = sdk
        .shipments()
        .create(&CreateShipment::new(couriers[0].id).description("from the image test"))
        .send()
        .await
        .unwrap()
        .into_inner();

    // The test controls are on: the shipment is moved to delivered, and
    // every change goes out as a webhook from the container.
    let advanced = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!(
            "{base}/testing/shipments/{}/advance",
            shipment.code
        ))
        .header("X-API-KEY", &api_key)
        .json(&serde_json::json!({ "to": "delivered" }))
        .send()
        .await
        .unwrap();
    assert_eq!(advanced.status(), StatusCode::OK);

    let mut inbox = WebhookInbox::new(receiver, &signing_key);
    let delivered = inbox.wait_for(&shipment.code, Status::Delivered).await;
    assert_eq!(delivered.shipment.code, shipment.code);
    forwarding.abort();

    container.stop_gracefully().await;
}

/// `-e SHIPMENT_ADDR` moves the server and its HEALTHCHECK together, and
/// so does `serve --addr` after the image (arguments Docker does not give
/// the HEALTHCHECK); `-e DATABASE_URL` replaces the in-memory database:
/// here a SQLite file in the non-root user's working directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_healthcheck_follows_a_moved_port_and_a_given_database() {
    if !docker_available() {
        return;
    }
    build_image().await;
    let container = Container::run(
        &[
            "--publish",
            "127.0.0.1::9090",
            "--env",
            "SHIPMENT_ADDR=0.0.0.0:9090",
            "--env",
            "DATABASE_URL=sqlite:///data/shipments.db",
            // Checked every second instead of every 5: the result is the same.
            "--health-interval",
            "1s",
        ],
        &[],
    );
    container.wait_healthy().await;
    let last = container.inspect("{{range .State.Health.Log}}{{.Output}}{{end}}");
    assert!(
        last.contains("http://127.0.0.1:9090/readyz answered 200 OK"),
        "{last}"
    );
    let ready = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("http://{}/readyz", container.published(9090)))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    let logs = container.logs();
    assert!(logs.contains("0.0.0.0:9090"), "{logs}");
    container.stop_gracefully().await;
    // The database file is in the container's working directory.
    let listing = docker_ok(&["diff", &container.id]);
    assert!(listing.contains("/data/shipments.db"), "{listing}");

    let flagged = Container::run(
        &["--publish", "127.0.0.1::9191", "--health-interval", "1s"],
        &["serve", "--addr", "0.0.0.0:9191"],
    );
    flagged.wait_healthy().await;
    let last = flagged.inspect("{{range .State.Health.Log}}{{.Output}}{{end}}");
    assert!(
        last.contains("http://127.0.0.1:9191/readyz answered 200 OK"),
        "{last}"
    );
    flagged.stop_gracefully().await;
}
