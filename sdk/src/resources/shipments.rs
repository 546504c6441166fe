//! `client.shipments()`: the shipment endpoints of the merchant API, and
//! the request builders of [`create`](Shipments::create) and
//! [`list`](Shipments::list).

use chrono::{DateTime, Utc};
use reqwest::Method;

use crate::checks;
use crate::client::Client;
use crate::error::Result;
use crate::model::{
    ConfirmationCode, CourierId, CreateShipment, IdempotencyKey, ListShipments, Page, RateShipment,
    Shipment, Status,
};
use crate::resources::Created;
use crate::transport::{Call, Retry};

/// The response header that marks a create answered from an earlier one.
const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The shipment endpoints; get one with [`Client::shipments`].
#[derive(Debug, Clone, Copy)]
pub struct Shipments<'a> {
    client: &'a Client,
}

impl<'a> Shipments<'a> {
    pub(crate) fn new(client: &'a Client) -> Self {
        Shipments { client }
    }

    /// Creates a shipment (`POST /shipments`), in `assigned_to_courier`:
    /// set the optional [`idempotency_key`](CreateShipmentBuilder::idempotency_key),
    /// then [`send`](CreateShipmentBuilder::send).
    ///
    /// Without a key of yours, the SDK generates one for the call and reuses
    /// it on every retry, so a retried create never makes a second shipment
    /// (and the answer reads as created, even when a retry was answered
    /// from an attempt whose answer was lost). Your own key (an order
    /// number, say) makes creation safe across process restarts too; the
    /// answer's [`replayed`](crate::resources::Created::replayed) then says
    /// whether the shipment was made by an earlier request.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::{CourierId, CreateShipment};
    /// let shipment = client
    ///     .shipments()
    ///     .create(
    ///         &CreateShipment::new(CourierId::new(7))
    ///             .description("Two boxes of books")
    ///             .weight_kg("4.5".parse().unwrap())
    ///             .start_address("52.5200,13.4050")
    ///             .end_address("52.3759,4.8975"),
    ///     )
    ///     .send()
    ///     .await?;
    /// println!("{} costs {}", shipment.code, shipment.total_fee);
    /// # Ok(()) }
    /// ```
    pub fn create<'r>(&self, request: &'r CreateShipment) -> CreateShipmentBuilder<'r>
    where
        'a: 'r,
    {
        CreateShipmentBuilder {
            client: self.client,
            request,
            idempotency_key: None,
        }
    }

    /// Lists the merchant's shipments, newest first (`GET /shipments`): set
    /// the filters and paging on the builder, then
    /// [`send`](ListShipmentsBuilder::send) for one page, whose
    /// [`into_stream`](Page::into_stream) goes on through every following
    /// page.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::Status;
    /// let page = client
    ///     .shipments()
    ///     .list()
    ///     .status(Status::InTransit)
    ///     .page_size(50)
    ///     .send()
    ///     .await?;
    /// println!("{} of {} in transit", page.data.len(), page.total);
    /// # Ok(()) }
    /// ```
    pub fn list(&self) -> ListShipmentsBuilder<'a> {
        ListShipmentsBuilder {
            client: self.client,
            query: ListShipments::default(),
        }
    }

    /// One shipment by its code (`GET /shipments/:code`). A code of another
    /// merchant's shipment is a 403, an unknown one a 404.
    ///
    /// Like every call on one shipment, it takes the code as text or as a
    /// [`ShipmentCode`](crate::model::ShipmentCode) (`&shipment.code`); text
    /// that is not a code fails with
    /// [`Error::InvalidShipmentCode`](crate::Error::InvalidShipmentCode)
    /// before sending.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let shipment = client.shipments().get("SHP-7K3M-Q9ZX").await?;
    /// println!("{} is {}", shipment.code, shipment.status);
    /// # Ok(()) }
    /// ```
    pub async fn get(&self, code: impl AsRef<str>) -> Result<Shipment> {
        let code = checks::shipment_code(code.as_ref())?;
        let call = Call::get("/shipments/{code}", format!("/shipments/{code}"));
        self.client.transport.json(call).await
    }

    /// Cancels a shipment that is not yet picked up
    /// (`POST /shipments/:code/cancel`) and returns it. Cancelling a
    /// cancelled shipment answers it unchanged; later states are a 409
    /// `invalid_state`.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let shipment = client.shipments().cancel("SHP-7K3M-Q9ZX").await?;
    /// assert!(shipment.status.is_final());
    /// # Ok(()) }
    /// ```
    pub async fn cancel(&self, code: impl AsRef<str>) -> Result<Shipment> {
        let code = checks::shipment_code(code.as_ref())?;
        let call = Call::new(
            Method::POST,
            "/shipments/{code}/cancel",
            format!("/shipments/{code}/cancel"),
        );
        self.client.transport.json(call).await
    }

    /// Rates a delivered shipment from 1 to 10, once
    /// (`POST /shipments/:code/rate`), and returns it.
    ///
    /// A rating outside 1 to 10 fails with
    /// [`Error::InvalidRating`](crate::Error::InvalidRating) before sending.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let shipment = client.shipments().rate("SHP-7K3M-Q9ZX", 9).await?;
    /// assert_eq!(shipment.rating, Some(9));
    /// # Ok(()) }
    /// ```
    pub async fn rate(&self, code: impl AsRef<str>, rating: u8) -> Result<Shipment> {
        let code = checks::shipment_code(code.as_ref())?;
        let rating = checks::rating(rating)?;
        let call = Call::new(
            Method::POST,
            "/shipments/{code}/rate",
            format!("/shipments/{code}/rate"),
        )
        .json(&RateShipment { rating })?;
        self.client.transport.json(call).await
    }

    /// Generates a six-digit code the courier must enter at delivery
    /// (`POST /shipments/:code/generate-confirmation-code`); valid 72 hours,
    /// and a new one replaces the old.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let code = client.shipments().generate_confirmation_code("SHP-7K3M-Q9ZX").await?;
    /// println!("tell the customer: {}", code.confirmation_code);
    /// # Ok(()) }
    /// ```
    pub async fn generate_confirmation_code(
        &self,
        code: impl AsRef<str>,
    ) -> Result<ConfirmationCode> {
        let code = checks::shipment_code(code.as_ref())?;
        let call = Call::new(
            Method::POST,
            "/shipments/{code}/generate-confirmation-code",
            format!("/shipments/{code}/generate-confirmation-code"),
        );
        self.client.transport.json(call).await
    }
}

/// A shipment to create; see [`Shipments::create`]. Nothing is sent until
/// [`send`](Self::send).
#[derive(Debug, Clone)]
#[must_use = "a request builder does nothing until you `.send().await` it"]
pub struct CreateShipmentBuilder<'a> {
    client: &'a Client,
    request: &'a CreateShipment,
    idempotency_key: Option<String>,
}

impl CreateShipmentBuilder<'_> {
    /// Sends this `Idempotency-Key` instead of one generated for the call:
    /// the same key and body within 24 hours answer the first shipment
    /// instead of a second one (with [`Created::replayed`] set); the same
    /// key with another body is a 409 `idempotency_conflict`. The key is 1
    /// to 255 visible ASCII characters, else [`send`](Self::send) fails
    /// with [`Error::InvalidIdempotencyKey`](crate::Error::InvalidIdempotencyKey)
    /// before sending.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::{CourierId, CreateShipment};
    /// // e.g. your own order number, so a crash and restart cannot ship twice
    /// let created = client
    ///     .shipments()
    ///     .create(&CreateShipment::new(CourierId::new(7)))
    ///     .idempotency_key("order-10293")
    ///     .send()
    ///     .await?;
    /// if created.replayed {
    ///     println!("created before: {}", created.code);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn idempotency_key(mut self, key: impl AsRef<str>) -> Self {
        self.idempotency_key = Some(key.as_ref().to_owned());
        self
    }

    /// Sends the create, retrying on connection failures, time-outs, a
    /// connection that ended before any answer, 429, 502, 503 and 504 with
    /// the same key, and returns the shipment with whether the service
    /// [replayed](Created::replayed) an earlier create. Without a key of
    /// yours, `replayed` is always `false`: the generated key is this
    /// call's alone, so a replay under it can only answer one of this
    /// call's own attempts.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::{CourierId, CreateShipment};
    /// let shipment = client
    ///     .shipments()
    ///     .create(&CreateShipment::new(CourierId::new(7)))
    ///     .send()
    ///     .await?
    ///     .into_inner();
    /// # Ok(()) }
    /// ```
    pub async fn send(self) -> Result<Created<Shipment>> {
        let key = match &self.idempotency_key {
            Some(key) => IdempotencyKey::parse(key)?,
            None => IdempotencyKey::parse(&uuid::Uuid::new_v4().to_string())?,
        };
        let call = Call::new(Method::POST, "/shipments", "/shipments")
            .json(self.request)?
            .retry(Retry::WithIdempotencyKey(key.as_str().to_owned()));
        let reply = self.client.transport.reply::<Shipment>(call).await?;
        // A key made here is this call's alone: a replay under it answers
        // one of this call's own attempts (whose answer a dropped
        // connection lost), so the shipment was made by this call. Only
        // the caller's own key can have been used by an earlier one.
        let replayed = self.idempotency_key.is_some()
            && reply
                .header(IDEMPOTENT_REPLAYED)
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        Ok(Created::new(reply.value, replayed))
    }
}

/// A shipment query; see [`Shipments::list`]. Nothing is sent until
/// [`send`](Self::send).
#[derive(Debug, Clone)]
#[must_use = "a request builder does nothing until you `.send().await` it"]
pub struct ListShipmentsBuilder<'a> {
    client: &'a Client,
    query: ListShipments,
}

impl ListShipmentsBuilder<'_> {
    /// Only shipments in `status`.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::Status;
    /// let page = client.shipments().list().status(Status::Delivered).send().await?;
    /// # Ok(()) }
    /// ```
    pub fn status(mut self, status: Status) -> Self {
        self.query = self.query.status(status);
        self
    }

    /// Only shipments of this courier company.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::CourierId;
    /// let page = client.shipments().list().courier_company_id(CourierId::new(7)).send().await?;
    /// # Ok(()) }
    /// ```
    pub fn courier_company_id(mut self, id: CourierId) -> Self {
        self.query = self.query.courier_company_id(id);
        self
    }

    /// Only shipments created at or after `t`.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::chrono::{Duration, Utc};
    /// let today = client.shipments().list().created_after(Utc::now() - Duration::days(1)).send().await?;
    /// # Ok(()) }
    /// ```
    pub fn created_after(mut self, t: DateTime<Utc>) -> Self {
        self.query = self.query.created_after(t);
        self
    }

    /// Only shipments created before `t`: bounds a walk over every page, so
    /// shipments created meanwhile do not shift the pages.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::chrono::Utc;
    /// let page = client.shipments().list().created_before(Utc::now()).send().await?;
    /// # Ok(()) }
    /// ```
    pub fn created_before(mut self, t: DateTime<Utc>) -> Self {
        self.query = self.query.created_before(t);
        self
    }

    /// Only shipments changed at or after `t` (how a webhook receiver
    /// catches up on deliveries it missed).
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::chrono::{Duration, Utc};
    /// let since = Utc::now() - Duration::hours(1);
    /// let changed = client.shipments().list().updated_after(since).send().await?;
    /// # Ok(()) }
    /// ```
    pub fn updated_after(mut self, t: DateTime<Utc>) -> Self {
        self.query = self.query.updated_after(t);
        self
    }

    /// Page number `page`, from 1 (default 1); a stream starts there.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let second = client.shipments().list().page(2).send().await?;
    /// # Ok(()) }
    /// ```
    pub fn page(mut self, page: u32) -> Self {
        self.query = self.query.page(page);
        self
    }

    /// `page_size` shipments per page, 1 to 100 (default 20). A stream over
    /// many pages is quicker with 100.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let page = client.shipments().list().page_size(100).send().await?;
    /// # Ok(()) }
    /// ```
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.query = self.query.page_size(page_size);
        self
    }

    /// Replaces the whole query (filters and paging) at once, for a query
    /// built elsewhere.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::{ListShipments, Status};
    /// let query = ListShipments::default().status(Status::Failed).page_size(10);
    /// let failed = client.shipments().list().query(query).send().await?;
    /// # Ok(()) }
    /// ```
    pub fn query(mut self, query: ListShipments) -> Self {
        self.query = query;
        self
    }

    /// Fetches the page. It fails with
    /// [`Error::InvalidPageSize`](crate::Error::InvalidPageSize) or
    /// [`Error::InvalidPage`](crate::Error::InvalidPage) before sending
    /// when the paging is out of range. For every shipment across all pages,
    /// turn the page into a stream with [`Page::into_stream`].
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use futures_util::TryStreamExt as _;
    /// let page = client.shipments().list().page_size(100).send().await?;
    /// println!("{} shipments in {} pages", page.total, page.total_pages);
    /// let every: Vec<_> = page.into_stream().try_collect().await?;
    /// # Ok(()) }
    /// ```
    pub async fn send(self) -> Result<Page<Shipment>> {
        checks::list_query(&self.query)?;
        let call = Call::get("/shipments", "/shipments").query(&self.query)?;
        self.client.transport.page(call).await
    }
}
