//! Courier companies: the ones linked to the merchant, with their fees.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::{CourierId, timestamp};

/// A courier company linked to the merchant (`GET /merchant-couriers`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct CourierCompany {
    /// The identifier used as `courier_company_id`.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub id: CourierId,
    /// Display name.
    #[cfg_attr(feature = "openapi", schema(example = "Swift Couriers"))]
    pub name: String,
    /// Whether the company takes new shipments.
    pub active: bool,
    /// Fixed part of the fee.
    #[serde(with = "rust_decimal::serde::float")]
    #[cfg_attr(feature = "openapi", schema(example = 5.0))]
    pub base_fee: Decimal,
    /// Fee per kilogram.
    #[serde(with = "rust_decimal::serde::float")]
    #[cfg_attr(feature = "openapi", schema(example = 1.5))]
    pub per_kg: Decimal,
    /// Fee per kilometre of great-circle distance.
    #[serde(with = "rust_decimal::serde::float")]
    #[cfg_attr(feature = "openapi", schema(example = 0.1))]
    pub per_km: Decimal,
    /// When the company was linked to the merchant.
    #[serde(serialize_with = "timestamp::serialize")]
    pub linked_at: DateTime<Utc>,
}

impl CourierCompany {
    /// An active company with these fees, linked at `linked_at`.
    pub fn new(
        id: CourierId,
        name: impl Into<String>,
        fees: [Decimal; 3],
        linked_at: DateTime<Utc>,
    ) -> CourierCompany {
        let [base_fee, per_kg, per_km] = fees;
        CourierCompany {
            id,
            name: name.into(),
            active: true,
            base_fee,
            per_kg,
            per_km,
            linked_at,
        }
    }
}
