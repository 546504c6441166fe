//! Checks made before a request is sent, so a call that cannot succeed
//! costs no round trip and fails with a typed error.

use crate::error::{Error, Result};
use crate::model::ListShipments;

/// Crockford's base32 alphabet: digits and capitals without I, L, O, U.
const CROCKFORD: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Largest page the service serves.
pub(crate) const MAX_PAGE_SIZE: u32 = 100;

/// `SHP-XXXX-XXXX` with the X from the Crockford alphabet.
pub(crate) fn shipment_code(code: &str) -> Result<&str> {
    let b = code.as_bytes();
    let ok = b.len() == 13
        && code.starts_with("SHP-")
        && b[8] == b'-'
        && b[4..8]
            .iter()
            .chain(&b[9..13])
            .all(|c| CROCKFORD.contains(c));
    if ok {
        Ok(code)
    } else {
        Err(Error::InvalidShipmentCode(code.to_owned()))
    }
}

/// A rating from 1 to 10.
pub(crate) fn rating(rating: u8) -> Result<u8> {
    if (1..=10).contains(&rating) {
        Ok(rating)
    } else {
        Err(Error::InvalidRating(rating))
    }
}

/// A page number from 1 and a page size from 1 to 100, where given.
pub(crate) fn paging(page: Option<u32>, page_size: Option<u32>) -> Result<()> {
    if page == Some(0) {
        return Err(Error::InvalidPage);
    }
    match page_size {
        Some(size) if !(1..=MAX_PAGE_SIZE).contains(&size) => Err(Error::InvalidPageSize(size)),
        _ => Ok(()),
    }
}

/// The paging of a shipment query.
pub(crate) fn list_query(query: &ListShipments) -> Result<()> {
    paging(query.page, query.page_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_codes_pass() {
        for code in ["SHP-7K3M-Q9ZX", "SHP-0000-ZZZZ", "SHP-ABCD-EFGH"] {
            assert_eq!(shipment_code(code).unwrap(), code);
        }
    }

    #[test]
    fn malformed_codes_are_refused() {
        for code in [
            "",
            "SHP-7K3M-Q9Z",
            "SHP-7K3M-Q9ZXX",
            "shp-7k3m-q9zx",
            "SHP-7K3M_Q9ZX",
            "SHX-7K3M-Q9ZX",
            "SHP-7K3I-Q9ZX",
            "SHP-7K3L-Q9ZX",
            "SHP-7K3O-Q9ZX",
            "SHP-7K3U-Q9ZX",
            "SHP-7K3M-Q9Z/",
            "../../api-keys",
            "SHP-ÄK3-Q9ZX",
        ] {
            assert!(
                matches!(shipment_code(code), Err(Error::InvalidShipmentCode(c)) if c == code),
                "{code}"
            );
        }
    }

    #[test]
    fn ratings_run_from_one_to_ten() {
        assert!(matches!(rating(0), Err(Error::InvalidRating(0))));
        assert!(matches!(rating(11), Err(Error::InvalidRating(11))));
        for r in 1..=10 {
            assert_eq!(rating(r).unwrap(), r);
        }
    }

    #[test]
    fn page_sizes_run_from_one_to_a_hundred() {
        assert!(matches!(
            paging(None, Some(0)),
            Err(Error::InvalidPageSize(0))
        ));
        assert!(matches!(
            paging(None, Some(101)),
            Err(Error::InvalidPageSize(101))
        ));
        assert!(matches!(paging(Some(0), None), Err(Error::InvalidPage)));
        assert!(paging(Some(1), Some(1)).is_ok());
        assert!(paging(None, Some(100)).is_ok());
        assert!(paging(None, None).is_ok());
    }
}
