//! API keys and courier keys: format, generation and the digest kept at
//! rest; a restricted key's permissions and a key's expiry, checked when a
//! key is made and as stored.

use chrono::{DateTime, Duration, Utc};
use rand::Rng;
use sha2::{Digest, Sha256};
use shipment_sdk::model::{Access, InvalidPermissions, Permissions, Resource};

use super::FieldError;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Random characters after the prefix (32 × log2(62) ≈ 190 bits).
pub(crate) const SECRET_LEN: usize = 32;

/// Which deployment a server is, and so which keys it takes; and whose a
/// key is. The SDK's, so the server, the SDK and `shipctl` read a key's
/// prefix with one parser ([`KeyPrefix::parse`]).
pub use shipment_sdk::keys::{KeyEnvironment as Environment, KeyKind};
pub(crate) use shipment_sdk::keys::{KeyPrefix, SIGNING_KEY_PREFIX, UnknownEnvironment};

pub(crate) use shipment_sdk::model::Secret;

/// `prefix` followed by `SECRET_LEN` (32) random base62 characters.
pub fn random_token(prefix: &str) -> Secret {
    let mut rng = rand::rng();
    let mut s = String::with_capacity(prefix.len() + SECRET_LEN);
    s.push_str(prefix);
    s.extend((0..SECRET_LEN).map(|_| BASE62[rng.random_range(0..62)] as char));
    Secret::new(s)
}

/// A new key of `kind` for `env`.
pub fn generate(kind: KeyKind, env: Environment) -> Secret {
    random_token(kind.prefix(env))
}

/// What a presented key string claims to be, if it is well formed: its
/// prefix ([`KeyPrefix::parse`]) followed by [`SECRET_LEN`] base62
/// characters, as the server makes them.
pub(crate) fn shape(key: &str) -> Option<KeyPrefix> {
    let (prefix, secret) = KeyPrefix::parse(key)?;
    is_secret(secret).then_some(prefix)
}

/// The longest a key may be made to last: a key that must outlive a year is
/// a full key without expiry, chosen as such.
pub(crate) const MAX_KEY_LIFETIME: Duration = Duration::days(366);

/// What a key may do and until when: `permissions` `None` is a full key
/// (`sk_`), `Some` a restricted one (`rk_`); `expires_at` `None` is never.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct KeyTerms {
    /// A restricted key's permissions.
    pub permissions: Option<Permissions>,
    /// When the key stops working.
    pub expires_at: Option<DateTime<Utc>>,
}

impl KeyTerms {
    /// The terms a create asks for, checked at `now`: every level one its
    /// resource has (couriers cannot be written, the test controls not
    /// read), the expiry in the future and at most [`MAX_KEY_LIFETIME`]
    /// ahead. No permission at all is allowed: such a key can still tell
    /// what it is (`GET /api-keys/current`), which a pipeline's smoke test
    /// may be all it needs.
    pub(crate) fn parse(
        permissions: Option<Permissions>,
        expires_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<KeyTerms, FieldError> {
        if let Some(permissions) = &permissions {
            check_permissions(permissions)?;
        }
        if let Some(at) = expires_at {
            if at <= now {
                return Err(FieldError::invalid(
                    "expires_at",
                    "`expires_at` must be in the future",
                ));
            }
            if at > now + MAX_KEY_LIFETIME {
                return Err(FieldError::invalid(
                    "expires_at",
                    format!(
                        "`expires_at` must be at most {} days ahead",
                        MAX_KEY_LIFETIME.num_days()
                    ),
                ));
            }
        }
        Ok(KeyTerms {
            permissions,
            expires_at,
        })
    }

    /// The kind of key these terms make: restricted with permissions.
    pub(crate) fn kind(&self) -> KeyKind {
        if self.permissions.is_some() {
            KeyKind::Restricted
        } else {
            KeyKind::Merchant
        }
    }
}

/// Whether every level of `permissions` is one its resource has (couriers
/// cannot be written, the test controls not read): the rule of `POST
/// /api-keys` and of a fixtures file's restricted keys.
pub(crate) fn check_permissions(permissions: &Permissions) -> Result<(), FieldError> {
    for resource in Resource::ALL {
        let access = permissions.get(resource);
        if !resource.levels().contains(&access) {
            let levels: Vec<&str> = resource.levels().iter().map(|a| a.name()).collect();
            return Err(FieldError::invalid(
                format!("permissions.{resource}"),
                format!(
                    "`permissions.{resource}` cannot be {access}: {resource} has {}",
                    levels.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// A restricted key's permissions as stored: every resource named, so the
/// column reads the same whatever a later version adds
/// (`shipments:read,couriers:read,listen:none,testing:none`).
pub(crate) fn stored_permissions(permissions: &Permissions) -> String {
    Resource::ALL
        .iter()
        .map(|r| format!("{r}:{}", permissions.get(*r)))
        .collect::<Vec<_>>()
        .join(",")
}

/// A key's permissions as read from its row: `None` (NULL) for a full key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoredPermissions(pub Option<Permissions>);

impl TryFrom<Option<String>> for StoredPermissions {
    type Error = InvalidPermissions;

    fn try_from(stored: Option<String>) -> Result<Self, Self::Error> {
        stored
            .map(|text| text.parse::<Permissions>())
            .transpose()
            .map(StoredPermissions)
    }
}

/// What an operation of the API-key routes needs of a key: a level on one
/// resource. Written `shipments: write`, as `X-Accepted-Permissions` and
/// the problem's `required_permission` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Need {
    /// The resource.
    pub resource: Resource,
    /// The least level that will do.
    pub access: Access,
}

impl Need {
    /// Whether a key of `permissions` (`None`: a full key) may do it.
    pub(crate) fn met_by(self, permissions: Option<&Permissions>) -> bool {
        permissions.is_none_or(|p| p.allows(self.resource, self.access))
    }
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.resource, self.access)
    }
}

/// When an answer warns that its key is about to expire.
pub(crate) const EXPIRY_WARNING: Duration = Duration::days(7);

/// The expiry warning for a key expiring at `expires_at`, if `now` is in
/// its last [`EXPIRY_WARNING`]: `this API key expires at <time>, in 3 days`
/// (in hours under a day, in minutes under an hour; to the nearest).
pub(crate) fn expiry_warning(expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Option<String> {
    let left = expires_at - now;
    if left <= Duration::zero() || left > EXPIRY_WARNING {
        return None;
    }
    // To the nearest unit: a key made to last 3 days says "in 3 days" on
    // its first answer, not the 2 its first second would round down to.
    let nearest =
        |unit: Duration| (left.num_seconds() + unit.num_seconds() / 2) / unit.num_seconds();
    let (n, unit) = if left >= Duration::days(1) {
        (nearest(Duration::days(1)), "day")
    } else if left >= Duration::hours(1) {
        (nearest(Duration::hours(1)), "hour")
    } else {
        (nearest(Duration::minutes(1)).max(1), "minute")
    };
    let plural = if n == 1 { "" } else { "s" };
    Some(format!(
        "this API key expires at {}, in {n} {unit}{plural}",
        rfc3339(expires_at)
    ))
}

/// A key's expiry as headers and messages show it: RFC 3339 in UTC, to the
/// second (`2026-12-01T00:00:00Z`).
pub(crate) fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Whether `secret` is what follows a prefix in the keys the server makes.
fn is_secret(secret: &str) -> bool {
    secret.len() == SECRET_LEN && secret.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Whether `key` has the shape of a webhook signing key: `whsec_` followed
/// by [`SECRET_LEN`] base62 characters, as the server makes them.
pub(crate) fn is_signing_key(key: &str) -> bool {
    key.strip_prefix(SIGNING_KEY_PREFIX).is_some_and(is_secret)
}

/// Hex SHA-256 of a high-entropy secret: what is stored instead of it.
pub(crate) fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// The last four characters, shown so a person can tell keys apart.
pub(crate) fn last4(secret: &str) -> String {
    secret[secret.len().saturating_sub(4)..].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_documented_shape() {
        let key = generate(KeyKind::Merchant, Environment::Staging);
        assert!(key.expose().starts_with("sk_test_"));
        assert_eq!(key.expose().len(), 8 + 32);
        assert_eq!(
            shape(key.expose()),
            Some(KeyPrefix {
                kind: KeyKind::Merchant,
                environment: Environment::Staging
            })
        );
        let courier = generate(KeyKind::Courier, Environment::Production);
        assert!(courier.expose().starts_with("ck_live_"));
        assert_eq!(shape(courier.expose()).unwrap().kind, KeyKind::Courier);
    }

    #[test]
    fn malformed_keys_have_no_shape() {
        let body = "a".repeat(32);
        for key in [
            String::new(),
            format!("sk_prod_{body}"),
            format!("pk_test_{body}"),
            format!("sk_test_{}", "a".repeat(31)),
            format!("sk_test_{}!", "a".repeat(31)),
            format!("sk_test_{body} "),
        ] {
            assert_eq!(shape(&key), None, "{key}");
        }
    }

    #[test]
    fn signing_keys_are_whsec_and_32_base62() {
        let made = random_token(SIGNING_KEY_PREFIX);
        assert!(is_signing_key(made.expose()));
        let body = "a".repeat(32);
        for bad in [
            String::new(),
            "whsec_".to_owned(),
            format!("whsec_{}", "a".repeat(31)),
            format!("whsec_{body}a"),
            format!("whsec_{}-", "a".repeat(31)),
            format!("whsec{body}"),
            format!("sk_test_{body}"),
        ] {
            assert!(!is_signing_key(&bad), "{bad}");
        }
    }

    #[test]
    fn secrets_are_redacted_in_debug_and_display() {
        let key = generate(KeyKind::Merchant, Environment::Staging);
        assert_eq!(format!("{key:?} {key}"), "[redacted] [redacted]");
    }

    #[test]
    fn key_terms_refuse_levels_a_resource_lacks_and_expiry_out_of_range() {
        let now = Utc::now();
        let terms = |p: &str, at| KeyTerms::parse(Some(p.parse().unwrap_or_default()), at, now);
        assert!(
            terms(
                "shipments:write,couriers:read,listen:write,testing:write",
                None
            )
            .is_ok()
        );
        let write_couriers = Permissions::none().with(Resource::Couriers, Access::Write);
        let refused = KeyTerms::parse(Some(write_couriers), None, now).unwrap_err();
        assert_eq!(refused.field, "permissions.couriers");
        let read_testing = Permissions::none().with(Resource::Testing, Access::Read);
        let refused = KeyTerms::parse(Some(read_testing), None, now).unwrap_err();
        assert_eq!(refused.field, "permissions.testing");
        for at in [
            now,
            now - Duration::seconds(1),
            now + MAX_KEY_LIFETIME + Duration::seconds(1),
        ] {
            assert_eq!(
                terms("none", Some(at)).unwrap_err().field,
                "expires_at",
                "{at}"
            );
        }
        assert!(terms("none", Some(now + MAX_KEY_LIFETIME)).is_ok());
        assert!(terms("none", Some(now + Duration::seconds(1))).is_ok());
    }

    #[test]
    fn the_expiry_warning_counts_down_in_the_last_week_only() {
        let at: DateTime<Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
        let warn = |left: Duration| expiry_warning(at, at - left);
        assert_eq!(warn(Duration::days(8)), None);
        assert_eq!(warn(Duration::days(7) + Duration::seconds(1)), None);
        assert_eq!(
            warn(Duration::days(7)).as_deref(),
            Some("this API key expires at 2026-12-01T00:00:00Z, in 7 days")
        );
        assert_eq!(
            warn(Duration::days(3) + Duration::hours(5)).as_deref(),
            Some("this API key expires at 2026-12-01T00:00:00Z, in 3 days")
        );
        assert_eq!(
            warn(Duration::hours(1)).as_deref(),
            Some("this API key expires at 2026-12-01T00:00:00Z, in 1 hour")
        );
        assert_eq!(
            warn(Duration::days(3) - Duration::seconds(2)).as_deref(),
            Some("this API key expires at 2026-12-01T00:00:00Z, in 3 days")
        );
        assert_eq!(
            warn(Duration::seconds(30)).as_deref(),
            Some("this API key expires at 2026-12-01T00:00:00Z, in 1 minute")
        );
        assert_eq!(warn(Duration::zero()), None);
    }

    #[test]
    fn stored_permissions_read_back() {
        let p = Permissions::read_only();
        assert_eq!(
            stored_permissions(&p),
            "shipments:read,couriers:read,listen:none,testing:none"
        );
        assert_eq!(
            StoredPermissions::try_from(Some(stored_permissions(&p))),
            Ok(StoredPermissions(Some(p)))
        );
        assert_eq!(
            StoredPermissions::try_from(None),
            Ok(StoredPermissions(None))
        );
    }

    #[test]
    fn digest_is_hex_sha256() {
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
