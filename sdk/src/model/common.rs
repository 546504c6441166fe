//! What every resource shares: the list envelopes [`Page`] and [`List`],
//! and the serde helper for decimal request fields.

use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use super::openapi;

/// One page of a list, with enough to walk the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
}

/// A list that is never paginated, such as `GET /merchant-couriers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct List<T> {
    /// Every item.
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::list_data::<T>))]
    pub data: Vec<T>,
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
