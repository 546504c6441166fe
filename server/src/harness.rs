//! What the test kit, this crate's own integration tests, its benchmark and
//! its fuzz targets build on, beside [`Application`](crate::Application)
//! and [`Config`](crate::Config): the one door into the server's inside.
//!
//! Everything else in the crate is `pub(crate)`. These are re-exports of
//! internal items, for tests and tools that start, drive or take apart a
//! real server; they follow the server's version, not a stable API, and a
//! merchant's tests want [`shipment-testkit`](https://docs.rs/shipment-testkit)
//! instead.
//!
//! ```
//! use shipment_server::harness::{DataKey, PoolSettings, Store};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let store = Store::connect("sqlite::memory:", PoolSettings::default()).await.unwrap();
//! store.migrate().await.unwrap();
//! let key = DataKey::generate();
//! # let _ = key;
//! # });
//! ```

/// Redeliveries as the store answers them, for tests of the budget.
pub use crate::store::outbox::{BulkRedelivery, Redelivery, RedeliveryBudget};
/// One delivery attempt as the delivery log holds it.
pub use crate::store::webhooks::DeliveryRecord;
/// The database: the store's handle and pools, for tests that read or
/// change rows the API does not show, or stop the database under a server.
pub use crate::store::{Pool, PoolSettings, Store, StoreError};

/// How many webhooks failing now the dashboard's overview lists.
pub use crate::app::webhooks::MAX_FAILING_SHOWN;
/// How many listener streams a merchant may hold open at once.
pub use crate::webhooks::listeners::MAX_LISTENERS_PER_MERCHANT;
/// The webhook dispatcher, for tests and the benchmark that run one
/// beside a server, and the process's TLS provider they need first.
pub use crate::webhooks::{DispatchSettings, Dispatcher, install_tls_provider};

/// Shipment codes as the server makes and parses them.
pub use crate::domain::code::ShipmentCode;
/// The fixtures file as the server checks it.
pub use crate::domain::fixtures;
/// The server's own ids (the others are the SDK's, `shipment_sdk::model`):
/// what the store's public methods take and give.
pub use crate::domain::ids::{CourierKeyId, EventId, SessionId};
/// Keys and tokens as the server makes them (the test kit makes fixtures'
/// keys).
pub use crate::domain::keys::{KeyKind, generate as generate_key, random_token};
/// The key that encrypts webhook signing keys at rest.
pub use crate::domain::sealed::DataKey;

/// The parsing and arithmetic the fuzz targets exercise.
pub use crate::domain::fee::{Coordinates, Pricing, to_minor_units, total_fee};
/// The list query and its limits.
pub use crate::domain::list_query::{ListQuery, MAX_PAGE, MAX_PAGE_SIZE, parse_page};
/// A create's body, validated.
pub use crate::domain::validation::NewShipment;
/// A JSON body as the API's extractor reads it.
pub use crate::http::extract::parse_json;

/// A dashboard password's hash, as `admin` and the fixtures store it.
pub use crate::admin::hash_password;

/// What each operation of the merchant's API-key routes needs of a
/// restricted key, as `("GET /shipments", Some((Shipments, Read)))`
/// (`None`: any working key may call it): the table the key check holds
/// keys to, for the authorization matrix to derive its restricted callers'
/// answers from.
pub fn key_permissions() -> Vec<(
    String,
    Option<(shipment_sdk::model::Resource, shipment_sdk::model::Access)>,
)> {
    crate::http::permissions::OPERATIONS
        .iter()
        .map(|op| {
            (
                format!("{} {}", op.method, op.path),
                op.need.map(|n| (n.resource, n.access)),
            )
        })
        .collect()
}
