//! The server's own ids, of records the API never numbers: the SDK's
//! (`shipment_sdk::model::{MerchantId, …}`) cover the rest. Each wraps the
//! row's `i64` so one cannot be passed where another is meant.

use std::fmt;

macro_rules! server_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(i64);

        impl $name {
            /// Wraps a row's id.
            pub const fn new(raw: i64) -> Self {
                $name(raw)
            }

            /// The raw integer, as the database carries it.
            pub const fn get(self) -> i64 {
                self.0
            }
        }

        impl From<i64> for $name {
            fn from(raw: i64) -> Self {
                $name(raw)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

server_id! {
    /// A courier company's key (`ck_…`), by its row id.
    CourierKeyId
}
server_id! {
    /// A dashboard session, by its row id.
    SessionId
}
server_id! {
    /// An outbox row: one change of one shipment, in the order of the
    /// changes; a listener's SSE event id (`Last-Event-ID`).
    EventId
}
