//! Every setting of the server, with its flag, environment variable and
//! default.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::domain::keys::Environment;
use crate::domain::sealed::DataKey;
use crate::start_error::StartError;
use crate::store::PoolSettings;
use crate::webhooks::DispatchSettings;

/// Largest request body accepted, API and dashboard forms alike (1 MiB);
/// larger is 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The most of a request body left unread by its handler (an oversize
/// body, or one sent with a refused key) that the server reads and throws
/// away before answering (16 MiB), so a client that writes its whole body
/// before reading gets the answer: many times [`MAX_BODY_BYTES`], for any
/// body sent by mistake, and small enough that no client keeps the server
/// reading for long. A longer rest, or one that takes longer than the
/// request time-out, is answered at once with `Connection: close`.
pub const MAX_DRAINED_BYTES: u64 = 16 * 1024 * 1024;

/// Default database: a SQLite file in the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://shipments.db";

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// Database URL: `sqlite://FILE` (created if missing) or `postgres://…`.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    pub database_url: String,
    /// Most database connections held open.
    #[arg(long, env = "SHIPMENT_DB_MAX_CONNECTIONS", default_value_t = 8)]
    pub db_max_connections: u32,
}

impl DatabaseArgs {
    /// The pool settings these arguments ask for.
    pub fn pool(&self) -> PoolSettings {
        PoolSettings {
            max_connections: self.db_max_connections.max(1),
            ..PoolSettings::default()
        }
    }
}

/// Which keys the server accepts.
#[derive(Debug, Clone, Args)]
pub struct EnvironmentArgs {
    /// `staging` takes `sk_test_`/`ck_test_` keys, `production` the `_live_` ones.
    #[arg(long, env = "SHIPMENT_ENVIRONMENT", default_value = "staging", value_parser = parse_environment)]
    pub environment: Environment,
}

fn parse_environment(s: &str) -> Result<Environment, crate::domain::keys::UnknownEnvironment> {
    s.parse()
}

/// Webhook delivery.
#[derive(Debug, Clone, Args)]
pub struct WebhookArgs {
    /// Deliver to loopback and private addresses too (tests and local
    /// development only: it opens the server's network to merchants' URLs).
    #[arg(long, env = "SHIPMENT_ALLOW_PRIVATE_WEBHOOK_TARGETS")]
    pub allow_private_webhook_targets: bool,
    /// Extra root certificates (PEM) to trust for webhook targets.
    #[arg(long, env = "SHIPMENT_WEBHOOK_CA_FILE")]
    pub webhook_ca_file: Option<PathBuf>,
    /// Longest a delivery may take, in seconds (at least 1). The outbox
    /// lease must be at least twice it (`--outbox-lease-secs`).
    #[arg(long, env = "SHIPMENT_WEBHOOK_TIMEOUT_SECS", default_value_t = 10)]
    pub webhook_timeout_secs: u64,
    /// Pause between outbox polls when there is nothing to deliver, in ms.
    #[arg(long, env = "SHIPMENT_OUTBOX_POLL_MS", default_value_t = 200)]
    pub outbox_poll_ms: u64,
    /// How long a claimed outbox row is held before another process may
    /// deliver it (a process that died), in seconds. At least twice
    /// `--webhook-timeout-secs`, or the server does not start: a shorter
    /// lease could run out while a delivery is still waiting for its
    /// answer, and another process would send the change again.
    #[arg(long, env = "SHIPMENT_OUTBOX_LEASE_SECS", default_value_t = 60)]
    pub outbox_lease_secs: u64,
    /// Serve the API only and leave webhook delivery to other processes on
    /// the same database.
    #[arg(long, env = "SHIPMENT_NO_WEBHOOK_DELIVERY")]
    pub no_webhook_delivery: bool,
    /// Most changes a merchant may have redelivered in any minute, across
    /// its webhooks (single and bulk redeliveries alike); beyond it a
    /// redelivery is 429 and a bulk one queues what is left. Counted in the
    /// database, so it holds across processes sharing one.
    #[arg(
        long,
        env = "SHIPMENT_REDELIVERIES_PER_MINUTE",
        default_value_t = DEFAULT_REDELIVERIES_PER_MINUTE,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub redeliveries_per_minute: u32,
}

impl WebhookArgs {
    /// The outbox lease, refused when shorter than twice the delivery
    /// time-out (as the server uses it, at least 1 s). A lease is renewed
    /// every third of it while its delivery runs; were it shorter than two
    /// time-outs, a slow receiver could outlast it between renewals and
    /// another process would deliver the row a second time. Refused rather
    /// than quietly raised, so the flags mean what they say.
    pub fn lease(&self) -> Result<Duration, StartError> {
        let timeout = self.webhook_timeout_secs.max(1);
        let shortest = timeout.saturating_mul(2);
        if self.outbox_lease_secs < shortest {
            return Err(StartError::LeaseShorterThanTimeouts {
                lease_secs: self.outbox_lease_secs,
                timeout_secs: timeout,
                shortest_secs: shortest,
            });
        }
        Ok(Duration::from_secs(self.outbox_lease_secs))
    }
}

/// The default of `--redeliveries-per-minute`.
pub const DEFAULT_REDELIVERIES_PER_MINUTE: u32 =
    crate::store::outbox::RedeliveryBudget::DEFAULT_PER_MINUTE;

impl Default for WebhookArgs {
    fn default() -> Self {
        WebhookArgs {
            allow_private_webhook_targets: false,
            webhook_ca_file: None,
            webhook_timeout_secs: 10,
            outbox_poll_ms: 200,
            outbox_lease_secs: 60,
            no_webhook_delivery: false,
            redeliveries_per_minute: DEFAULT_REDELIVERIES_PER_MINUTE,
        }
    }
}

/// How long connections may stay open, and how many (see `serve.rs`).
#[derive(Debug, Clone, Copy, Args)]
pub struct ConnectionArgs {
    /// Longest a client may take to send a request's headers, in seconds,
    /// counted from when the server starts waiting for them; then the
    /// connection is closed.
    #[arg(long, env = "SHIPMENT_HEADER_READ_TIMEOUT_SECS", default_value_t = 30)]
    pub header_read_timeout_secs: u64,
    /// Longest a kept-alive connection may sit idle between requests, in
    /// seconds; then it is closed.
    #[arg(long, env = "SHIPMENT_IDLE_TIMEOUT_SECS", default_value_t = 60)]
    pub idle_timeout_secs: u64,
    /// Most connections open at once on each listener; further ones wait
    /// in the operating system's queue until one closes.
    #[arg(long, env = "SHIPMENT_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub max_connections: usize,
}

impl Default for ConnectionArgs {
    fn default() -> Self {
        ConnectionArgs {
            header_read_timeout_secs: 30,
            idle_timeout_secs: 60,
            max_connections: 10_000,
        }
    }
}

impl ConnectionArgs {
    /// The limits these arguments ask for (each at least 1).
    pub fn limits(&self) -> crate::serve::ConnectionLimits {
        crate::serve::ConnectionLimits {
            header_read_timeout: Duration::from_secs(self.header_read_timeout_secs.max(1)),
            idle_timeout: Duration::from_secs(self.idle_timeout_secs.max(1)),
            max_connections: self.max_connections.max(1),
        }
    }
}

/// The key that seals webhook signing keys at rest.
#[derive(Debug, Clone, Args)]
pub struct DataKeyArgs {
    /// 64 hex characters. Every process sharing a database needs the same
    /// one. Without it, the key is read from (or created in) `--data-key-file`.
    #[arg(long, env = "SHIPMENT_DATA_KEY", hide_env_values = true)]
    pub data_key: Option<String>,
    /// Where the data key is kept when `--data-key` is not given; created
    /// (readable by the owner only) if missing.
    #[arg(
        long,
        env = "SHIPMENT_DATA_KEY_FILE",
        default_value = "shipment-data.key"
    )]
    pub data_key_file: PathBuf,
}

impl DataKeyArgs {
    /// The data key: given, read from the file, or made and saved there.
    pub fn load(&self) -> Result<DataKey, StartError> {
        if let Some(hex_key) = &self.data_key {
            return DataKey::from_hex(hex_key).map_err(|source| StartError::DataKey {
                origin: "--data-key / SHIPMENT_DATA_KEY".into(),
                source,
            });
        }
        let path = &self.data_key_file;
        let file_error = |what, source| StartError::File {
            what,
            path: path.display().to_string(),
            source,
        };
        match std::fs::read_to_string(path) {
            Ok(text) => {
                refuse_if_shared(path)?;
                DataKey::from_hex(&text).map_err(|source| StartError::DataKey {
                    origin: path.display().to_string(),
                    source,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = DataKey::generate();
                write_private(path, &key.to_hex()).map_err(|e| file_error("cannot create", e))?;
                tracing::info!(path = %path.display(), "created a new data key file");
                Ok(key)
            }
            Err(e) => Err(file_error("cannot read", e)),
        }
    }
}

/// Refuses a key file that group or others may read, as ssh refuses such
/// a private key: whoever reads it can open every signing key the database
/// holds.
fn refuse_if_shared(path: &std::path::Path) -> Result<(), StartError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let metadata = std::fs::metadata(path).map_err(|source| StartError::File {
            what: "cannot read",
            path: path.display().to_string(),
            source,
        })?;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(StartError::DataKeyShared {
                path: path.display().to_string(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(text.as_bytes())
}

/// OTLP export of the server's spans (issue 31). Off unless an endpoint is
/// set: then no exporter is built, and no trace context is read or kept.
#[derive(Debug, Clone, Default, Args)]
pub struct OtlpArgs {
    /// Export the server's spans with OTLP over HTTP to this collector
    /// (a base URL such as `http://localhost:4318`; `/v1/traces` is
    /// appended), and continue the caller's W3C trace in webhook
    /// deliveries.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// The OTLP encoding: `http/protobuf` or `http/json`.
    #[arg(
        long,
        env = "OTEL_EXPORTER_OTLP_PROTOCOL",
        value_enum,
        default_value = "http/protobuf"
    )]
    pub otlp_protocol: crate::telemetry::OtlpProtocol,
}

/// Settings of `serve`.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, env = "SHIPMENT_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub environment: EnvironmentArgs,
    /// Longest a request may take, in seconds, before it is answered 503.
    #[arg(long, env = "SHIPMENT_REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    pub request_timeout_secs: u64,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub connections: ConnectionArgs,
    /// Serve `/metrics` on this address instead of the main one.
    #[arg(long, env = "SHIPMENT_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub webhooks: WebhookArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub data_key: DataKeyArgs,
    /// Serve the dashboard's pages on this address instead of the main one
    /// (which then serves the API alone).
    #[arg(long, env = "SHIPMENT_DASHBOARD_ADDR")]
    pub dashboard_addr: Option<SocketAddr>,
    /// Mark the dashboard's session cookie `Secure` on every response, for
    /// a server reached over HTTPS through a proxy that does not send
    /// `X-Forwarded-Proto: https` (with that header it is marked anyway).
    #[arg(long, env = "SHIPMENT_DASHBOARD_SECURE_COOKIES")]
    pub dashboard_secure_cookies: bool,
    /// Serve the test controls under /api/v1/testing (faults on a
    /// merchant's next requests, advancing a shipment, duplicate webhook
    /// deliveries) for a merchant's CI. Refused with `--environment
    /// production`.
    #[arg(long, env = "SHIPMENT_TEST_CONTROLS")]
    pub test_controls: bool,
    /// With `--test-controls`: how many merchants made by
    /// `POST /testing/merchants` with one merchant's keys may exist at
    /// once; one more is 429 until a test deletes one.
    #[arg(
        long,
        env = "SHIPMENT_MAX_TEST_MERCHANTS_PER_CALLER",
        value_name = "N",
        default_value_t = crate::testing::merchants::DEFAULT_MAX_PER_CALLER
    )]
    pub max_test_merchants_per_caller: u64,
    /// With `--test-controls`: how many merchants made by
    /// `POST /testing/merchants` may exist at once in all.
    #[arg(
        long,
        env = "SHIPMENT_MAX_TEST_MERCHANTS",
        value_name = "N",
        default_value_t = crate::testing::merchants::DEFAULT_MAX_TOTAL
    )]
    pub max_test_merchants: u64,
    /// Apply this fixtures file (TOML: couriers with their keys and
    /// drivers, merchants with their sign-in, API keys, linked couriers and
    /// webhooks; at most 1 MiB) before serving, idempotently; a malformed
    /// file, or one the database disagrees with, stops the start naming the
    /// line.
    #[arg(long, env = "SHIPMENT_FIXTURES", value_name = "FILE")]
    pub fixtures: Option<PathBuf>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub otlp: OtlpArgs,
}

impl Config {
    /// A configuration for `database_url` on a free local port, as tests
    /// and the demo use it: private webhook targets allowed and a fresh
    /// in-memory data key.
    pub fn local(database_url: &str) -> Config {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            database: DatabaseArgs {
                database_url: database_url.to_owned(),
                db_max_connections: 8,
            },
            environment: EnvironmentArgs {
                environment: Environment::Staging,
            },
            request_timeout_secs: 30,
            connections: ConnectionArgs::default(),
            metrics_addr: None,
            webhooks: WebhookArgs {
                allow_private_webhook_targets: true,
                ..WebhookArgs::default()
            },
            data_key: DataKeyArgs {
                data_key: Some(DataKey::generate().to_hex()),
                data_key_file: PathBuf::from("shipment-data.key"),
            },
            dashboard_addr: None,
            dashboard_secure_cookies: false,
            test_controls: false,
            max_test_merchants_per_caller: crate::testing::merchants::DEFAULT_MAX_PER_CALLER,
            max_test_merchants: crate::testing::merchants::DEFAULT_MAX_TOTAL,
            fixtures: None,
            otlp: OtlpArgs::default(),
        }
    }

    /// The request time-out.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs.max(1))
    }

    /// How the webhook dispatcher should behave (reads the CA file).
    pub fn dispatch_settings(&self) -> Result<DispatchSettings, StartError> {
        let w = &self.webhooks;
        let extra_roots_pem = match &w.webhook_ca_file {
            Some(path) => Some(std::fs::read(path).map_err(|source| StartError::File {
                what: "cannot read",
                path: path.display().to_string(),
                source,
            })?),
            None => None,
        };
        Ok(DispatchSettings {
            allow_private_targets: w.allow_private_webhook_targets,
            extra_roots_pem,
            timeout: Duration::from_secs(w.webhook_timeout_secs.max(1)),
            poll_interval: Duration::from_millis(w.outbox_poll_ms.max(10)),
            lease: w.lease()?,
            ..DispatchSettings::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_file_args(path: &std::path::Path) -> DataKeyArgs {
        DataKeyArgs {
            data_key: None,
            data_key_file: path.to_owned(),
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_data_key_file_others_can_read_is_refused_with_the_fix() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.key");
        // Made by the server: private, and read back.
        let made = key_file_args(&path).load().unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(key_file_args(&path).load().unwrap().to_hex(), made.to_hex());
        for shared in [0o640, 0o604, 0o644] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(shared)).unwrap();
            let err = key_file_args(&path).load().unwrap_err().to_string();
            assert!(err.contains(&path.display().to_string()), "{err}");
            assert!(err.contains("chmod 600"), "{err}");
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(
            key_file_args(&path).load().is_ok(),
            "owner-only read is fine"
        );
    }
}
