//! `client.shipments()`: the shipment endpoints of the merchant API.

use std::collections::VecDeque;

use futures_core::Stream;
use reqwest::Method;

use crate::checks;
use crate::client::Client;
use crate::error::Result;
use crate::model::{ConfirmationCode, CreateShipment, ListShipments, Page, RateShipment, Shipment};
use crate::transport::{Call, Retry};

/// The page size [`Shipments::list_all`] uses when the query sets none.
pub const LIST_ALL_PAGE_SIZE: u32 = 100;

/// The shipment endpoints; get one with [`Client::shipments`].
#[derive(Debug, Clone, Copy)]
pub struct Shipments<'a> {
    client: &'a Client,
}

impl<'a> Shipments<'a> {
    pub(crate) fn new(client: &'a Client) -> Self {
        Shipments { client }
    }

    /// Creates a shipment (`POST /shipments`) and returns it, in
    /// `assigned_to_courier`.
    ///
    /// The SDK sends an `Idempotency-Key` it generates once for this call
    /// and reuses on every retry, so a retried create never makes a second
    /// shipment. To make creation safe across process restarts too, pick
    /// your own key with [`create_with_idempotency_key`](Self::create_with_idempotency_key).
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::CreateShipment;
    /// let shipment = client
    ///     .shipments()
    ///     .create(
    ///         &CreateShipment::new(7)
    ///             .description("Two boxes of books")
    ///             .weight_kg("4.5".parse().unwrap())
    ///             .start_address("52.5200,13.4050")
    ///             .end_address("52.3759,4.8975"),
    ///     )
    ///     .await?;
    /// println!("{} costs {}", shipment.code, shipment.total_fee);
    /// # Ok(()) }
    /// ```
    pub async fn create(&self, request: &CreateShipment) -> Result<Shipment> {
        let key = uuid::Uuid::new_v4().to_string();
        self.create_with_idempotency_key(request, &key).await
    }

    /// Creates a shipment with an `Idempotency-Key` of your choosing: the
    /// same key and body within 24 hours return the first shipment instead
    /// of a second one; the same key with another body is a 409
    /// `idempotency_conflict`. The key is 1 to 255 visible ASCII
    /// characters, else [`Error::InvalidIdempotencyKey`](crate::Error::InvalidIdempotencyKey)
    /// before sending.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::CreateShipment;
    /// // e.g. your own order number, so a crash and restart cannot ship twice
    /// let shipment = client
    ///     .shipments()
    ///     .create_with_idempotency_key(&CreateShipment::new(7), "order-10293")
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_with_idempotency_key(
        &self,
        request: &CreateShipment,
        idempotency_key: &str,
    ) -> Result<Shipment> {
        let key = checks::idempotency_key(idempotency_key)?;
        let call = Call::new(Method::POST, "/shipments", "/shipments")
            .json(request)?
            .retry(Retry::WithIdempotencyKey(key.to_owned()));
        self.client.transport.json(call).await
    }

    /// One page of the merchant's shipments, newest first
    /// (`GET /shipments`).
    ///
    /// Fails with [`Error::InvalidPageSize`](crate::Error::InvalidPageSize)
    /// or [`Error::InvalidPage`](crate::Error::InvalidPage) before sending
    /// when the paging is out of range.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::{ListShipments, Status};
    /// let page = client
    ///     .shipments()
    ///     .list(&ListShipments::default().status(Status::InTransit).page_size(50))
    ///     .await?;
    /// println!("{} of {} in transit", page.data.len(), page.total);
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, query: &ListShipments) -> Result<Page<Shipment>> {
        list_page(self.client, query).await
    }

    /// Every shipment matching `query`, across all pages, as a stream; the
    /// next page is fetched when the current one is used up. Starts at
    /// `query.page` (default 1), with `query.page_size` (default
    /// [`LIST_ALL_PAGE_SIZE`]). An error ends the stream after it is
    /// yielded.
    ///
    /// Pages are counted from the newest shipment, so shipments created
    /// while the stream runs can make an item appear twice; use a
    /// `created_before` bound for an exact walk.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use futures_util::TryStreamExt as _;
    /// use shipment_sdk::model::{ListShipments, Status};
    /// let delivered = client
    ///     .shipments()
    ///     .list_all(ListShipments::default().status(Status::Delivered));
    /// let mut delivered = std::pin::pin!(delivered);
    /// while let Some(shipment) = delivered.try_next().await? {
    ///     println!("{} delivered at {:?}", shipment.code, shipment.delivered_at);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn list_all(
        &self,
        query: ListShipments,
    ) -> impl Stream<Item = Result<Shipment>> + Send + 'static {
        let mut query = query;
        query.page = Some(query.page.unwrap_or(1));
        query.page_size = Some(query.page_size.unwrap_or(LIST_ALL_PAGE_SIZE));
        let state = Walk {
            client: self.client.clone(),
            query: Some(query),
            buffer: VecDeque::new(),
        };
        futures_util::stream::unfold(state, |mut walk| async move {
            loop {
                if let Some(item) = walk.buffer.pop_front() {
                    return Some((Ok(item), walk));
                }
                let query = walk.query.take()?;
                match list_page(&walk.client, &query).await {
                    Ok(page) => {
                        let last = page.data.is_empty() || u64::from(page.page) >= page.total_pages;
                        if !last {
                            walk.query = Some(ListShipments {
                                page: Some(page.page + 1),
                                ..query
                            });
                        }
                        walk.buffer.extend(page.data);
                    }
                    Err(e) => return Some((Err(e), walk)),
                }
            }
        })
    }

    /// One shipment by its code (`GET /shipments/:code`). A code of another
    /// merchant's shipment is a 403, an unknown one a 404.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let shipment = client.shipments().get("SHP-7K3M-Q9ZX").await?;
    /// println!("{} is {}", shipment.code, shipment.status);
    /// # Ok(()) }
    /// ```
    pub async fn get(&self, code: &str) -> Result<Shipment> {
        let code = checks::shipment_code(code)?;
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
    pub async fn cancel(&self, code: &str) -> Result<Shipment> {
        let code = checks::shipment_code(code)?;
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
    pub async fn rate(&self, code: &str, rating: u8) -> Result<Shipment> {
        let code = checks::shipment_code(code)?;
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
    pub async fn generate_confirmation_code(&self, code: &str) -> Result<ConfirmationCode> {
        let code = checks::shipment_code(code)?;
        let call = Call::new(
            Method::POST,
            "/shipments/{code}/generate-confirmation-code",
            format!("/shipments/{code}/generate-confirmation-code"),
        );
        self.client.transport.json(call).await
    }
}

/// State of a [`Shipments::list_all`] walk.
struct Walk {
    client: Client,
    /// The next page to fetch; `None` once the last one was fetched.
    query: Option<ListShipments>,
    buffer: VecDeque<Shipment>,
}

async fn list_page(client: &Client, query: &ListShipments) -> Result<Page<Shipment>> {
    checks::list_query(query)?;
    let call = Call::get("/shipments", "/shipments").query(query)?;
    client.transport.json(call).await
}
