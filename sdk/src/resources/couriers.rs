//! `client.couriers()`: the courier companies linked to the merchant.

use crate::client::Client;
use crate::error::Result;
use crate::model::{CourierCompany, List};
use crate::transport::Call;

/// The courier endpoints; get one with [`Client::couriers`].
#[derive(Debug, Clone, Copy)]
pub struct Couriers<'a> {
    client: &'a Client,
}

impl<'a> Couriers<'a> {
    pub(crate) fn new(client: &'a Client) -> Self {
        Couriers { client }
    }

    /// Every courier company linked to the merchant, with its pricing
    /// (`GET /merchant-couriers`). Their `id` is what
    /// [`CreateShipment::new`](crate::model::CreateShipment::new) takes.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// for c in client.couriers().list().await? {
    ///     println!("{:>4} {} (base fee {})", c.id, c.name, c.base_fee);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list(&self) -> Result<Vec<CourierCompany>> {
        let call = Call::get("/merchant-couriers", "/merchant-couriers");
        let list: List<CourierCompany> = self.client.transport.json(call).await?;
        Ok(list.data)
    }
}
