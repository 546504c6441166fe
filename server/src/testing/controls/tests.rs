//! Unit tests of the test controls: fault bodies, taking faults, paths.

use super::*;
use crate::test_controls::FaultAction;

fn body(json: serde_json::Value) -> ArmFault {
    serde_json::from_value(json).unwrap()
}

fn fault(json: serde_json::Value) -> Fault {
    parse_fault(body(json)).unwrap()
}

#[test]
fn a_fault_takes_one_kind_a_known_status_and_a_path_under_the_api() {
    let refused = |json: serde_json::Value| {
        let e = parse_fault(body(json)).unwrap_err();
        (e.kind, e.field)
    };
    use crate::domain::FieldErrorKind::{Invalid, Missing};
    let base = |extra: serde_json::Value| {
        let mut v = serde_json::json!({"method": "post", "path": "/shipments"});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    assert_eq!(
        refused(base(serde_json::json!({}))),
        (Missing, "status".into())
    );
    assert_eq!(
        refused(base(serde_json::json!({"status": 404}))),
        (Invalid, "status".into())
    );
    assert_eq!(
        refused(base(serde_json::json!({"status": 503, "delay_ms": 5}))),
        (Invalid, "delay_ms".into())
    );
    assert_eq!(
        refused(base(
            serde_json::json!({"delay_ms": 5, "drop_connection": true})
        )),
        (Invalid, "drop_connection".into())
    );
    assert_eq!(
        refused(base(serde_json::json!({"status": 503, "times": 0}))),
        (Invalid, "times".into())
    );
    assert_eq!(
        refused(base(serde_json::json!({"status": 503, "times": 1001}))),
        (Invalid, "times".into())
    );
    assert_eq!(
        refused(base(serde_json::json!({"delay_ms": 5, "retry_after": 1}))),
        (Invalid, "retry_after".into())
    );
    assert_eq!(
        refused(base(serde_json::json!({"delay_ms": 0}))),
        (Invalid, "delay_ms".into())
    );
    for path in [
        "shipments",
        "/api/v1/shipments",
        "/testing/faults",
        "/a?b=1",
        "/a\tb",
        "/a\nb",
        "/a\u{1b}[2J",
        // C1 controls are not ASCII, yet a terminal obeys them.
        "/a\u{9b}2J",
        "/a\u{85}",
    ] {
        let json = serde_json::json!({"method": "GET", "path": path, "status": 500});
        assert_eq!(refused(json), (Invalid, "path".into()), "{path}");
    }
    let json = serde_json::json!({"method": "GE T", "path": "/x", "status": 500});
    assert_eq!(refused(json), (Invalid, "method".into()));

    let ok = fault(base(
        serde_json::json!({"status": 503, "retry_after": 1, "times": 2}),
    ));
    assert_eq!(ok.method, "POST");
    assert_eq!(
        (ok.status, ok.retry_after, ok.times),
        (Some(503), Some(1), 2)
    );
    let dropping = fault(base(
        serde_json::json!({"drop_connection": true, "status": null}),
    ));
    assert!(dropping.drop_connection);
    assert_eq!(dropping.times, 1);
}

#[test]
fn faults_match_by_template_or_path_and_are_used_up() {
    let controls = TestControls::default();
    assert!(!controls.any_faults());
    let armed = controls
        .arm(
            MerchantId::new(7),
            fault(
                serde_json::json!({"method": "GET", "path": "/shipments/{code}", "status": 500, "times": 2}),
            ),
        )
        .unwrap();
    assert_eq!(armed.id, 1);
    assert!(controls.any_faults());
    let take = |merchant, method, template, path| {
        controls.take_fault(merchant, method, template, path, true)
    };
    let get = Some("/shipments/{code}");
    assert_eq!(
        take(MerchantId::new(8), "GET", get, "/shipments/SHP-1"),
        None,
        "other merchant"
    );
    assert_eq!(
        take(MerchantId::new(7), "POST", get, "/shipments/SHP-1"),
        None,
        "other method"
    );
    let answer = Some(FaultAction::Answer {
        status: 500,
        retry_after: None,
    });
    assert_eq!(
        take(MerchantId::new(7), "GET", get, "/shipments/SHP-1"),
        answer
    );
    assert_eq!(
        take(MerchantId::new(7), "GET", get, "/shipments/SHP-2"),
        answer
    );
    assert_eq!(
        take(MerchantId::new(7), "GET", get, "/shipments/SHP-3"),
        None,
        "used up"
    );
    assert!(!controls.any_faults());

    // A concrete path, and a drop only where the connection can drop.
    controls
        .arm(
            MerchantId::new(7),
            fault(
                serde_json::json!({"method": "GET", "path": "/shipments/SHP-1", "drop_connection": true}),
            ),
        )
        .unwrap();
    assert_eq!(
        controls.take_fault(MerchantId::new(7), "GET", get, "/shipments/SHP-1", false),
        None
    );
    assert_eq!(
        take(MerchantId::new(7), "GET", get, "/shipments/SHP-2"),
        None
    );
    assert_eq!(
        take(MerchantId::new(7), "GET", get, "/shipments/SHP-1"),
        Some(FaultAction::DropConnection)
    );
    controls
        .arm(
            MerchantId::new(7),
            fault(serde_json::json!({"method": "GET", "path": "/x", "delay_ms": 5})),
        )
        .unwrap();
    controls.disarm(MerchantId::new(7));
    assert!(!controls.any_faults());
}
