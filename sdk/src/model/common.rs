//! What every resource shares: the list envelopes [`Page`] and [`List`],
//! and the serde helper for decimal request fields.

use std::fmt;

use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use super::openapi;

/// One page of a list, with enough to walk the rest.
///
/// A page the client fetched ([`Shipments::list`](crate::Shipments::list),
/// [`Webhooks::deliveries`](crate::Webhooks::deliveries)) remembers its
/// query, so [`into_stream`](Page::into_stream) yields its items and then
/// those of every following page, and [`next_page`](Page::next_page)
/// fetches the one after it. A page built with [`Page::new`] or read from
/// JSON has only its own items.
///
/// ```
/// use shipment_sdk::model::Page;
/// let page = Page::new(vec!["a", "b"], 1, 2, 5);
/// assert_eq!(page.total_pages, 3);
/// assert!(!page.is_last());
/// ```
#[derive(Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// The OpenAPI document describes the wire, not the Rust API above.
#[cfg_attr(
    feature = "openapi",
    schema(description = "One page of a list, with enough to walk the rest.")
)]
#[non_exhaustive]
pub struct Page<T> {
    /// The items of this page.
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::page_data::<T>))]
    pub data: Vec<T>,
    /// This page's number, from 1.
    pub page: u32,
    /// The page size used.
    pub page_size: u32,
    /// Items across all pages.
    pub total: u64,
    /// Number of pages (0 when there are no items).
    pub total_pages: u64,
    /// The cursor of the page after this one: pass it back as the
    /// `cursor` parameter, with the same filters, to go on from this
    /// page's last item whatever was created or changed meanwhile. `null`
    /// on the last page, and on lists that have no cursors (webhook
    /// deliveries). Opaque: its format may change.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// How to fetch the following pages: set on pages the client fetched,
    /// never on the wire.
    #[cfg(feature = "client")]
    #[serde(skip)]
    next: Option<crate::transport::NextPage>,
}

impl<T> Page<T> {
    /// Page number `page` (from 1) of `page_size` items, `data`, out of
    /// `total` items across all pages; `total_pages` is worked out
    /// (0 when `total` or `page_size` is 0).
    ///
    /// ```
    /// use shipment_sdk::model::Page;
    /// let page = Page::new(vec![1, 2, 3], 2, 3, 7);
    /// assert_eq!((page.page, page.total_pages), (2, 3));
    /// assert_eq!(Page::<u8>::new(vec![], 1, 20, 0).total_pages, 0);
    /// ```
    pub fn new(data: Vec<T>, page: u32, page_size: u32, total: u64) -> Page<T> {
        let total_pages = match page_size {
            0 => 0,
            size => total.div_ceil(u64::from(size)),
        };
        Page {
            data,
            page,
            page_size,
            total,
            total_pages,
            next_cursor: None,
            #[cfg(feature = "client")]
            next: None,
        }
    }

    /// Whether no page follows this one: it is the last page
    /// (`page >= total_pages`, or on a page with a cursor, one without a
    /// [`next_cursor`](Page::next_cursor)) or an empty one.
    pub fn is_last(&self) -> bool {
        self.data.is_empty() || u64::from(self.page) >= self.total_pages
    }
}

#[cfg(feature = "client")]
impl<T> Page<T> {
    /// Remembers how to fetch the following pages.
    pub(crate) fn with_next(mut self, next: crate::transport::NextPage) -> Page<T> {
        self.next = Some(next);
        self
    }

    /// How to fetch the page after this one: by its cursor when this page
    /// gave one, else by its number (a list without cursors, or a server
    /// from before them); `None` on the last page and on pages the client
    /// did not fetch. A page fetched by cursor without a `next_cursor` is
    /// the last, whatever its `total_pages` says: items created during the
    /// walk raise the total but come before the walk's first page.
    fn following(&self) -> Option<(crate::transport::NextPage, crate::transport::Step)> {
        use crate::transport::Step;
        let next = self.next.clone()?;
        if self.data.is_empty() {
            return None;
        }
        if let Some(cursor) = &self.next_cursor {
            return Some((next, Step::Cursor(cursor.clone())));
        }
        if next.by_cursor() || self.is_last() {
            return None;
        }
        Some((next, Step::Page(self.page.checked_add(1)?)))
    }
}

#[cfg(feature = "client")]
impl<T: serde::de::DeserializeOwned + Send + 'static> Page<T> {
    /// Fetches the page after this one with the same query; `Ok(None)` when
    /// this is the last page, or a page the client did not fetch.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// let mut page = client.shipments().list().page_size(50).send().await?;
    /// loop {
    ///     for shipment in &page.data {
    ///         println!("{} {}", shipment.code, shipment.status);
    ///     }
    ///     match page.next_page().await? {
    ///         Some(next) => page = next,
    ///         None => break,
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn next_page(&self) -> crate::Result<Option<Page<T>>> {
        match self.following() {
            Some((next, step)) => next.fetch(step).await.map(Some),
            None => Ok(None),
        }
    }

    /// This page's items, then those of every following page, fetched one
    /// page at a time when the previous one is used up: memory stays at one
    /// page however long the list. The stream ends after the last page (or
    /// an empty one), and after yielding an error. A page the client did
    /// not fetch (built with [`Page::new`], read from JSON) streams its own
    /// items only.
    ///
    /// On a list with cursors (shipments), each page continues after the
    /// last item of the one before, so every item that existed when the
    /// stream started is yielded exactly once, whatever is created or
    /// changed meanwhile (an item changed out of the query's filters before
    /// the stream reaches it is not yielded), and each page costs the
    /// server the same however far the stream has gone. On a list without
    /// cursors, pages are counted from the newest item, so items created
    /// while the stream runs can shift an item onto the next page and show
    /// it twice.
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// use futures_util::TryStreamExt as _;
    /// use shipment_sdk::model::Status;
    /// let delivered = client
    ///     .shipments()
    ///     .list()
    ///     .status(Status::Delivered)
    ///     .page_size(100)
    ///     .send()
    ///     .await?
    ///     .into_stream();
    /// let mut delivered = std::pin::pin!(delivered);
    /// while let Some(shipment) = delivered.try_next().await? {
    ///     println!("{} delivered at {:?}", shipment.code, shipment.delivered_at);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn into_stream(
        self,
    ) -> impl futures_core::Stream<Item = crate::Result<T>> + Send + 'static {
        let following = self.following();
        let state = (self.data.into_iter(), following);
        futures_util::stream::unfold(state, |(mut items, mut following)| async move {
            loop {
                if let Some(item) = items.next() {
                    return Some((Ok(item), (items, following)));
                }
                let (next, step) = following.take()?;
                match next.fetch::<T>(step).await {
                    Ok(page) => {
                        following = page.following();
                        items = page.data.into_iter();
                    }
                    Err(e) => return Some((Err(e), (items, None))),
                }
            }
        })
    }
}

/// Pages are equal when their fields are: how the client would fetch the
/// next one does not count.
impl<T: PartialEq> PartialEq for Page<T> {
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data
            && self.page == other.page
            && self.page_size == other.page_size
            && self.total == other.total
            && self.total_pages == other.total_pages
            && self.next_cursor == other.next_cursor
    }
}

impl<T: fmt::Debug> fmt::Debug for Page<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Page");
        s.field("data", &self.data)
            .field("page", &self.page)
            .field("page_size", &self.page_size)
            .field("total", &self.total)
            .field("total_pages", &self.total_pages);
        if let Some(cursor) = &self.next_cursor {
            s.field("next_cursor", cursor);
        }
        // Only on fetched pages, as the call they came from.
        #[cfg(feature = "client")]
        if let Some(next) = &self.next {
            s.field("next", next);
        }
        s.finish()
    }
}

/// A list that is never paginated, such as `GET /merchant-couriers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct List<T> {
    /// Every item.
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::list_data::<T>))]
    pub data: Vec<T>,
}

impl<T> List<T> {
    /// The list of `data`.
    ///
    /// ```
    /// let list = shipment_sdk::model::List::new(vec![1, 2]);
    /// assert_eq!(list.data, [1, 2]);
    /// ```
    pub fn new(data: Vec<T>) -> List<T> {
        List { data }
    }
}

/// An optional money-or-weight field of a request, read only from a JSON
/// number (or null): `"weight_kg": "1"` is a wrong type, not a weight, as
/// the OpenAPI document says. Written like `rust_decimal::serde::float_option`.
pub(super) mod number_option {
    use std::fmt;
    use std::str::FromStr;

    use rust_decimal::Decimal;
    use serde::Deserializer;
    use serde::de::{Error, Unexpected, Visitor};

    pub use rust_decimal::serde::float_option::serialize;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
        d.deserialize_option(NumberVisitor)
    }

    struct NumberVisitor;

    impl<'de> Visitor<'de> for NumberVisitor {
        type Value = Option<Decimal>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a number")
        }

        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(NumberVisitor)
        }

        fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(Decimal::from(v)))
        }

        fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(Decimal::from(v)))
        }

        fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
            // Through the shortest text that reads back as `v`, as
            // rust_decimal does, so `4.5` is exactly 4.5.
            Decimal::from_str(&v.to_string())
                .map(Some)
                .map_err(|_| E::invalid_value(Unexpected::Float(v), &self))
        }
    }
}
