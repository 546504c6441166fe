//! Extractors whose rejections are [`ApiError`]s, so every 4xx has one
//! shape: JSON bodies, shipment codes in paths, and the key checks.

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequest, FromRequestParts, MatchedPath, Path, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;
use shipment_sdk::model::{CourierId, InvalidShipmentCode, MerchantId, ProblemCode, ShipmentCode};

use super::ApiError;
use super::permissions::{self, KeyHeaders, KeySlot};
use crate::app::AppState;
use crate::app::auth::{self, KeyHolder, KeyOwnerId, KeyRefused};
use crate::domain::keys::{self as key_rules, KeyKind};

/// Header carrying merchant and courier keys.
pub(crate) const API_KEY_HEADER: &str = "x-api-key";

/// A JSON body, parsed strictly: wrong content type, malformed JSON, missing,
/// unknown and mistyped fields each get their own problem code and name the
/// field.
#[derive(Debug)]
pub(crate) struct ApiJson<T>(pub T);

/// Like [`ApiJson`], but an empty body is `None` (operations whose body is
/// optional, such as deliver).
#[derive(Debug)]
pub(crate) struct MaybeJson<T>(pub Option<T>);

fn is_json(headers: &HeaderMap) -> bool {
    let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::payload_too_large()
        } else {
            ApiError::invalid_json(format!("could not read the request body: {rejection}"))
        }
    })
}

/// Parses `bytes` as `T`, turning serde's complaint into the right problem.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Syntax first (without building anything), so a malformed document is
    // always `invalid_json`, whatever the typed pass would trip on first.
    let mut document = match serde_json::from_slice::<UniqueKeys>(bytes) {
        Ok(UniqueKeys(document)) => document,
        Err(e) => {
            return Err(ApiError::invalid_json(format!(
                "request body is not valid JSON: {e}"
            )));
        }
    };
    if !document.is_object() {
        return Err(ApiError::invalid_json(
            "the request body must be a JSON object",
        ));
    }
    integral_floats_as_integers(&mut document);
    let err = match serde_path_to_error::deserialize(document) {
        Ok(value) => return Ok(value),
        Err(err) => err,
    };
    let path = err.path().to_string();
    let inner = err.into_inner();
    if !inner.is_data() {
        return Err(ApiError::invalid_json(format!(
            "request body is not valid JSON: {inner}"
        )));
    }
    let message = inner.to_string();
    // serde_json appends " at line L column C"; the field name says more.
    let message = message
        .rsplit_once(" at line ")
        .map_or(message.as_str(), |(m, _)| m);
    // Rust type names mean nothing to an API caller.
    let message = message
        .replace("expected i64", "expected an integer")
        .replace("expected u8", "expected an integer")
        .replace("expected u32", "expected an integer");
    let message = message.as_str();
    let backticked = message.split('`').nth(1).map(str::to_owned);
    if message.starts_with("missing field")
        && let Some(field) = backticked
    {
        let detail = format!("`{field}` is required");
        let field = if path == "." {
            field
        } else {
            format!("{path}.{field}")
        };
        return Err(
            ApiError::new(StatusCode::BAD_REQUEST, ProblemCode::MissingField, detail)
                .with_field(field),
        );
    }
    if message.starts_with("unknown field")
        && let Some(field) = backticked
    {
        let detail = format!("`{field}` is not a field of this request");
        return Err(
            ApiError::new(StatusCode::BAD_REQUEST, ProblemCode::UnknownField, detail)
                .with_field(field),
        );
    }
    if path == "." {
        return Err(ApiError::invalid_json(format!(
            "the request body must be a JSON object: {message}"
        )));
    }
    Err(ApiError::invalid_field(
        &path,
        format!("`{path}`: {message}"),
    ))
}

/// A JSON document in which no object names a key twice. RFC 8259 leaves
/// duplicates to the reader, and readers differ (a proxy may see the first,
/// serde the last), so a body with one is refused rather than guessed at.
struct UniqueKeys(serde_json::Value);

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeysVisitor).map(UniqueKeys)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(UniqueKeys(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(serde_json::Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if fields.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "the key `{}` appears twice in one object",
                    key.chars().take(64).collect::<String>()
                )));
            }
            let UniqueKeys(value) = map.next_value()?;
            fields.insert(key, value);
        }
        Ok(serde_json::Value::Object(fields))
    }
}

/// JSON does not tell `8` from `8.0` (JSON Schema calls both integers),
/// but serde's integer fields refuse a float: numbers with no fraction are
/// made integers first, so `{"rating": 8.0}` means 8.
fn integral_floats_as_integers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            // Beyond 2^53 a float no longer says which integer it meant.
            if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(ApiError::invalid_json(
                "this request needs a JSON body with Content-Type: application/json",
            ));
        }
        let bytes = body_bytes(req, state).await?;
        parse_json(&bytes).map(ApiJson)
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for MaybeJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let json = is_json(req.headers());
        let bytes = body_bytes(req, state).await?;
        // Only a truly empty body is "no body": white space alone is a JSON
        // text with nothing in it, which is malformed, not absent.
        if bytes.is_empty() {
            return Ok(MaybeJson(None));
        }
        if !json {
            return Err(ApiError::invalid_json(
                "a request body must be JSON with Content-Type: application/json",
            ));
        }
        parse_json(&bytes).map(|v| MaybeJson(Some(v)))
    }
}

/// The `:code` path segment, checked to be a well-formed shipment code.
#[derive(Debug)]
pub(crate) struct CodePath(pub ShipmentCode);

impl<S: Send + Sync> FromRequestParts<S> for CodePath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::invalid_identifier(format!("bad path: {e}")))?;
        ShipmentCode::parse(&raw).map(CodePath).map_err(|_| {
            // The message of `InvalidShipmentCode`, with the echo cut short.
            let shown: String = raw.chars().take(40).collect();
            ApiError::invalid_identifier(InvalidShipmentCode(shown).to_string())
        })
    }
}

/// A merchant authenticated by its API key (`X-API-KEY: sk_…`, or a
/// restricted `rk_…` whose permissions allow the operation).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Merchant {
    /// The merchant's id.
    pub id: MerchantId,
    /// The key it called with.
    pub key: KeyHolder<MerchantId>,
}

/// A courier company authenticated by its key (`X-API-KEY: ck_…`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Courier {
    /// The courier company's id.
    pub id: CourierId,
}

/// Checks the `X-API-KEY` of a request against the keys of `expected` kind;
/// the id of the merchant or courier company it belongs to.
pub(super) async fn authenticate<Owner: KeyOwnerId>(
    parts: &Parts,
    state: &AppState,
) -> Result<Owner, ApiError> {
    authenticate_key::<Owner>(parts, state)
        .await
        .map(|owner| owner.owner_id)
}

/// Like [`authenticate`], with the key itself too (a listener's stream
/// ends when its key is deleted). A merchant's key is then held to what
/// the operation needs ([`permissions::OPERATIONS`]), after it is known
/// and unexpired, and what the answer should tell of it is left in the
/// request's [`KeySlot`].
pub(super) async fn authenticate_key<Owner: KeyOwnerId>(
    parts: &Parts,
    state: &AppState,
) -> Result<KeyHolder<Owner>, ApiError> {
    let Some(value) = parts.headers.get(API_KEY_HEADER) else {
        let detail = if parts.headers.contains_key(header::AUTHORIZATION) {
            "this route takes an API key in the X-API-KEY header, not an Authorization header"
        } else {
            "missing X-API-KEY header"
        };
        return Err(ApiError::unauthenticated(detail));
    };
    let presented = value.to_str().unwrap_or("");
    let merchant_key = Owner::KIND == KeyKind::Merchant;
    let operation = merchant_key
        .then(|| {
            let route = parts.extensions.get::<MatchedPath>()?;
            permissions::operation(parts.method.as_str(), route.as_str())
        })
        .flatten();
    let slot = parts.extensions.get::<KeySlot>();
    let known = |expires_at| {
        if let (true, Some(slot)) = (merchant_key, slot) {
            slot.fill(KeyHeaders {
                need: operation.and_then(|op| op.need),
                expires_at,
            });
        }
    };
    let holder = auth::authenticate_key::<Owner>(state, presented)
        .await
        .map_err(|refused| match refused {
            KeyRefused::Malformed => {
                ApiError::unauthenticated("the X-API-KEY header is not a valid key")
            }
            KeyRefused::OtherEnvironment => ApiError::unauthenticated(format!(
                "this key belongs to the other environment; this server is {}",
                state.environment_name()
            )),
            KeyRefused::OtherKind => ApiError::forbidden(match Owner::KIND {
                KeyKind::Courier => "merchant keys cannot call courier routes",
                _ => "courier keys cannot call merchant routes",
            }),
            KeyRefused::Unknown => ApiError::unauthenticated("invalid or revoked API key"),
            KeyRefused::Expired(at) => {
                known(Some(at));
                ApiError::api_key_expired(&key_rules::rfc3339(at))
            }
            KeyRefused::Failed(e) => e.into(),
        })?;
    if !merchant_key {
        return Ok(holder);
    }
    known(holder.expires_at);
    let Some(operation) = operation else {
        // Fail closed: `permissions::OPERATIONS` lacks this route (its
        // test says so first).
        return Err(ApiError::internal(&format!(
            "{} {:?} takes a merchant key but has no row in permissions::OPERATIONS",
            parts.method,
            parts
                .extensions
                .get::<MatchedPath>()
                .map(MatchedPath::as_str)
        )));
    };
    if let Some(need) = operation.need
        && !need.met_by(holder.permissions.as_ref())
    {
        let has = holder
            .permissions
            .map_or(need.resource.highest(), |p| p.get(need.resource));
        return Err(ApiError::insufficient_permission(
            &format!("{}: {has}", need.resource),
            &need.to_string(),
        ));
    }
    Ok(holder)
}

impl<S: Send + Sync> FromRequestParts<S> for Merchant
where
    AppState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = AppState::from_ref(state);
        authenticate_key(parts, &state).await.map(|key| Merchant {
            id: key.owner_id,
            key,
        })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Courier
where
    AppState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = AppState::from_ref(state);
        authenticate(parts, &state).await.map(|id| Courier { id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shipment_sdk::model::CreateShipment;

    fn problem(body: &str) -> (StatusCode, ProblemCode, Option<String>) {
        let e = parse_json::<CreateShipment>(body.as_bytes()).unwrap_err();
        (e.status(), e.code().clone(), e.field().map(str::to_owned))
    }

    #[test]
    fn each_kind_of_bad_body_gets_its_own_code() {
        assert_eq!(
            problem("{"),
            (StatusCode::BAD_REQUEST, ProblemCode::InvalidJson, None)
        );
        assert_eq!(
            problem("[]"),
            (StatusCode::BAD_REQUEST, ProblemCode::InvalidJson, None)
        );
        assert_eq!(
            problem("{} x"),
            (StatusCode::BAD_REQUEST, ProblemCode::InvalidJson, None)
        );
        assert_eq!(
            problem("{}"),
            (
                StatusCode::BAD_REQUEST,
                ProblemCode::MissingField,
                Some("courier_company_id".into())
            )
        );
        assert_eq!(
            problem(r#"{"courier_company_id":1,"colour":"red"}"#),
            (
                StatusCode::BAD_REQUEST,
                ProblemCode::UnknownField,
                Some("colour".into())
            )
        );
        assert_eq!(
            problem(r#"{"courier_company_id":"seven"}"#),
            (
                StatusCode::BAD_REQUEST,
                ProblemCode::InvalidField,
                Some("courier_company_id".into())
            )
        );
        // A key named twice, at the top or deeper down.
        let twice =
            parse_json::<CreateShipment>(br#"{"courier_company_id": 2, "courier_company_id": 1}"#)
                .unwrap_err();
        assert_eq!(twice.code(), "invalid_json");
        assert!(
            twice.detail().contains("`courier_company_id`"),
            "{}",
            twice.detail()
        );
        assert_eq!(
            problem(r#"{"courier_company_id":1,"items":[{"a":1,"a":2}]}"#),
            (StatusCode::BAD_REQUEST, ProblemCode::InvalidJson, None)
        );
        // A number written as text is a wrong type.
        assert_eq!(
            problem(r#"{"courier_company_id":1,"weight_kg":"1"}"#),
            (
                StatusCode::BAD_REQUEST,
                ProblemCode::InvalidField,
                Some("weight_kg".into())
            )
        );
        assert_eq!(
            problem(r#"{"courier_company_id":1,"items":[1]}"#),
            (
                StatusCode::BAD_REQUEST,
                ProblemCode::InvalidField,
                Some("items[0]".into())
            )
        );
    }
}
