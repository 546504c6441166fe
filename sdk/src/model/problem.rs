//! Errors on the wire: the RFC 9457 [`Problem`] body and its stable
//! [`ProblemCode`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An RFC 9457 problem body, the shape of every error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct Problem {
    /// Always `about:blank`: the `code` says what went wrong.
    #[serde(rename = "type", default = "about_blank")]
    pub type_: String,
    /// The HTTP reason phrase.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong, for a person.
    pub detail: String,
    /// Stable machine-readable code, e.g. `missing_field`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub code: ProblemCode,
    /// The one request field at fault, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The request id, also in the `X-Request-Id` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// With `insufficient_permission`: the permission the operation needs,
    /// as `X-Accepted-Permissions` writes it (`shipments: write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = "shipments: write"))]
    pub required_permission: Option<String>,
}

fn about_blank() -> String {
    "about:blank".to_owned()
}

impl Problem {
    /// A problem with `type` `about:blank`, no field and no request id.
    ///
    /// ```
    /// use shipment_sdk::model::{Problem, ProblemCode};
    /// let problem = Problem::new(409, "Conflict", ProblemCode::InvalidState, "too late");
    /// let body: Problem = serde_json::from_str(&serde_json::to_string(&problem).unwrap()).unwrap();
    /// assert_eq!(body.code, ProblemCode::InvalidState);
    /// ```
    pub fn new(
        status: u16,
        title: impl Into<String>,
        code: ProblemCode,
        detail: impl Into<String>,
    ) -> Problem {
        Problem {
            type_: about_blank(),
            title: title.into(),
            status,
            detail: detail.into(),
            code,
            field: None,
            request_id: None,
            required_permission: None,
        }
    }
}

/// The stable, machine-readable `code` of a [`Problem`]: what went wrong,
/// in a form a program can branch on.
///
/// The service may add codes; one this version does not know is kept as
/// [`ProblemCode::Other`] and written back unchanged, never an error. The
/// enum is `#[non_exhaustive]` so that a code named here later is not a
/// breaking change: keep a `_` arm when matching.
///
/// ```
/// use shipment_sdk::model::ProblemCode;
///
/// let code: ProblemCode = serde_json::from_str("\"invalid_state\"").unwrap();
/// assert_eq!(code, ProblemCode::InvalidState);
/// assert_eq!(code.as_str(), "invalid_state");
///
/// let later: ProblemCode = "quota_exceeded".parse().unwrap();
/// assert_eq!(later, ProblemCode::Other("quota_exceeded".into()));
/// assert_eq!(serde_json::to_string(&later).unwrap(), "\"quota_exceeded\"");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemCode {
    /// 400: the body is not JSON, or not the JSON the route takes.
    InvalidJson,
    /// 400: a required field is absent (`field` names it).
    MissingField,
    /// 400: a field the route does not know (`field` names it).
    UnknownField,
    /// 400: a field has a value the service refuses (`field` names it).
    InvalidField,
    /// 400: an identifier in the path is malformed.
    InvalidIdentifier,
    /// 400: the delivery confirmation code is wrong, expired or used up.
    InvalidConfirmationCode,
    /// 401: no credential, or one the service does not accept.
    Unauthenticated,
    /// 401: the API key is known but expired (`detail` says when).
    ApiKeyExpired,
    /// 403: the credential is valid but may not do this.
    Forbidden,
    /// 403: a restricted API key lacks the permission this operation needs
    /// (the problem's `required_permission` names it).
    InsufficientPermission,
    /// 404: no such resource (or route).
    NotFound,
    /// 405: the route exists, but not with this method.
    MethodNotAllowed,
    /// 409: the shipment's state does not allow the operation.
    InvalidState,
    /// 409: the shipment has already been rated.
    AlreadyRated,
    /// 409: the merchant already has a webhook with this URL.
    WebhookUrlTaken,
    /// 409: the `Idempotency-Key` was used with a different body.
    IdempotencyConflict,
    /// 413: the request body is too large.
    PayloadTooLarge,
    /// 429: too many requests; the answer carries `Retry-After`.
    RateLimited,
    /// 500: the service failed; details are in its logs, not the answer.
    Internal,
    /// 503: the service cannot answer now; retry shortly.
    Unavailable,
    /// A code this version of the model does not know, kept verbatim.
    ///
    /// [`FromStr`] and deserialization never put a known code here.
    Other(String),
}

impl ProblemCode {
    /// Every code the model knows, in the order of their HTTP statuses.
    pub const KNOWN: [ProblemCode; 20] = [
        ProblemCode::InvalidJson,
        ProblemCode::MissingField,
        ProblemCode::UnknownField,
        ProblemCode::InvalidField,
        ProblemCode::InvalidIdentifier,
        ProblemCode::InvalidConfirmationCode,
        ProblemCode::Unauthenticated,
        ProblemCode::ApiKeyExpired,
        ProblemCode::Forbidden,
        ProblemCode::InsufficientPermission,
        ProblemCode::NotFound,
        ProblemCode::MethodNotAllowed,
        ProblemCode::InvalidState,
        ProblemCode::AlreadyRated,
        ProblemCode::WebhookUrlTaken,
        ProblemCode::IdempotencyConflict,
        ProblemCode::PayloadTooLarge,
        ProblemCode::RateLimited,
        ProblemCode::Internal,
        ProblemCode::Unavailable,
    ];

    /// The wire spelling, e.g. `"invalid_state"`.
    pub fn as_str(&self) -> &str {
        match self {
            ProblemCode::InvalidJson => "invalid_json",
            ProblemCode::MissingField => "missing_field",
            ProblemCode::UnknownField => "unknown_field",
            ProblemCode::InvalidField => "invalid_field",
            ProblemCode::InvalidIdentifier => "invalid_identifier",
            ProblemCode::InvalidConfirmationCode => "invalid_confirmation_code",
            ProblemCode::Unauthenticated => "unauthenticated",
            ProblemCode::ApiKeyExpired => "api_key_expired",
            ProblemCode::Forbidden => "forbidden",
            ProblemCode::InsufficientPermission => "insufficient_permission",
            ProblemCode::NotFound => "not_found",
            ProblemCode::MethodNotAllowed => "method_not_allowed",
            ProblemCode::InvalidState => "invalid_state",
            ProblemCode::AlreadyRated => "already_rated",
            ProblemCode::WebhookUrlTaken => "webhook_url_taken",
            ProblemCode::IdempotencyConflict => "idempotency_conflict",
            ProblemCode::PayloadTooLarge => "payload_too_large",
            ProblemCode::RateLimited => "rate_limited",
            ProblemCode::Internal => "internal",
            ProblemCode::Unavailable => "unavailable",
            ProblemCode::Other(other) => other,
        }
    }

    /// Parses a known wire value; `None` for anything else.
    ///
    /// Use this where only known codes make sense; [`FromStr`] keeps
    /// unknown codes as [`ProblemCode::Other`] instead.
    pub fn parse_known(s: &str) -> Option<ProblemCode> {
        ProblemCode::KNOWN.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether this is a code the model knows (not [`ProblemCode::Other`]).
    pub fn is_known(&self) -> bool {
        !matches!(self, ProblemCode::Other(_))
    }

    fn from_wire(s: &str) -> ProblemCode {
        ProblemCode::parse_known(s).unwrap_or_else(|| ProblemCode::Other(s.to_owned()))
    }
}

impl FromStr for ProblemCode {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(ProblemCode::from_wire(s))
    }
}

impl fmt::Display for ProblemCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for ProblemCode {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// Compares with the wire spelling: `code == "invalid_state"`.
impl PartialEq<str> for ProblemCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

/// Compares with the wire spelling: `code == "invalid_state"`.
impl PartialEq<&str> for ProblemCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for ProblemCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProblemCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Ok(ProblemCode::parse_known(&s).unwrap_or(ProblemCode::Other(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes `spec/DESIGN.md` and the service document, spelled
    /// out rather than derived from `as_str`, so a typo there fails here.
    const DOCUMENTED: [&str; 20] = [
        "invalid_json",
        "missing_field",
        "unknown_field",
        "invalid_field",
        "invalid_identifier",
        "invalid_confirmation_code",
        "unauthenticated",
        "api_key_expired",
        "forbidden",
        "insufficient_permission",
        "not_found",
        "method_not_allowed",
        "invalid_state",
        "already_rated",
        "webhook_url_taken",
        "idempotency_conflict",
        "payload_too_large",
        "rate_limited",
        "internal",
        "unavailable",
    ];

    #[test]
    fn every_documented_code_is_known_and_round_trips() {
        let spelled: Vec<&str> = ProblemCode::KNOWN.iter().map(ProblemCode::as_str).collect();
        assert_eq!(spelled, DOCUMENTED);
        for code in ProblemCode::KNOWN {
            let text = code.to_string();
            assert_eq!(text.parse::<ProblemCode>(), Ok(code.clone()), "{text}");
            assert_eq!(ProblemCode::parse_known(&text), Some(code.clone()));
            assert!(code.is_known(), "{text}");
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<ProblemCode>(&json).unwrap(), code);
        }
    }

    #[test]
    fn an_unknown_code_is_kept_as_other_and_written_back_unchanged() {
        let code: ProblemCode = serde_json::from_str("\"quota_exceeded\"").unwrap();
        assert_eq!(code, ProblemCode::Other("quota_exceeded".into()));
        assert!(!code.is_known());
        assert_eq!(code.as_str(), "quota_exceeded");
        assert_eq!(code.to_string(), "quota_exceeded");
        assert_eq!(serde_json::to_string(&code).unwrap(), "\"quota_exceeded\"");
        assert_eq!(ProblemCode::parse_known("quota_exceeded"), None);
        let Ok(parsed) = "quota_exceeded".parse::<ProblemCode>();
        assert_eq!(parsed, code);
    }

    #[test]
    fn codes_are_case_sensitive_like_the_wire() {
        assert_eq!(
            "NOT_FOUND".parse::<ProblemCode>(),
            Ok(ProblemCode::Other("NOT_FOUND".into()))
        );
        assert_eq!(
            "".parse::<ProblemCode>(),
            Ok(ProblemCode::Other(String::new()))
        );
    }

    #[test]
    fn a_code_compares_with_its_wire_spelling() {
        assert!(ProblemCode::InvalidState == "invalid_state");
        assert!(ProblemCode::InvalidState == *"invalid_state");
        assert!(ProblemCode::InvalidState != "already_rated");
        assert!(ProblemCode::Other("x".into()) == "x");
    }

    #[test]
    fn a_code_that_is_not_a_string_is_refused() {
        assert!(serde_json::from_str::<ProblemCode>("404").is_err());
        assert!(serde_json::from_str::<ProblemCode>("null").is_err());
    }

    #[test]
    fn a_problem_body_round_trips_and_names_its_code() {
        let body = serde_json::json!({
            "type": "about:blank", "title": "Bad Request", "status": 400,
            "detail": "courier_company_id is required", "code": "missing_field",
            "field": "courier_company_id", "request_id": "r-1"
        });
        let problem: Problem = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(problem.code, ProblemCode::MissingField);
        assert_eq!(serde_json::to_value(&problem).unwrap(), body);

        let mut later = body;
        later["code"] = "quota_exceeded".into();
        later.as_object_mut().unwrap().remove("type");
        let problem: Problem = serde_json::from_value(later).unwrap();
        assert_eq!(problem.type_, "about:blank");
        assert_eq!(problem.code, ProblemCode::Other("quota_exceeded".into()));
    }
}
