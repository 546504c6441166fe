//! Typed identifiers: one newtype per resource, so a webhook id cannot be
//! passed where an API key id is meant.
//!
//! On the wire each is the plain JSON integer it always was.
//!
//! ```compile_fail
//! use shipment_sdk::model::{ApiKeyId, WebhookId};
//! fn delete_key(_id: ApiKeyId) {}
//! delete_key(WebhookId::new(3)); // a webhook id is not a key id
//! ```

use std::fmt;
use std::num::ParseIntError;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(i64);

        impl $name {
            /// Wraps a raw identifier (as the service numbers them, from 1).
            pub const fn new(raw: i64) -> Self {
                $name(raw)
            }

            /// The raw integer, as the wire and the database carry it.
            pub const fn get(self) -> i64 {
                self.0
            }
        }

        impl From<i64> for $name {
            fn from(raw: i64) -> Self {
                $name(raw)
            }
        }

        impl From<$name> for i64 {
            fn from(id: $name) -> i64 {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl FromStr for $name {
            type Err = ParseIntError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                s.parse().map($name)
            }
        }
    };
}

id_type! {
    /// A shipment's numeric id (`Shipment::id`); the API addresses
    /// shipments by their [`ShipmentCode`](super::ShipmentCode).
    ShipmentId
}
id_type! {
    /// A merchant's id (`Shipment::merchant_id`).
    MerchantId
}
id_type! {
    /// A courier company's id (`CourierCompany::id`,
    /// `Shipment::courier_company_id`).
    CourierId
}
id_type! {
    /// A courier company's driver (`Shipment::assigned_driver_id`).
    DriverId
}
id_type! {
    /// An API key's id, as `GET /api-keys` lists it and
    /// `DELETE /api-keys/:id` takes it.
    ApiKeyId
}
id_type! {
    /// A merchant webhook's id (`Webhook::webhook_id`).
    WebhookId
}
id_type! {
    /// One delivery attempt in the webhook delivery log (`Delivery::id`).
    DeliveryId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_plain_integers_on_the_wire() {
        let id: WebhookId = serde_json::from_str("42").unwrap();
        assert_eq!(id, WebhookId::new(42));
        assert_eq!(serde_json::to_string(&id).unwrap(), "42");
        assert_eq!(id.to_string(), "42");
        assert_eq!("42".parse::<WebhookId>().unwrap(), id);
        assert_eq!(i64::from(id), 42);
    }
}
