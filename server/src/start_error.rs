//! [`StartError`]: why the server could not start. Its own module, below
//! everything that can fail at start (the configuration, the database, the
//! fixtures), so none of them has to reach up to the crate's root for it.

use std::net::SocketAddr;

use crate::domain::sealed::SealError;
use crate::store::StoreError;
use crate::testing::fixtures::FixtureError;
use crate::webhooks::ClientError;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The database could not be opened or migrated.
    #[error("the database: {0}")]
    Store(#[from] StoreError),
    /// An address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The data key is not 64 hex characters.
    #[error("the data key ({origin}): {source}")]
    DataKey {
        /// Where it came from.
        origin: String,
        /// Why it is refused.
        source: SealError,
    },
    /// The data key file can be read by group or others.
    #[error(
        "the data key file {path} can be read by others (mode {mode:03o}); it must be private \
         to this user: run `chmod 600 {path}`"
    )]
    DataKeyShared {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// A file could not be read or created.
    #[error("{what} {path}: {source}")]
    File {
        /// "cannot read", "cannot create".
        what: &'static str,
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// `--webhook-ca-file` holds no PEM certificate.
    #[error("the webhook CA file holds no valid PEM certificate: {0}")]
    WebhookCa(reqwest::Error),
    /// The HTTPS client for deliveries could not be built.
    #[error("cannot build the webhook client: {0}")]
    WebhookClient(reqwest::Error),
    /// `--test-controls` on a production server.
    #[error(
        "--test-controls is refused with --environment production: it lets any merchant key \
         make the server fail, stall and repeat itself; use it on a staging server"
    )]
    TestControlsInProduction,
    /// `--outbox-lease-secs` is shorter than twice `--webhook-timeout-secs`.
    #[error(
        "--outbox-lease-secs {lease_secs} is shorter than twice --webhook-timeout-secs \
         {timeout_secs}: a delivery still waiting for its answer could lose its lease and be \
         sent again by another process; set --outbox-lease-secs to {shortest_secs} or more, or \
         lower --webhook-timeout-secs"
    )]
    LeaseShorterThanTimeouts {
        /// `--outbox-lease-secs`.
        lease_secs: u64,
        /// `--webhook-timeout-secs`, as used (at least 1).
        timeout_secs: u64,
        /// The shortest lease allowed with it.
        shortest_secs: u64,
    },
    /// `--fixtures FILE` could not be applied (nothing of it was).
    #[error(transparent)]
    Fixtures(#[from] FixtureError),
}

impl From<ClientError> for StartError {
    fn from(e: ClientError) -> StartError {
        match e {
            ClientError::Ca(e) => StartError::WebhookCa(e),
            ClientError::Build(e) => StartError::WebhookClient(e),
        }
    }
}
