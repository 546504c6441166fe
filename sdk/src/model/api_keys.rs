//! Merchant API keys as the dashboard lists, creates and verifies them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::timestamp;
use super::{ApiKeyId, Secret};

/// An API key as the dashboard lists it (`GET /api-keys`): never the secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct ApiKey {
    /// Identifier, used in `DELETE /api-keys/:id`.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub id: ApiKeyId,
    /// Name given at creation.
    #[cfg_attr(feature = "openapi", schema(example = "deploy"))]
    pub name: String,
    /// `sk_test_` or `sk_live_`.
    #[cfg_attr(feature = "openapi", schema(example = "sk_test_"))]
    pub prefix: String,
    /// The key's last four characters, to tell keys apart.
    #[cfg_attr(feature = "openapi", schema(example = "Ab3Z"))]
    pub last4: String,
    /// When the key was created.
    #[serde(serialize_with = "timestamp::serialize")]
    pub created_at: DateTime<Utc>,
    /// When the key was last used, if ever.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub last_used_at: Option<DateTime<Utc>>,
}

impl ApiKey {
    /// A key as listed, never used yet.
    pub fn new(
        id: ApiKeyId,
        name: impl Into<String>,
        prefix: impl Into<String>,
        last4: impl Into<String>,
        created_at: DateTime<Utc>,
    ) -> ApiKey {
        ApiKey {
            id,
            name: name.into(),
            prefix: prefix.into(),
            last4: last4.into(),
            created_at,
            last_used_at: None,
        }
    }
}

/// Answer of `POST /api-keys`: the listed fields and, this once, the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct NewApiKey {
    /// The key as it will be listed.
    #[serde(flatten)]
    pub api_key: ApiKey,
    /// The key itself; it cannot be retrieved again.
    pub key: Secret,
}

impl NewApiKey {
    /// The answer of a create.
    pub fn new(api_key: ApiKey, key: Secret) -> NewApiKey {
        NewApiKey { api_key, key }
    }
}

/// Body of `POST /api-keys`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateApiKey {
    /// A name to tell the key apart (the server picks one when absent),
    /// without control characters other than tab and newline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 100, pattern = "^[^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*$")
    )]
    pub name: Option<String>,
}

/// Body of `POST /api-keys/verify`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct VerifyApiKey {
    /// The pasted key string.
    pub key: Secret,
}

/// Answer of `POST /api-keys/verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct KeyVerdict {
    /// Whether the string is one of the merchant's working keys.
    pub valid: bool,
    /// The key's id, when valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub id: Option<ApiKeyId>,
    /// The key's name, when valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl KeyVerdict {
    /// The string is the merchant's working key `id`, named `name`.
    pub fn valid(id: ApiKeyId, name: impl Into<String>) -> KeyVerdict {
        KeyVerdict {
            valid: true,
            id: Some(id),
            name: Some(name.into()),
        }
    }

    /// The string is not one of the merchant's working keys.
    pub fn invalid() -> KeyVerdict {
        KeyVerdict {
            valid: false,
            id: None,
            name: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_show_in_debug_output() {
        let json = serde_json::json!({
            "id": 1, "name": "ci", "prefix": "sk_test_", "last4": "abcd",
            "created_at": "2026-11-21T09:30:12.123456Z", "last_used_at": null,
            "key": "sk_test_0123456789abcdefghijABCDEFGHIJ"
        });
        let key: NewApiKey = serde_json::from_value(json.clone()).unwrap();
        assert!(!format!("{key:?}").contains("0123456789"));
        assert_eq!(key.key.expose(), "sk_test_0123456789abcdefghijABCDEFGHIJ");
        assert_eq!(serde_json::to_value(&key).unwrap(), json);
    }
}
