//! OpenAPI schemas of the types whose serde form is written by hand.

use std::borrow::Cow;

use utoipa::openapi::schema::{ObjectBuilder, SchemaFormat, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use super::{Secret, Status, WebhookUrl};

/// `CreateShipment::webhook_url`: a [`WebhookUrl`], or null.
pub(super) fn webhook_url() -> impl Into<RefOr<Schema>> {
    utoipa::openapi::schema::OneOfBuilder::new()
        .description(Some(
            "Per-shipment HTTPS webhook address (a `WebhookUrl`, kept normalised).",
        ))
        .item(ObjectBuilder::new().schema_type(SchemaType::Type(Type::Null)))
        .item(utoipa::openapi::Ref::from_schema_name(WebhookUrl::name()))
}

/// `Page::data`: references to `T`'s component. A derived generic field
/// would inline `T`, and generated clients would get a second type for
/// the same object.
pub(super) fn page_data<T: ToSchema>() -> impl Into<RefOr<Schema>> {
    refs::<T>("The items of this page.")
}

/// `List::data`: references to `T`'s component (see [`page_data`]).
pub(super) fn list_data<T: ToSchema>() -> impl Into<RefOr<Schema>> {
    refs::<T>("Every item.")
}

fn refs<T: ToSchema>(description: &str) -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(utoipa::openapi::Ref::from_schema_name(T::name()))
        .description(Some(description))
        .build()
}

/// Text with something besides white space (as Rust's `trim` sees it)
/// and no control character but tab and newline (U+0000 to U+0008,
/// U+000B to U+001F, U+007F to U+009F are refused).
const NON_BLANK: &str = "^[^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*[^\\x00-\\x20\\x7F-\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*$";

/// `Login::email`: up to 256 characters, not blank.
pub(super) fn email() -> impl Into<RefOr<Schema>> {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .max_length(Some(256))
        .pattern(Some(NON_BLANK))
}

/// `Login::password`: up to 256 characters.
pub(super) fn password() -> impl Into<RefOr<Schema>> {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .max_length(Some(256))
}

/// `CreateShipment::items`: at most 100 labels of 1 to 200 characters,
/// not only white space, or null.
pub(super) fn items() -> impl Into<RefOr<Schema>> {
    let label = ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .min_length(Some(1))
        .max_length(Some(200))
        .pattern(Some(NON_BLANK));
    utoipa::openapi::schema::ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(label)
        .max_items(Some(100))
}

impl PartialSchema for Status {
    fn schema() -> RefOr<Schema> {
        // The values the service sends today; clients must also accept
        // others (the SDK keeps them as `Status::Unknown`).
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .enum_values(Some(Status::KNOWN.iter().map(Status::as_str)))
            .description(Some(
                "Lifecycle state. Clients must accept values not listed here.",
            ))
            .into()
    }
}

impl ToSchema for Status {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Status")
    }
}

impl PartialSchema for WebhookUrl {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .format(Some(SchemaFormat::Custom("uri".to_owned())))
            .max_length(Some(WebhookUrl::MAX_LEN))
            .description(Some(
                "An HTTPS URL a browser would open. The scheme is `https`, in any case. \
                 The host is a host name per RFC 1123 (labels of letters, digits and \
                 inner hyphens, at most 63 characters each and 253 in all), an \
                 internationalised name (converted to punycode), or an IPv4 or IPv6 \
                 address; any port; any path and query, percent-encoded or not. \
                 Refused: credentials (`user:password@`), a fragment (`#...`), white \
                 space at either end or control characters, more than 2,048 bytes as \
                 sent or once normalised (a path of just `/` is not counted), and hosts \
                 that are not on the public internet. The service stores and shows the \
                 URL normalised (WHATWG URL serialisation: lowercase scheme and host, \
                 punycode, default port dropped, `/` for an empty path).",
            ))
            .examples(["https://shop.example.com/hooks/shipments"])
            .into()
    }
}

impl ToSchema for WebhookUrl {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("WebhookUrl")
    }
}

impl PartialSchema for Secret {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .description(Some("A secret, sent or shown once."))
            .into()
    }
}

impl ToSchema for Secret {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Secret")
    }
}
