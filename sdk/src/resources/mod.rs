//! Resource handles: each borrows its client and groups one resource's
//! endpoints (`client.shipments().get(..)`). Calls with optional parameters
//! return a request builder that [`send`](shipments::CreateShipmentBuilder::send)
//! finishes.

use std::ops::{Deref, DerefMut};

pub mod api_keys;
pub mod couriers;
pub mod listen;
pub mod shipments;
pub mod webhooks;

/// What an idempotent create answered: the resource, and whether the
/// service replayed an earlier create with the same `Idempotency-Key` and
/// body instead of creating it now (nothing new was made then).
///
/// It dereferences to the resource, so `created.code` reads the shipment's
/// code; [`into_inner`](Created::into_inner) takes it out.
///
/// ```no_run
/// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
/// use shipment_sdk::model::{CourierId, CreateShipment, Shipment};
/// let created = client
///     .shipments()
///     .create(&CreateShipment::new(CourierId::new(7)))
///     .idempotency_key("order-10293")
///     .send()
///     .await?;
/// if created.replayed {
///     println!("order 10293 was shipped before, as {}", created.code);
/// }
/// let shipment: Shipment = created.into_inner();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Created<T> {
    /// The resource: created now, or by the earlier request.
    pub value: T,
    /// `true` when the service answered with what an earlier request with
    /// the same `Idempotency-Key` and body created (the
    /// `Idempotent-Replayed: true` header); `false` when it was created now.
    ///
    /// Only a key of the caller's can replay an earlier request: with the
    /// key the SDK generated for the call, a replay answers a retry of
    /// this very call (the first attempt made the shipment, its answer was
    /// lost), so it reads `false`.
    pub replayed: bool,
}

impl<T> Created<T> {
    /// A create's answer (for tests of code that takes one).
    pub fn new(value: T, replayed: bool) -> Created<T> {
        Created { value, replayed }
    }

    /// The resource.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> Deref for Created<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for Created<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}
