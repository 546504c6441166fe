//! The parameters and responses that several handlers' `#[utoipa::path]`
//! attributes share: described here once, for the OpenAPI document
//! ([`super::openapi`]), and never built.

use std::collections::BTreeMap;

use shipment_sdk::model::CourierId;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{ContentBuilder, RefOr, ResponseBuilder, response::Response};
use utoipa::{IntoResponses, PartialSchema, ToSchema};

/// The problem responses any operation may give.
pub(super) struct Problems;

impl IntoResponses for Problems {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        [
            ("400", "The request is malformed or a field is invalid"),
            (
                "401",
                "No credentials, or credentials that are not valid here",
            ),
            (
                "403",
                "Credentials of another kind, or another account's resource",
            ),
            ("404", "No such resource"),
            ("409", "The resource is not in a state that allows this"),
            ("413", "The body is larger than 1 MiB"),
            (
                "429",
                "Too many failed sign-ins for this e-mail; see Retry-After",
            ),
            (
                "500",
                "The server failed; the cause is logged under the request id",
            ),
            (
                "503",
                "The request took too long or the database is unavailable",
            ),
        ]
        .into_iter()
        .map(|(status, description)| {
            let response = ResponseBuilder::new()
                .description(description)
                .content(
                    "application/problem+json",
                    ContentBuilder::new()
                        .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                            "Problem",
                        ))))
                        .build(),
                )
                .build();
            (status.to_owned(), RefOr::T(response))
        })
        .collect()
    }
}

/// The query of the shipment lists, merchant and courier side (parsed by
/// `domain::list_query::Listing`; this type only describes it).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[expect(dead_code, reason = "described in the document, never built")]
pub(super) struct ListParams {
    /// Page, from 1
    #[param(minimum = 1, maximum = 1000000)]
    page: Option<u32>,
    /// Items per page (default 20)
    #[param(minimum = 1, maximum = 100)]
    page_size: Option<u32>,
    /// Continue after the last item of the page whose `next_cursor` this is
    /// (send the same filters; not with `page`): every item that existed
    /// when the walk began comes exactly once, and each page costs the
    /// same however far the walk has gone. On a cursor page, `page` is the
    /// number of the page holding its first item, and `total` is counted
    /// now
    #[param(min_length = 1, max_length = 200)]
    cursor: Option<String>,
    /// Only this status
    status: Option<shipment_sdk::model::Status>,
    /// Only this courier company
    #[param(value_type = Option<i64>, minimum = 1)]
    courier_company_id: Option<CourierId>,
    /// RFC 3339 instant or YYYY-MM-DD: created at or after
    #[param(format = DateTime)]
    created_after: Option<String>,
    /// RFC 3339 instant or YYYY-MM-DD: created before
    #[param(format = DateTime)]
    created_before: Option<String>,
    /// RFC 3339 instant or YYYY-MM-DD: changed at or after. With it,
    /// `total` is counted over the matching items (exact, at a cost that
    /// grows with the items changed since then); without it, from kept
    /// counts
    #[param(format = DateTime)]
    updated_after: Option<String>,
}

/// The query of a paged log (`domain::list_query::parse_page`).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[expect(dead_code, reason = "described in the document, never built")]
pub(super) struct PageParams {
    /// Page, from 1
    #[param(minimum = 1, maximum = 1000000)]
    page: Option<u32>,
    /// Items per page (default 20)
    #[param(minimum = 1, maximum = 100)]
    page_size: Option<u32>,
}

/// The `{code}` of a shipment's path (`extract::CodePath`).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(dead_code, reason = "described in the document, never built")]
pub(super) struct CodeParam {
    /// Shipment code: `SHP-` and two groups of four of 0-9 and A-Z without I, L, O, U
    #[param(
        pattern = "^SHP-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$",
        example = "SHP-7K3M-Q9ZX"
    )]
    code: String,
}

/// The `{id}` of an API key's or a webhook's path.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(dead_code, reason = "described in the document, never built")]
pub(super) struct IdParam {
    /// Its id
    #[param(minimum = 1)]
    id: i64,
}

/// The `Idempotent-Replayed` response header of a replayed create: the
/// server sends it only on a replay, always as `true`.
pub(super) struct IdempotentReplayed;

impl PartialSchema for IdempotentReplayed {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .enum_values(Some(["true"]))
            .into()
    }
}

impl ToSchema for IdempotentReplayed {}
