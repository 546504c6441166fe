//! `dashboard.webhooks()`: the merchant's webhooks, their delivery log,
//! redelivery, a shipment's delivery history, and the key that signs
//! per-shipment deliveries.

use chrono::{DateTime, Utc};
use reqwest::Method;

use crate::checks;
use crate::dashboard::DashboardClient;
use crate::error::Result;
use crate::model::{
    Delivery, DeliveryId, List, NewWebhook, Page, RedeliverFailures, RedeliveryQueued,
    RegisterWebhook, SetWebhookActive, ShipmentCode, SigningKey, Webhook, WebhookId,
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
    /// use shipment_sdk::model::WebhookId;
    /// dashboard.webhooks().delete(WebhookId::new(3)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self, id: WebhookId) -> Result<()> {
        let call = Call::new(Method::DELETE, "/webhooks/{id}", format!("/webhooks/{id}"));
        self.dashboard.transport.empty(call).await
    }

    /// Pauses (`false`) or resumes (`true`) deliveries to a webhook
    /// (`PATCH /webhooks/:id`) and returns it.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::WebhookId;
    /// let hook = dashboard.webhooks().set_active(WebhookId::new(3), false).await?;
    /// assert!(!hook.active);
    /// # Ok(()) }
    /// ```
    pub async fn set_active(&self, id: WebhookId, active: bool) -> Result<Webhook> {
        let call = Call::new(Method::PATCH, "/webhooks/{id}", format!("/webhooks/{id}"))
            .json(&SetWebhookActive { active })?;
        self.dashboard.transport.json(call).await
    }

    /// A webhook's delivery log, newest first
    /// (`GET /webhooks/:id/deliveries`): set the
    /// [`page`](DeliveriesBuilder::page) and
    /// [`page_size`](DeliveriesBuilder::page_size), then
    /// [`send`](DeliveriesBuilder::send) for one page, whose
    /// [`into_stream`](crate::model::Page::into_stream) goes on through
    /// every older delivery.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::WebhookId;
    /// let log = dashboard.webhooks().deliveries(WebhookId::new(3)).page_size(50).send().await?;
    /// for d in &log.data {
    ///     println!("{} v{} -> {:?} {:?}", d.shipment_code, d.version, d.status_code, d.error);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn deliveries(&self, id: WebhookId) -> DeliveriesBuilder<'a> {
        DeliveriesBuilder::new(self.dashboard, Log::Webhook(id))
    }

    /// Sends one delivery of a webhook again
    /// (`POST /webhooks/:id/deliveries/:delivery_id/redeliver`): the same
    /// snapshot (body bytes and `version`), through the service's outbox,
    /// to the webhook's URL signed with its current key, even if the
    /// webhook is disabled. The new attempt shows in the delivery log with
    /// `redelivery_of: Some(delivery_id)`. A webhook that is not yours, or
    /// a delivery that is not one of its own, is a 404.
    ///
    /// One redelivery of a change to a webhook waits at a time: while one
    /// does, asking again is a 409 `invalid_state` ([`Error::is_conflict`](crate::Error::is_conflict))
    /// whose detail names the waiting one. Beyond the merchant's budget of
    /// redelivered changes per minute (1,000 by default, the operator's
    /// `--redeliveries-per-minute`), it is a 429
    /// ([`Error::is_rate_limited`](crate::Error::is_rate_limited), [`Error::retry_after`](crate::Error::retry_after)).
    ///
    /// Never repeated by the SDK on a retryable failure: a repeat would
    /// send it twice.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::{DeliveryId, WebhookId};
    /// let queued = dashboard
    ///     .webhooks()
    ///     .redeliver(WebhookId::new(3), DeliveryId::new(412))
    ///     .await?;
    /// assert_eq!(queued.queued, 1);
    /// # Ok(()) }
    /// ```
    pub async fn redeliver(
        &self,
        id: WebhookId,
        delivery_id: DeliveryId,
    ) -> Result<RedeliveryQueued> {
        let call = Call::new(
            Method::POST,
            "/webhooks/{id}/deliveries/{delivery_id}/redeliver",
            format!("/webhooks/{id}/deliveries/{delivery_id}/redeliver"),
        );
        self.dashboard.transport.json(call).await
    }

    /// Sends again every change whose delivery to a webhook failed from
    /// `since` until `until` (now when `None`), both included, and has not
    /// been delivered to it successfully since (`POST /webhooks/:id/redeliver`):
    /// once per change however many of its attempts failed, oldest first.
    /// At most 10,000 per call, and at most what the merchant's budget of
    /// redelivered changes per minute has left (1,000 by default, the
    /// operator's `--redeliveries-per-minute`); when more matched, the
    /// answer is `truncated`, and calling again with the same range queues
    /// the rest (changes whose redelivery is still waiting are skipped):
    /// after its [`retry_after`](RedeliveryQueued::retry_after) when the
    /// budget cut it, at once when only the limit of one call did.
    /// When changes match and the budget has no room left, it is a 429
    /// ([`Error::is_rate_limited`](crate::Error::is_rate_limited)) whose [`Error::retry_after`](crate::Error::retry_after) says when
    /// it has. `until` before `since` is a 400 naming `failed_until`.
    ///
    /// Never repeated by the SDK on a retryable failure.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::chrono::{Duration, Utc};
    /// use shipment_sdk::model::WebhookId;
    /// let hook = WebhookId::new(3);
    /// let since = Utc::now() - Duration::hours(6);
    /// loop {
    ///     match dashboard.webhooks().redeliver_failures(hook, since, None).await {
    ///         Ok(queued) => {
    ///             println!("queued {} redeliveries", queued.queued);
    ///             if !queued.truncated {
    ///                 break;
    ///             }
    ///             // Cut by the budget: the rest once it has room again.
    ///             if let Some(wait) = queued.retry_after {
    ///                 tokio::time::sleep(wait).await;
    ///             }
    ///         }
    ///         // The budget per minute is used: wait as asked, then the rest.
    ///         Err(e) if e.is_rate_limited() => {
    ///             let wait = e.retry_after().unwrap_or(std::time::Duration::from_secs(60));
    ///             tokio::time::sleep(wait).await;
    ///         }
    ///         Err(e) => return Err(e),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn redeliver_failures(
        &self,
        id: WebhookId,
        since: DateTime<Utc>,
        until: Option<DateTime<Utc>>,
    ) -> Result<RedeliveryQueued> {
        let mut body = RedeliverFailures::new(since);
        body.failed_until = until;
        let call = Call::new(
            Method::POST,
            "/webhooks/{id}/redeliver",
            format!("/webhooks/{id}/redeliver"),
        )
        .json(&body)?;
        let reply = self
            .dashboard
            .transport
            .reply::<RedeliveryQueued>(call)
            .await?;
        let retry_after = reply.retry_after();
        Ok(RedeliveryQueued {
            retry_after,
            ..reply.value
        })
    }

    /// The delivery history of one of the merchant's shipments
    /// (`GET /webhooks/deliveries?shipment_code=...`): every attempt to each
    /// webhook (`webhook_id`) and to the shipment's own `webhook_url`
    /// (`webhook_id: None`), redeliveries included, newest first. Set the
    /// [`page`](DeliveriesBuilder::page) and
    /// [`page_size`](DeliveriesBuilder::page_size), then
    /// [`send`](DeliveriesBuilder::send) for one page, whose
    /// [`into_stream`](crate::model::Page::into_stream) goes on through
    /// every older attempt.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::ShipmentCode;
    /// let code: ShipmentCode = "SHP-7K3M-Q9ZX".parse()?;
    /// let history = dashboard.webhooks().shipment_deliveries(&code).send().await?;
    /// for d in &history.data {
    ///     let to = d.webhook_id.map_or("its webhook_url".to_owned(), |w| format!("webhook {w}"));
    ///     println!("v{} to {to}: {:?}", d.version, d.status_code);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn shipment_deliveries(&self, code: &ShipmentCode) -> DeliveriesBuilder<'a> {
        DeliveriesBuilder::new(self.dashboard, Log::Shipment(code.clone()))
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

/// Which delivery log a [`DeliveriesBuilder`] reads.
#[derive(Debug, Clone)]
enum Log {
    /// A webhook's (`GET /webhooks/:id/deliveries`).
    Webhook(WebhookId),
    /// A shipment's, across its webhooks and its own `webhook_url`
    /// (`GET /webhooks/deliveries?shipment_code=...`).
    Shipment(ShipmentCode),
}

/// A query of a delivery log: a webhook's ([`Webhooks::deliveries`]) or a
/// shipment's ([`Webhooks::shipment_deliveries`]). Nothing is sent until
/// [`send`](Self::send).
#[derive(Debug, Clone)]
#[must_use = "a request builder does nothing until you `.send().await` it"]
pub struct DeliveriesBuilder<'a> {
    dashboard: &'a DashboardClient,
    log: Log,
    page: Option<u32>,
    page_size: Option<u32>,
}

impl<'a> DeliveriesBuilder<'a> {
    fn new(dashboard: &'a DashboardClient, log: Log) -> Self {
        DeliveriesBuilder {
            dashboard,
            log,
            page: None,
            page_size: None,
        }
    }

    /// Page number `page`, from 1 (default 1); a stream starts there.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::{ShipmentCode, WebhookId};
    /// let older = dashboard.webhooks().deliveries(WebhookId::new(3)).page(2).send().await?;
    /// let code: ShipmentCode = "SHP-7K3M-Q9ZX".parse()?;
    /// let older = dashboard.webhooks().shipment_deliveries(&code).page(2).send().await?;
    /// # Ok(()) }
    /// ```
    pub fn page(mut self, page: u32) -> Self {
        self.page = Some(page);
        self
    }

    /// `page_size` attempts per page, 1 to 100 (the service's default is
    /// 20).
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::{ShipmentCode, WebhookId};
    /// let log = dashboard.webhooks().deliveries(WebhookId::new(3)).page_size(100).send().await?;
    /// let code: ShipmentCode = "SHP-7K3M-Q9ZX".parse()?;
    /// let history = dashboard.webhooks().shipment_deliveries(&code).page_size(100).send().await?;
    /// # Ok(()) }
    /// ```
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = Some(page_size);
        self
    }

    /// Fetches the page. Page 0 or a page size outside 1 to 100 fails
    /// before sending; a webhook the merchant does not have, or a code
    /// that is not one of the merchant's shipments, is a 404.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// use futures_util::TryStreamExt as _;
    /// use shipment_sdk::model::{ShipmentCode, WebhookId};
    /// let failed = dashboard
    ///     .webhooks()
    ///     .deliveries(WebhookId::new(3))
    ///     .page_size(100)
    ///     .send()
    ///     .await?
    ///     .into_stream()
    ///     .try_filter(|d| std::future::ready(d.error.is_some()))
    ///     .try_collect::<Vec<_>>()
    ///     .await?;
    ///
    /// // Every failed attempt to a registered webhook, to send them again.
    /// let code: ShipmentCode = "SHP-7K3M-Q9ZX".parse()?;
    /// let failed = dashboard
    ///     .webhooks()
    ///     .shipment_deliveries(&code)
    ///     .page_size(100)
    ///     .send()
    ///     .await?
    ///     .into_stream()
    ///     .try_filter(|d| std::future::ready(!d.success && d.webhook_id.is_some()))
    ///     .try_collect::<Vec<_>>()
    ///     .await?;
    /// for d in failed {
    ///     if let Some(hook) = d.webhook_id {
    ///         dashboard.webhooks().redeliver(hook, d.id).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn send(self) -> Result<Page<Delivery>> {
        checks::paging(self.page, self.page_size)?;
        let call = match &self.log {
            Log::Webhook(id) => Call::get(
                "/webhooks/{id}/deliveries",
                format!("/webhooks/{id}/deliveries"),
            ),
            Log::Shipment(code) => Call::get("/webhooks/deliveries", "/webhooks/deliveries")
                .param("shipment_code", code),
        };
        let mut call = call.param("page", self.page.unwrap_or(1));
        if let Some(size) = self.page_size {
            call = call.param("page_size", size);
        }
        self.dashboard.transport.page(call).await
    }
}
