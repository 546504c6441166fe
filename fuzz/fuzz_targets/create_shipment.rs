//! The create-shipment body as the server reads it: JSON to the wire type
//! (with the server's error mapping), validation, then the fee. Any input
//! must end in a 400 problem or a fee that fits in minor units, never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rust_decimal::Decimal;
use shipment_sdk::model::{CourierId, CreateShipment};
use shipment_server::harness::{Pricing, to_minor_units, total_fee};
use shipment_server::harness::NewShipment;
use shipment_server::harness::parse_json;

fuzz_target!(|data: &[u8]| {
    let request: CreateShipment = match parse_json(data) {
        Ok(request) => request,
        Err(problem) => {
            assert_eq!(problem.status().as_u16(), 400, "{}", problem.code());
            return;
        }
    };
    // What the server hashes for Idempotency-Key must always serialize.
    serde_json::to_vec(&request).expect("a parsed request serializes");
    let Ok(new) = NewShipment::parse(request) else {
        return;
    };
    // The weight kept is the weight a client reads back: it survives the
    // wire's JSON number exactly.
    if let Some(weight) = new.weight_kg {
        let wire = serde_json::to_vec(&CreateShipment::new(CourierId::new(1)).weight_kg(weight)).unwrap();
        let back: CreateShipment = serde_json::from_slice(&wire).unwrap();
        assert_eq!(
            back.weight_kg,
            Some(weight),
            "{}",
            String::from_utf8_lossy(&wire)
        );
    }
    // A dear courier: the formula must not overflow for any validated request.
    let pricing = Pricing {
        base_fee: Decimal::new(99_999, 2),
        per_kg: Decimal::new(99_999, 2),
        per_km: Decimal::new(99_999, 2),
    };
    let total = total_fee(
        pricing,
        new.weight_kg,
        new.start_address.as_deref(),
        new.end_address.as_deref(),
    );
    assert!(total >= pricing.base_fee);
    assert!(to_minor_units(total).is_some(), "{total}");
});
