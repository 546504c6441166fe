//! Fees: the address/coordinate parser and the fee formula of DESIGN §3.

use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::{Decimal, RoundingStrategy};

/// Mean Earth radius used for great-circle distances, in kilometres.
const EARTH_RADIUS_KM: f64 = 6371.0088;

/// A point on Earth in degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coordinates {
    /// Latitude, -90 to 90.
    pub lat: f64,
    /// Longitude, -180 to 180.
    pub lng: f64,
}

impl Coordinates {
    /// Reads `"lat,lng"` text (spaces around either number allowed).
    ///
    /// Any other address text is an ordinary street address and yields
    /// `None`: the interface accepts both, and only coordinates give a
    /// distance.
    pub fn parse(text: &str) -> Option<Coordinates> {
        let (lat, lng) = text.split_once(',')?;
        let lat: f64 = lat.trim().parse().ok()?;
        let lng: f64 = lng.trim().parse().ok()?;
        let valid = lat.is_finite()
            && lng.is_finite()
            && (-90.0..=90.0).contains(&lat)
            && (-180.0..=180.0).contains(&lng);
        valid.then_some(Coordinates { lat, lng })
    }

    /// Great-circle (haversine) distance to `other`, in kilometres.
    pub fn distance_km(self, other: Coordinates) -> f64 {
        let (phi1, phi2) = (self.lat.to_radians(), other.lat.to_radians());
        let d_phi = (other.lat - self.lat).to_radians();
        let d_lambda = (other.lng - self.lng).to_radians();
        let a =
            (d_phi / 2.0).sin().powi(2) + phi1.cos() * phi2.cos() * (d_lambda / 2.0).sin().powi(2);
        2.0 * EARTH_RADIUS_KM * a.sqrt().clamp(0.0, 1.0).asin()
    }
}

/// A courier company's price list, in currency units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// Fixed part.
    pub base_fee: Decimal,
    /// Per kilogram.
    pub per_kg: Decimal,
    /// Per kilometre of great-circle distance.
    pub per_km: Decimal,
}

/// `base_fee + per_kg × weight + per_km × distance`, rounded half-even to
/// two places. The distance term counts only when both addresses are
/// coordinates; a missing weight counts as zero.
pub fn total_fee(
    pricing: Pricing,
    weight_kg: Option<Decimal>,
    start: Option<&str>,
    end: Option<&str>,
) -> Decimal {
    let distance_km = match (
        start.and_then(Coordinates::parse),
        end.and_then(Coordinates::parse),
    ) {
        (Some(a), Some(b)) => a.distance_km(b),
        _ => 0.0,
    };
    // Distances are physical measurements; a metre's precision is plenty and
    // keeps the decimal exact from here on.
    let distance = Decimal::from_f64((distance_km * 1000.0).round() / 1000.0).unwrap_or_default();
    let fee = pricing.base_fee
        + pricing.per_kg * weight_kg.unwrap_or_default()
        + pricing.per_km * distance;
    fee.round_dp_with_strategy(2, RoundingStrategy::MidpointNearestEven)
}

/// Converts an amount with at most two decimal places to minor units.
pub fn to_minor_units(amount: Decimal) -> Option<i64> {
    if amount.round_dp(2) != amount {
        return None;
    }
    (amount * Decimal::ONE_HUNDRED).to_i64()
}

/// Converts minor units back to an amount with two decimal places.
pub(crate) fn from_minor_units(minor: i64) -> Decimal {
    Decimal::new(minor, 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn pricing() -> Pricing {
        Pricing {
            base_fee: d("5.00"),
            per_kg: d("1.50"),
            per_km: d("0.10"),
        }
    }

    #[test]
    fn coordinates_are_read_with_or_without_spaces() {
        assert_eq!(
            Coordinates::parse("52.52, 13.405"),
            Some(Coordinates {
                lat: 52.52,
                lng: 13.405
            })
        );
        assert_eq!(
            Coordinates::parse(" -33.9,18.4 "),
            Some(Coordinates {
                lat: -33.9,
                lng: 18.4
            })
        );
    }

    #[test]
    fn street_addresses_and_out_of_range_pairs_are_not_coordinates() {
        for text in [
            "Main Street 1, Berlin",
            "91,0",
            "0,181",
            "NaN,1",
            "inf,2",
            "1",
            "",
            ",",
        ] {
            assert_eq!(Coordinates::parse(text), None, "{text}");
        }
    }

    #[test]
    fn berlin_to_amsterdam_is_about_577_km() {
        let berlin = Coordinates::parse("52.5200,13.4050").unwrap();
        let amsterdam = Coordinates::parse("52.3759,4.8975").unwrap();
        let km = berlin.distance_km(amsterdam);
        assert!((km - 576.9).abs() < 1.0, "{km}");
    }

    #[test]
    fn fee_without_coordinates_has_no_distance_term() {
        let fee = total_fee(pricing(), Some(d("2")), Some("Main St 1"), Some("52.3,4.8"));
        assert_eq!(fee, d("8.00"));
    }

    #[test]
    fn fee_with_coordinates_adds_the_distance() {
        let fee = total_fee(
            pricing(),
            Some(d("4.5")),
            Some("52.5200,13.4050"),
            Some("52.3759,4.8975"),
        );
        // 5 + 6.75 + 0.10 × ~576.5 km
        assert!(fee >= d("69.30") && fee <= d("69.50"), "{fee}");
        assert_eq!(fee.scale(), 2);
    }

    #[test]
    fn fee_rounds_half_to_even() {
        let p = Pricing {
            base_fee: d("0"),
            per_kg: d("0.01"),
            per_km: d("0"),
        };
        assert_eq!(total_fee(p, Some(d("2.5")), None, None), d("0.02"));
        assert_eq!(total_fee(p, Some(d("3.5")), None, None), d("0.04"));
    }

    #[test]
    fn minor_units_round_trip_and_refuse_fractions_of_a_cent() {
        assert_eq!(to_minor_units(d("12.75")), Some(1275));
        assert_eq!(from_minor_units(1275), d("12.75"));
        assert_eq!(to_minor_units(d("0.001")), None);
    }
}
