//! The shipment list's query string (and the delivery log's paging): any
//! string is a query within the documented bounds or a field error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shipment_server::harness::{ListQuery, MAX_PAGE, MAX_PAGE_SIZE, parse_page};

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(query) = ListQuery::parse(raw) {
        assert!((1..=MAX_PAGE).contains(&query.page));
        assert!((1..=MAX_PAGE_SIZE).contains(&query.page_size));
        assert!(query.offset() >= 0);
        assert!(query.courier_company_id.is_none_or(|id| id.get() > 0));
    }
    if let Ok((page, page_size)) = parse_page(raw) {
        assert!((1..=MAX_PAGE).contains(&page));
        assert!((1..=MAX_PAGE_SIZE).contains(&page_size));
    }
});
