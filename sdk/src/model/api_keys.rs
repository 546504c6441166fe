//! Merchant API keys as the dashboard lists, creates and verifies them,
//! the permissions of a restricted key, and a key's view of itself.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};

use super::timestamp;
use super::{ApiKeyId, MerchantId, Secret};

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
    /// `sk_test_` or `sk_live_` for a full key, `rk_test_` or `rk_live_`
    /// for a restricted one.
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
    /// What a restricted key may do (every resource named); `null` for a
    /// full key, which may do everything the merchant may.
    #[serde(default)]
    pub permissions: Option<Permissions>,
    /// When the key stops working; `null` if never.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// Whether it has expired (it is then refused with `api_key_expired`).
    #[serde(default)]
    pub expired: bool,
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
            permissions: None,
            expires_at: None,
            expired: false,
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
    /// Present: a restricted key (`rk_`) with these permissions, resources
    /// left out being `none`. Absent: a full key (`sk_`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Permissions>,
    /// When the key stops working: in the future, at most 366 days ahead.
    /// Absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
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
    /// Whether the key is a restricted one, when it is the merchant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restricted: Option<bool>,
    /// A restricted key's permissions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Permissions>,
    /// When the key expires (or expired), if it has an expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// Whether the merchant's key has expired (`valid` is then false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired: Option<bool>,
}

impl KeyVerdict {
    /// The string is the merchant's working key `id`, named `name`.
    pub fn valid(id: ApiKeyId, name: impl Into<String>) -> KeyVerdict {
        KeyVerdict {
            valid: true,
            id: Some(id),
            name: Some(name.into()),
            restricted: None,
            permissions: None,
            expires_at: None,
            expired: None,
        }
    }

    /// The string is not one of the merchant's working keys.
    pub fn invalid() -> KeyVerdict {
        KeyVerdict {
            valid: false,
            id: None,
            name: None,
            restricted: None,
            permissions: None,
            expires_at: None,
            expired: None,
        }
    }

    /// The verdict on the merchant's own key `key`, as listed: valid unless
    /// it expired, with its permissions and expiry.
    pub fn of_key(key: &ApiKey) -> KeyVerdict {
        KeyVerdict {
            valid: !key.expired,
            id: Some(key.id),
            name: Some(key.name.clone()),
            restricted: Some(key.permissions.is_some()),
            permissions: key.permissions,
            expires_at: key.expires_at,
            expired: Some(key.expired),
        }
    }
}

/// A resource of the API-key routes, as the OpenAPI document tags them: what
/// a restricted key's permissions are given per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Resource {
    /// Shipments: read (list, get) and write (create, cancel, rate, make a
    /// confirmation code).
    Shipments,
    /// The courier companies linked to the merchant: read only.
    Couriers,
    /// The listener stream and its signing key: read (listen, get the
    /// key) and write (replace the key).
    Listen,
    /// The test controls (`/testing/...`, test mode only): write only.
    Testing,
}

impl Resource {
    /// Every resource, in the order they are shown.
    pub const ALL: [Resource; 4] = [
        Resource::Shipments,
        Resource::Couriers,
        Resource::Listen,
        Resource::Testing,
    ];

    /// The name on the wire, as the OpenAPI tag: `shipments`.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Shipments => "shipments",
            Resource::Couriers => "couriers",
            Resource::Listen => "listen",
            Resource::Testing => "testing",
        }
    }

    /// The levels a key may hold on this resource, lowest first: `none`
    /// always, then what the resource has (couriers cannot be written,
    /// the test controls have nothing to read).
    pub fn levels(self) -> &'static [Access] {
        match self {
            Resource::Shipments | Resource::Listen => &[Access::None, Access::Read, Access::Write],
            Resource::Couriers => &[Access::None, Access::Read],
            Resource::Testing => &[Access::None, Access::Write],
        }
    }

    /// The highest level this resource has: what a full key holds.
    pub fn highest(self) -> Access {
        *self.levels().last().unwrap_or(&Access::None)
    }

    /// The resource of this wire name.
    pub fn from_name(name: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.name() == name)
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How much a key may do on one [`Resource`]: `none` < `read` < `write`
/// (`write` includes `read`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Access {
    /// Nothing.
    #[default]
    None,
    /// Read: list and get.
    Read,
    /// Read and write.
    Write,
}

impl Access {
    /// The name on the wire: `none`, `read` or `write`.
    pub fn name(self) -> &'static str {
        match self {
            Access::None => "none",
            Access::Read => "read",
            Access::Write => "write",
        }
    }

    /// The level of this wire name.
    pub fn from_name(name: &str) -> Option<Access> {
        [Access::None, Access::Read, Access::Write]
            .into_iter()
            .find(|a| a.name() == name)
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a restricted key may do, per [`Resource`]. On the wire an object
/// naming each resource (`{"shipments": "read", "couriers": "read",
/// "listen": "none", "testing": "none"}`); in a request, resources left out
/// are `none`, and a name that is not a resource is refused.
///
/// ```
/// use shipment_sdk::model::{Access, Permissions, Resource};
///
/// let support: Permissions = "shipments:read,couriers:read".parse().unwrap();
/// assert_eq!(support, Permissions::read_only());
/// assert_eq!(support.get(Resource::Shipments), Access::Read);
/// assert_eq!(support.to_string(), "shipments:read,couriers:read");
/// assert!("shipments:admin".parse::<Permissions>().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(example = json!({"shipments": "read", "couriers": "read", "listen": "none", "testing": "none"}))
)]
// What a name that is not a resource gets in a request (400), said in the
// schema (`additionalProperties: false`); the Deserialize impl refuses it.
#[serde(deny_unknown_fields)]
#[non_exhaustive]
// Each field is optional in the schema because a request may leave a
// resource out (it is then `none`); every answer names all of them.
pub struct Permissions {
    /// `none`, `read` or `write`.
    #[cfg_attr(feature = "openapi", schema(required = false))]
    pub shipments: Access,
    /// `none` or `read`.
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, schema_with = access_schema::couriers)
    )]
    pub couriers: Access,
    /// `none`, `read` or `write`.
    #[cfg_attr(feature = "openapi", schema(required = false))]
    pub listen: Access,
    /// `none` or `write`.
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, schema_with = access_schema::testing)
    )]
    pub testing: Access,
}

/// The levels the resources with fewer than [`Access`]'s three have
/// ([`Resource::levels`]), as the document's schema: a generated client (or
/// a property-based test) then never offers a level the server refuses.
#[cfg(feature = "openapi")]
mod access_schema {
    use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

    use super::Resource;

    fn levels(resource: Resource) -> Object {
        let names: Vec<&str> = resource.levels().iter().map(|a| a.name()).collect();
        let quoted: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(names))
            .description(Some(format!("{}.", quoted.join(" or "))))
            .build()
    }

    pub(super) fn couriers() -> Object {
        levels(Resource::Couriers)
    }

    pub(super) fn testing() -> Object {
        levels(Resource::Testing)
    }
}

impl Permissions {
    /// Nothing: a key that can only tell what it is (`GET /api-keys/current`).
    pub fn none() -> Permissions {
        Permissions::default()
    }

    /// Reading shipments and the linked courier companies: a support
    /// person's key.
    pub fn read_only() -> Permissions {
        Permissions::none()
            .with(Resource::Shipments, Access::Read)
            .with(Resource::Couriers, Access::Read)
    }

    /// Every resource at its highest level: what a full key may do.
    pub fn full() -> Permissions {
        Resource::ALL
            .into_iter()
            .fold(Permissions::none(), |p, r| p.with(r, r.highest()))
    }

    /// The level on `resource`.
    pub fn get(&self, resource: Resource) -> Access {
        match resource {
            Resource::Shipments => self.shipments,
            Resource::Couriers => self.couriers,
            Resource::Listen => self.listen,
            Resource::Testing => self.testing,
        }
    }

    /// These permissions with `resource` at `access`.
    pub fn with(mut self, resource: Resource, access: Access) -> Permissions {
        match resource {
            Resource::Shipments => self.shipments = access,
            Resource::Couriers => self.couriers = access,
            Resource::Listen => self.listen = access,
            Resource::Testing => self.testing = access,
        }
        self
    }

    /// Whether they allow `access` on `resource` (`write` includes `read`).
    pub fn allows(&self, resource: Resource, access: Access) -> bool {
        self.get(resource) >= access
    }
}

/// The CLI form: `shipments:read,couriers:read`, resources at `none` left
/// out; `none` when every one is.
impl fmt::Display for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let granted: Vec<String> = Resource::ALL
            .into_iter()
            .filter(|r| self.get(*r) != Access::None)
            .map(|r| format!("{r}:{}", self.get(r)))
            .collect();
        if granted.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&granted.join(","))
        }
    }
}

/// Why a text is not [`Permissions`] in the CLI form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPermissions(pub String);

impl fmt::Display for InvalidPermissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidPermissions {}

impl FromStr for Permissions {
    type Err = InvalidPermissions;

    /// Reads the CLI form, `resource:level` pairs separated by commas
    /// (spaces around them allowed); `none` or an empty text is no
    /// permission at all. A resource named twice, an unknown resource or
    /// level, or a level the resource does not have is refused.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let mut permissions = Permissions::none();
        if s.is_empty() || s == "none" {
            return Ok(permissions);
        }
        let mut seen = Vec::new();
        for pair in s.split(',') {
            let pair = pair.trim();
            let (resource, level) = pair.split_once(':').ok_or_else(|| {
                InvalidPermissions(format!(
                    "`{pair}` is not resource:level (for example shipments:read)"
                ))
            })?;
            let (resource, level) = (resource.trim(), level.trim());
            let resource = Resource::from_name(resource)
                .ok_or_else(|| InvalidPermissions(unknown_resource(resource)))?;
            let access = Access::from_name(level)
                .ok_or_else(|| InvalidPermissions(unknown_level(resource, level)))?;
            if !resource.levels().contains(&access) {
                return Err(InvalidPermissions(unknown_level(resource, level)));
            }
            if seen.contains(&resource) {
                return Err(InvalidPermissions(format!("`{resource}` is named twice")));
            }
            seen.push(resource);
            permissions = permissions.with(resource, access);
        }
        Ok(permissions)
    }
}

fn unknown_resource(name: &str) -> String {
    let known: Vec<&str> = Resource::ALL.iter().map(|r| r.name()).collect();
    format!("`{name}` is not a resource: use {}", known.join(", "))
}

fn unknown_level(resource: Resource, level: &str) -> String {
    let levels: Vec<&str> = resource.levels().iter().map(|a| a.name()).collect();
    format!(
        "`{level}` is not a level of {resource}: use {}",
        levels.join(", ")
    )
}

/// Reads the wire object: resources left out are `none`; a name that is
/// not a resource is refused, with the error at that name (so the server's
/// problem names `permissions.<name>`). Whether a level fits its resource
/// (`couriers: write`) is the server's check, so the refusal names it.
impl<'de> Deserialize<'de> for Permissions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Permissions;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of resource names and levels")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Permissions, A::Error> {
                let mut permissions = Permissions::none();
                while let Some(name) = map.next_key::<String>()? {
                    match Resource::from_name(&name) {
                        Some(resource) => {
                            let access: Access = map.next_value()?;
                            permissions = permissions.with(resource, access);
                        }
                        // Failed as the value, so the error's path ends in
                        // the name.
                        None => map.next_value_seed(NotAResource(name))?,
                    }
                }
                Ok(permissions)
            }
        }

        struct NotAResource(String);

        impl<'de> serde::de::DeserializeSeed<'de> for NotAResource {
            type Value = ();

            fn deserialize<D: Deserializer<'de>>(self, _: D) -> Result<(), D::Error> {
                Err(serde::de::Error::custom(unknown_resource(&self.0)))
            }
        }

        deserializer.deserialize_map(Visitor)
    }
}

/// Answer of `GET /api-keys/current`: the key that made the request, as it
/// sees itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct CurrentKey {
    /// The key's id.
    #[cfg_attr(feature = "openapi", schema(value_type = i64, example = 12))]
    pub id: ApiKeyId,
    /// Its name.
    #[cfg_attr(feature = "openapi", schema(example = "support"))]
    pub name: String,
    /// The merchant it belongs to.
    #[cfg_attr(feature = "openapi", schema(value_type = i64, example = 3))]
    pub merchant_id: MerchantId,
    /// `sk_test_`, `sk_live_`, `rk_test_` or `rk_live_`.
    #[cfg_attr(feature = "openapi", schema(example = "rk_test_"))]
    pub prefix: String,
    /// Its last four characters.
    #[cfg_attr(feature = "openapi", schema(example = "Ab3Z"))]
    pub last4: String,
    /// `staging` or `production`.
    #[cfg_attr(feature = "openapi", schema(example = "staging"))]
    pub environment: String,
    /// Whether it is a restricted key.
    pub restricted: bool,
    /// What it may do: a full key's are every resource at its highest level.
    pub permissions: Permissions,
    /// When it stops working; `null` if never.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was created.
    #[serde(serialize_with = "timestamp::serialize")]
    pub created_at: DateTime<Utc>,
}

impl CurrentKey {
    /// The introspection answer for the listed key `key` of `merchant_id`
    /// on `environment`.
    pub fn new(
        key: &ApiKey,
        merchant_id: MerchantId,
        environment: impl Into<String>,
    ) -> CurrentKey {
        CurrentKey {
            id: key.id,
            name: key.name.clone(),
            merchant_id,
            prefix: key.prefix.clone(),
            last4: key.last4.clone(),
            environment: environment.into(),
            restricted: key.permissions.is_some(),
            permissions: key.permissions.unwrap_or_else(Permissions::full),
            expires_at: key.expires_at,
            created_at: key.created_at,
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
        let mut written = json;
        written["permissions"] = serde_json::Value::Null;
        written["expires_at"] = serde_json::Value::Null;
        written["expired"] = false.into();
        assert_eq!(serde_json::to_value(&key).unwrap(), written);
    }

    #[test]
    fn permissions_name_every_resource_and_default_to_none() {
        let p: Permissions = serde_json::from_str(r#"{"shipments": "read"}"#).unwrap();
        assert_eq!(
            p,
            Permissions::none().with(Resource::Shipments, Access::Read)
        );
        assert_eq!(
            serde_json::to_value(p).unwrap(),
            serde_json::json!({"shipments": "read", "couriers": "none", "listen": "none", "testing": "none"})
        );
        let unknown = serde_json::from_str::<Permissions>(r#"{"refunds": "read"}"#).unwrap_err();
        assert!(
            unknown.to_string().contains("`refunds` is not a resource"),
            "{unknown}"
        );
        assert!(serde_json::from_str::<Permissions>(r#"{"shipments": "admin"}"#).is_err());
    }

    #[test]
    fn the_cli_form_round_trips_and_refuses_what_a_resource_lacks() {
        for p in [
            Permissions::none(),
            Permissions::read_only(),
            Permissions::full(),
            Permissions::none().with(Resource::Testing, Access::Write),
        ] {
            assert_eq!(p.to_string().parse::<Permissions>(), Ok(p), "{p}");
        }
        assert_eq!(
            Permissions::full().to_string(),
            "shipments:write,couriers:read,listen:write,testing:write"
        );
        assert_eq!(
            " shipments : write ".parse(),
            Ok(Permissions::none().with(Resource::Shipments, Access::Write))
        );
        for bad in [
            "couriers:write",
            "testing:read",
            "shipments",
            "refunds:read",
            "shipments:read,shipments:write",
        ] {
            assert!(bad.parse::<Permissions>().is_err(), "{bad}");
        }
        assert_eq!(
            "couriers:write"
                .parse::<Permissions>()
                .unwrap_err()
                .to_string(),
            "`write` is not a level of couriers: use none, read"
        );
    }

    #[test]
    fn write_includes_read() {
        let p = Permissions::none().with(Resource::Listen, Access::Write);
        assert!(p.allows(Resource::Listen, Access::Read));
        assert!(p.allows(Resource::Listen, Access::Write));
        assert!(!p.allows(Resource::Shipments, Access::Read));
        assert!(p.allows(Resource::Shipments, Access::None));
    }
}
