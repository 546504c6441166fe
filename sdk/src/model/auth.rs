//! Dashboard sign-in ([`Login`], [`Session`]) and the [`Secret`] type that
//! keeps keys, tokens and passwords out of logs.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use super::openapi;
use super::timestamp;

/// A secret string (API key, session token, signing key, password) whose
/// `Debug` and `Display` print `[redacted]`, so it never lands in a log line
/// or an error message by accident. It serializes as the plain string.
///
/// ```
/// use shipment_sdk::model::Secret;
/// let key = Secret::new("sk_test_abc");
/// assert_eq!(format!("{key:?} {key}"), "[redacted] [redacted]");
/// assert_eq!(key.expose(), "sk_test_abc");
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself: show it to the person who asked, store it, or send
    /// it; never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

/// Body of `POST /auth/login`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Login {
    /// The merchant's dashboard e-mail.
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::email))]
    pub email: String,
    /// The dashboard password (never used on API-key routes).
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::password))]
    pub password: Secret,
}

/// Answer of `POST /auth/login`: a dashboard session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct Session {
    /// The Bearer token for the dashboard routes.
    pub token: Secret,
    /// Always `Bearer`.
    pub token_type: String,
    /// When the token stops working (12 h after sign-in).
    #[serde(serialize_with = "timestamp::serialize")]
    pub expires_at: DateTime<Utc>,
}

impl Session {
    /// A Bearer session that ends at `expires_at`.
    pub fn bearer(token: Secret, expires_at: DateTime<Utc>) -> Session {
        Session {
            token,
            token_type: "Bearer".to_owned(),
            expires_at,
        }
    }
}
