//! E-mail addresses as sign-in names: one normalisation for every path that
//! stores or looks one up, so `Zoë@Example.com ` signs in as `zoë@example.com`.

/// The form an e-mail address is stored, looked up and throttled under:
/// surrounding white space trimmed and every letter lowercased (Unicode, not
/// only ASCII): `"  Zoë@Example.COM "` is `"zoë@example.com"` (the tests
/// below hold it).
pub(crate) fn normalize(raw: &str) -> String {
    raw.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn case_and_surrounding_spaces_do_not_make_another_address() {
        for raw in [
            "zoë@example.com",
            "Zoë@Example.com",
            "ZOË@EXAMPLE.COM",
            " zoë@example.com",
            "zoë@example.com\t\n",
        ] {
            assert_eq!(normalize(raw), "zoë@example.com", "{raw:?}");
        }
    }

    #[test]
    fn inner_characters_are_kept() {
        assert_eq!(normalize("a.b+tag@example.com"), "a.b+tag@example.com");
    }
}
