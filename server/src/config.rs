//! Every setting of the server, with its flag, environment variable and
//! default.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use crate::domain::keys::Environment;
use crate::store::PoolSettings;

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

fn parse_environment(s: &str) -> Result<Environment, String> {
    s.parse()
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
}

impl Config {
    /// A configuration for `database_url` on a free local port, as tests
    /// and the demo use it.
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
        }
    }

    /// The request time-out.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs.max(1))
    }
}
