//! Resource handles: each borrows its client and groups one resource's
//! endpoints (`client.shipments().get(..)`).

pub mod api_keys;
pub mod couriers;
pub mod shipments;
pub mod webhooks;
