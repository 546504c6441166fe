//! Create-shipment input: parsed into a [`NewShipment`] that is valid by
//! construction, with every limit named here and documented in the book
//! (`docs/src/running.md`, "Limits");
//! and the one check of control characters every stored text goes through
//! ([`no_control_characters`]).

use rust_decimal::{Decimal, RoundingStrategy};
use shipment_sdk::model::{CourierId, CreateShipment, WebhookUrl};

use super::field::FieldError;

/// Longest `description`, in characters.
pub(crate) const MAX_DESCRIPTION: usize = 2000;
/// Longest `dimensions` and item label, in characters.
pub(crate) const MAX_SHORT_TEXT: usize = 200;
/// Longest address, in characters.
pub(crate) const MAX_ADDRESS: usize = 500;
/// Most items on one shipment.
pub(crate) const MAX_ITEMS: usize = 100;
/// Heaviest shipment, in kilograms.
pub(crate) const MAX_WEIGHT_KG: i64 = 100_000;
/// Decimal places kept of `weight_kg`: grams. Finer digits are rounded
/// (half to even) rather than refused, since clients computing weights in
/// binary floating point send values such as `0.30000000000000004`; and
/// rounded they are, because the wire carries numbers as JSON floats, which
/// could not give back the 28 digits a `Decimal` can hold.
pub(crate) const WEIGHT_DECIMALS: u32 = 3;

/// A create request that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct NewShipment {
    /// Courier company (its link to the merchant is checked by the store).
    pub courier_company_id: CourierId,
    /// Free text.
    pub description: Option<String>,
    /// Greater than zero.
    pub weight_kg: Option<Decimal>,
    /// Free text.
    pub dimensions: Option<String>,
    /// Item labels.
    pub items: Vec<String>,
    /// Pickup location.
    pub start_address: Option<String>,
    /// Delivery location.
    pub end_address: Option<String>,
    /// The shipment's own webhook URL, normalised.
    pub webhook_url: Option<WebhookUrl>,
}

impl NewShipment {
    /// Checks every field of `req`.
    pub fn parse(req: CreateShipment) -> Result<NewShipment, FieldError> {
        if req.courier_company_id.get() <= 0 {
            return Err(FieldError::invalid(
                "courier_company_id",
                "`courier_company_id` must be a positive integer",
            ));
        }
        let weight_kg = req.weight_kg.map(|w| {
            w.round_dp_with_strategy(WEIGHT_DECIMALS, RoundingStrategy::MidpointNearestEven)
                .normalize()
        });
        if let Some(w) = weight_kg
            && (w <= Decimal::ZERO || w > Decimal::from(MAX_WEIGHT_KG))
        {
            return Err(FieldError::invalid(
                "weight_kg",
                format!("`weight_kg` must be at least 0.001 (a gram) and at most {MAX_WEIGHT_KG}"),
            ));
        }
        let description = text("description", req.description, MAX_DESCRIPTION)?;
        let dimensions = text("dimensions", req.dimensions, MAX_SHORT_TEXT)?;
        let start_address = text("start_address", req.start_address, MAX_ADDRESS)?;
        let end_address = text("end_address", req.end_address, MAX_ADDRESS)?;
        let items = req.items.unwrap_or_default();
        if items.len() > MAX_ITEMS {
            return Err(FieldError::invalid(
                "items",
                format!("at most {MAX_ITEMS} items per shipment"),
            ));
        }
        for item in &items {
            if item.trim().is_empty() || item.chars().count() > MAX_SHORT_TEXT {
                return Err(FieldError::invalid(
                    "items",
                    format!("each item must be 1 to {MAX_SHORT_TEXT} characters, not only spaces"),
                ));
            }
            no_control_characters("items", item)?;
        }
        let webhook_url = req
            .webhook_url
            .map(|u| webhook_url("webhook_url", &u))
            .transpose()?;
        Ok(NewShipment {
            courier_company_id: req.courier_company_id,
            description,
            weight_kg,
            dimensions,
            items,
            start_address,
            end_address,
            webhook_url,
        })
    }
}

fn text(field: &str, value: Option<String>, max: usize) -> Result<Option<String>, FieldError> {
    match value {
        Some(v) if v.chars().count() > max => Err(FieldError::invalid(
            field,
            format!("`{field}` must be at most {max} characters"),
        )),
        Some(v) => {
            no_control_characters(field, &v)?;
            Ok(Some(v))
        }
        None => Ok(None),
    }
}

/// Whether the server refuses `c` in the text it stores: a C0 control
/// character other than tab and newline (so carriage return too), DEL, or
/// a C1 control character (U+0080 to U+009F).
///
/// Whatever the server stores, it hands out again: to the dashboard, to
/// `shipctl` on a merchant's terminal, to webhook receivers' logs. An
/// escape sequence there (`ESC ] 0 ; … BEL`, `ESC [ 2 J`, or their one-
/// character C1 forms such as U+009B) would let one account rewrite
/// another's terminal, so none is let in. Tab and newline are text; NUL
/// is among the refused (PostgreSQL's `text` cannot hold it anyway).
pub(crate) fn is_refused_control(c: char) -> bool {
    matches!(c, '\0'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// What [`is_refused_control`] refuses, in words, for messages.
pub(crate) const CONTROL_CHARACTERS: &str =
    "control characters (U+0000 to U+001F except tab and newline, U+007F to U+009F)";

/// The first character of `value` that [`is_refused_control`] refuses,
/// described by its code point and position (`U+001B at character 3`):
/// never the character itself, which a terminal showing the message would
/// obey.
pub(crate) fn control_character(value: &str) -> Option<String> {
    let (at, c) = value
        .chars()
        .enumerate()
        .find(|(_, c)| is_refused_control(*c))?;
    Some(format!("U+{:04X} at character {}", u32::from(c), at + 1))
}

/// Refuses `value` when it holds a control character
/// ([`is_refused_control`]): `invalid_field` naming `field` and the first
/// such character ([`control_character`]).
pub(crate) fn no_control_characters(field: &str, value: &str) -> Result<(), FieldError> {
    match control_character(value) {
        None => Ok(()),
        Some(found) => Err(FieldError::invalid(
            field,
            format!("`{field}` must not contain {CONTROL_CHARACTERS}: {found}"),
        )),
    }
}

/// A webhook target as [`WebhookUrl::parse`] accepts it (HTTPS, no
/// credentials or fragment, at most [`WebhookUrl::MAX_LEN`] bytes, normalised), or a
/// refusal that says what is wrong. Whether the host is public is for
/// `webhooks::guard` to say.
pub(crate) fn webhook_url(field: &str, raw: &str) -> Result<WebhookUrl, FieldError> {
    WebhookUrl::parse(raw)
        .map_err(|e| FieldError::invalid(field, format!("`{field}` cannot be used: {e}")))
}

/// Longest driver name and failure reason, in characters.
pub(crate) const MAX_TEXT: usize = 500;

/// A courier's free text (a driver's name, a failure's reason): trimmed,
/// 1 to [`MAX_TEXT`] characters, no control characters
/// ([`no_control_characters`]).
pub(crate) fn courier_text(field: &str, value: &str) -> Result<String, FieldError> {
    // Checked as sent, before trimming: `\r` at an end is refused too, as
    // the OpenAPI document's pattern says.
    no_control_characters(field, value)?;
    let value = value.trim();
    if value.is_empty() || value.chars().count() > MAX_TEXT {
        return Err(FieldError::invalid(
            field,
            format!("`{field}` must be 1 to {MAX_TEXT} characters"),
        ));
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> CreateShipment {
        CreateShipment::new(CourierId::new(7))
    }

    #[test]
    fn a_minimal_request_is_valid() {
        let s = NewShipment::parse(req()).unwrap();
        assert_eq!(s.courier_company_id, CourierId::new(7));
        assert!(s.items.is_empty());
    }

    #[test]
    fn weight_must_be_positive_and_bounded() {
        for bad in ["0", "-1", "100000.001", "0.0004"] {
            let err = NewShipment::parse(req().weight_kg(bad.parse().unwrap())).unwrap_err();
            assert_eq!(err.field, "weight_kg", "{bad}");
        }
        assert!(NewShipment::parse(req().weight_kg("100000".parse().unwrap())).is_ok());
        assert!(NewShipment::parse(req().weight_kg("0.001".parse().unwrap())).is_ok());
    }

    #[test]
    fn weight_is_kept_to_the_gram() {
        for (sent, kept) in [
            ("0.30000000000000004", "0.3"),
            ("4.2222222222222220222222222222", "4.222"),
            ("2.0005", "2"),
            ("2.0015", "2.002"),
            ("0.0005", "0"),
        ] {
            let parsed = NewShipment::parse(req().weight_kg(sent.parse().unwrap()));
            if kept == "0" {
                assert!(parsed.is_err(), "{sent}");
                continue;
            }
            assert_eq!(
                parsed.unwrap().weight_kg.unwrap().to_string(),
                kept,
                "{sent}"
            );
        }
    }

    #[test]
    fn webhook_url_must_be_https() {
        let err = NewShipment::parse(req().webhook_url("http://example.com/hook")).unwrap_err();
        assert_eq!(err.field, "webhook_url");
        assert_eq!(
            err.detail,
            "`webhook_url` cannot be used: the scheme is `http`; webhooks are delivered over \
             `https` only"
        );
        for (sent, kept) in [
            (
                "https://shop.example.com/hooks/shipments?v=1",
                "https://shop.example.com/hooks/shipments?v=1",
            ),
            (
                "https://hooks.eu-west-1.prod.example.co.uk/shipments",
                "https://hooks.eu-west-1.prod.example.co.uk/shipments",
            ),
            (
                "https://shop.example.com/hooks/%7Eme",
                "https://shop.example.com/hooks/%7Eme",
            ),
            ("https://127.0.0.1:8443/h", "https://127.0.0.1:8443/h"),
            ("https://[::1]/", "https://[::1]/"),
            ("HTTPS://Example.COM", "https://example.com/"),
            (
                "https://bücher.example/x",
                "https://xn--bcher-kva.example/x",
            ),
        ] {
            assert_eq!(webhook_url("u", sent).unwrap().as_str(), kept, "{sent}");
        }
        for bad in [
            " https://example.com",
            "https://user@example.com/",
            "https://example.com/#frag",
            "https://999.0.0.1/",
            "https://example.com:65536/",
            "https://xn--a.example/",
            "ftp://example.com/",
        ] {
            let err = webhook_url("u", bad).unwrap_err();
            assert!(
                err.detail.starts_with("`u` cannot be used: "),
                "{bad}: {err:?}"
            );
        }
        assert!(NewShipment::parse(req().webhook_url("not a url")).is_err());
        assert!(NewShipment::parse(req().webhook_url("https://u:p@example.com/")).is_err());
        let ok = NewShipment::parse(req().webhook_url("https://Example.com/hook")).unwrap();
        let kept = ok.webhook_url.as_ref().map(WebhookUrl::as_str);
        assert_eq!(kept, Some("https://example.com/hook"));
    }

    #[test]
    fn text_limits_hold_at_their_edges() {
        let at = "x".repeat(MAX_DESCRIPTION);
        assert!(NewShipment::parse(req().description(at.clone())).is_ok());
        let over = at + "x";
        assert_eq!(
            NewShipment::parse(req().description(over))
                .unwrap_err()
                .field,
            "description"
        );
        let mut many = req();
        many.items = Some(vec!["a".into(); MAX_ITEMS + 1]);
        assert_eq!(NewShipment::parse(many).unwrap_err().field, "items");
        assert_eq!(
            NewShipment::parse(req().item("")).unwrap_err().field,
            "items"
        );
    }

    #[test]
    fn control_characters_are_refused_and_tab_and_newline_are_not() {
        // (text, refused at: the code point and the character's position)
        let table: [(&str, Option<(&str, usize)>); 16] = [
            ("plain text", None),
            ("two\nlines\tand a tab", None),
            ("Zoë, 東京, emoji 📦, NBSP\u{a0}here", None),
            ("\u{1b}]0;pwned\u{7}", Some(("U+001B", 1))),
            ("box\u{1b}[2J", Some(("U+001B", 4))),
            ("bell\u{7}", Some(("U+0007", 5))),
            ("nul\0", Some(("U+0000", 4))),
            ("carriage\rreturn", Some(("U+000D", 9))),
            ("vertical\u{b}tab", Some(("U+000B", 9))),
            ("form\u{c}feed", Some(("U+000C", 5))),
            ("unit\u{1f}separator", Some(("U+001F", 5))),
            ("delete\u{7f}", Some(("U+007F", 7))),
            ("c1 \u{80}", Some(("U+0080", 4))),
            ("csi \u{9b}2J", Some(("U+009B", 5))),
            ("osc \u{9d}0;x\u{9c}", Some(("U+009D", 5))),
            ("last c1 \u{9f}", Some(("U+009F", 9))),
        ];
        for (text, refused) in table {
            match (no_control_characters("f", text), refused) {
                (Ok(()), None) => {}
                (Err(e), Some((code_point, at))) => {
                    assert_eq!(e.field, "f", "{text:?}");
                    assert_eq!(e.kind, crate::domain::FieldErrorKind::Invalid);
                    assert!(
                        e.detail
                            .ends_with(&format!("{code_point} at character {at}")),
                        "{text:?}: {}",
                        e.detail
                    );
                    assert!(!e.detail.chars().any(is_refused_control), "{text:?}");
                }
                (got, want) => panic!("{text:?}: {got:?}, expected {want:?}"),
            }
        }
        // The edges of the ranges, one by one.
        for c in ['\u{8}', '\u{b}', '\u{1f}', '\u{7f}', '\u{9f}'] {
            assert!(is_refused_control(c), "{c:?}");
        }
        for c in ['\t', '\n', ' ', '~', '\u{a0}', '\u{2028}'] {
            assert!(!is_refused_control(c), "{c:?}");
        }
    }

    #[test]
    fn every_text_field_of_a_create_is_checked_for_control_characters() {
        let bad = "\u{1b}]0;pwned\u{7}\u{1b}[2J".to_owned();
        let cases: [(&str, CreateShipment); 5] = [
            ("description", req().description(bad.clone())),
            ("dimensions", req().dimensions(bad.clone())),
            ("items", req().item("ok").item(bad.clone())),
            ("start_address", req().start_address(bad.clone())),
            ("end_address", req().end_address(bad.clone())),
        ];
        for (field, request) in cases {
            assert_eq!(NewShipment::parse(request).unwrap_err().field, field);
        }
        let ok = NewShipment::parse(req().description("line one\n\tline two")).unwrap();
        assert_eq!(ok.description.as_deref(), Some("line one\n\tline two"));
    }

    #[test]
    fn courier_company_id_must_be_positive() {
        assert_eq!(
            NewShipment::parse(CreateShipment::new(CourierId::new(0)))
                .unwrap_err()
                .field,
            "courier_company_id"
        );
    }
}
