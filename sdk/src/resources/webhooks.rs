//! `dashboard.webhooks()`: the merchant's webhooks, their delivery log, and
//! the key that signs per-shipment deliveries.

use reqwest::Method;

use crate::checks;
use crate::dashboard::DashboardClient;
use crate::error::Result;
use crate::model::{
    Delivery, List, NewWebhook, Page, RegisterWebhook, SetWebhookActive, SigningKey, Webhook,
};
use crate::transport::Call;

/// The webhook endpoints; get one with [`DashboardClient::webhooks`].
#[derive(Debug, Clone, Copy)]
pub struct Webhooks<'a> {
    dashboard: &'a DashboardClient,
}

impl<'a> Webhooks<'a> {
    pub(crate) fn new(dashboard: &'a DashboardClient) -> Self {
        Webhooks { dashboard }
    }

    /// The merchant's webhooks (`GET /webhooks`).
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// for hook in dashboard.webhooks().list().await? {
    ///     println!("{} {} active={}", hook.webhook_id, hook.url, hook.active);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list(&self) -> Result<Vec<Webhook>> {
        let call = Call::get("/webhooks", "/webhooks");
        let list: List<Webhook> = self.dashboard.transport.json(call).await?;
        Ok(list.data)
    }

    /// Registers an HTTPS address for every shipment change
    /// (`POST /webhooks`). The answer holds the signing key, which is never
    /// shown again. Not a [`WebhookUrl`](crate::model::WebhookUrl) (check
    /// with `WebhookUrl::parse` first to get the reason without a round
    /// trip), or a host that is not public: 400; already registered: 409
    /// `webhook_url_taken`.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// let hook = dashboard.webhooks().register("https://shop.example.com/hooks").await?;
    /// println!("{}: {}", hook.webhook.webhook_id, hook.signing_key.expose());
    /// # Ok(()) }
    /// ```
    pub async fn register(&self, url: &str) -> Result<NewWebhook> {
        let call = Call::new(Method::POST, "/webhooks", "/webhooks").json(&RegisterWebhook {
            url: url.to_owned(),
        })?;
        self.dashboard.transport.json(call).await
    }

    /// Deletes a webhook (`DELETE /webhooks/:id`); deliveries stop.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// dashboard.webhooks().delete(3).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self, id: i64) -> Result<()> {
        let call = Call::new(Method::DELETE, "/webhooks/{id}", format!("/webhooks/{id}"));
        self.dashboard.transport.empty(call).await
    }

    /// Pauses (`false`) or resumes (`true`) deliveries to a webhook
    /// (`PATCH /webhooks/:id`) and returns it.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// let hook = dashboard.webhooks().set_active(3, false).await?;
    /// assert!(!hook.active);
    /// # Ok(()) }
    /// ```
    pub async fn set_active(&self, id: i64, active: bool) -> Result<Webhook> {
        let call = Call::new(Method::PATCH, "/webhooks/{id}", format!("/webhooks/{id}"))
            .json(&SetWebhookActive { active })?;
        self.dashboard.transport.json(call).await
    }

    /// One page (from 1) of a webhook's delivery log, newest first
    /// (`GET /webhooks/:id/deliveries`). Page 0 fails before sending.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// let log = dashboard.webhooks().deliveries(3, 1).await?;
    /// for d in log.data {
    ///     println!("{} v{} -> {:?} {:?}", d.shipment_code, d.version, d.status_code, d.error);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn deliveries(&self, id: i64, page: u32) -> Result<Page<Delivery>> {
        checks::paging(Some(page), None)?;
        let call = Call::get(
            "/webhooks/{id}/deliveries",
            format!("/webhooks/{id}/deliveries"),
        )
        .param("page", page);
        self.dashboard.transport.json(call).await
    }

    /// Creates or replaces the key that signs deliveries to shipments' own
    /// `webhook_url` (`POST /webhooks/shipment-signing-key`); shown once.
    /// Creating a shipment with a `webhook_url` needs one.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// let key = dashboard.webhooks().rotate_shipment_signing_key().await?;
    /// println!("new signing key: {}", key.signing_key.expose());
    /// # Ok(()) }
    /// ```
    pub async fn rotate_shipment_signing_key(&self) -> Result<SigningKey> {
        let call = Call::new(
            Method::POST,
            "/webhooks/shipment-signing-key",
            "/webhooks/shipment-signing-key",
        );
        self.dashboard.transport.json(call).await
    }
}
