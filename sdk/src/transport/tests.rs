//! Unit tests of the transport: URLs, queries, and what `Debug` shows.

use super::*;

#[test]
fn base_urls_lose_their_trailing_slash_and_must_be_http() {
    assert_eq!(
        normalize_base_url("http://127.0.0.1:8080/api/v1/")
            .unwrap()
            .as_str(),
        "http://127.0.0.1:8080/api/v1"
    );
    assert!(normalize_base_url("ftp://example.com/api/v1").is_err());
    assert!(normalize_base_url("not a url").is_err());
    assert!(normalize_base_url("https://example.com/api/v1?x=1").is_err());
}

#[test]
fn paths_and_queries_are_appended_to_the_base() {
    let t = Transport::new(
        &HttpOptions::default(),
        normalize_base_url("http://h:1/api/v1").unwrap(),
        Auth::None,
    )
    .unwrap();
    let call = Call::get("/shipments", "/shipments")
        .query(&crate::model::ListShipments::default().page(2).page_size(5))
        .unwrap();
    assert_eq!(
        t.url(&call).as_str(),
        "http://h:1/api/v1/shipments?page=2&page_size=5"
    );
}

#[test]
fn set_param_replaces_in_place_and_the_next_page_shows_its_query() {
    let call = Call::get("/shipments", "/shipments")
        .query(&crate::model::ListShipments::default().page(1).page_size(5))
        .unwrap()
        .param("status", "delivered");
    let t = Transport::new(
        &HttpOptions::default(),
        normalize_base_url("http://h:1/api/v1").unwrap(),
        Auth::ApiKey(Auth::sensitive("sk_test_supersecret").unwrap()),
    )
    .unwrap();
    assert_eq!(
        t.url(&call.clone().set_param("page", 7)).as_str(),
        "http://h:1/api/v1/shipments?page=7&page_size=5&status=delivered"
    );
    assert_eq!(
        t.url(&call.clone().set_param("cursor", "x")).as_str(),
        "http://h:1/api/v1/shipments?page=1&page_size=5&status=delivered&cursor=x"
    );
    let next = NextPage { transport: t, call };
    assert_eq!(
        format!("{next:?}"),
        "GET /shipments?page_size=5&status=delivered"
    );
}

#[test]
fn credentials_stay_out_of_debug_output() {
    let t = Transport::new(
        &HttpOptions::default(),
        normalize_base_url("http://h:1/api/v1").unwrap(),
        Auth::ApiKey(Auth::sensitive("sk_test_supersecret").unwrap()),
    )
    .unwrap();
    let shown = format!("{t:?}");
    assert!(!shown.contains("supersecret"), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
}
