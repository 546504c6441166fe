//! The `"lat,lng"` address parser behind the fee's distance term: what it
//! accepts is on Earth, and the distance between two such points is finite
//! and at most half the circumference.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shipment_server::harness::Coordinates;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Two addresses from one input: split at the first newline.
    let (a, b) = text.split_once('\n').unwrap_or((text, "0,0"));
    let (Some(a), Some(b)) = (Coordinates::parse(a), Coordinates::parse(b)) else {
        return;
    };
    for point in [a, b] {
        assert!((-90.0..=90.0).contains(&point.lat));
        assert!((-180.0..=180.0).contains(&point.lng));
    }
    let d = a.distance_km(b);
    assert!(d.is_finite() && d >= 0.0 && d <= 20_016.0, "{d}");
});
