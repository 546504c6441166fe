//! `dashboard.api_keys()`: creating, listing, deleting and verifying the
//! merchant's API keys.

use reqwest::Method;

use crate::dashboard::DashboardClient;
use crate::error::Result;
use crate::model::{
    ApiKey, ApiKeyId, CreateApiKey, KeyVerdict, List, NewApiKey, Secret, VerifyApiKey,
};
use crate::transport::Call;

/// The API key endpoints; get one with [`DashboardClient::api_keys`].
#[derive(Debug, Clone, Copy)]
pub struct ApiKeys<'a> {
    dashboard: &'a DashboardClient,
}

impl<'a> ApiKeys<'a> {
    pub(crate) fn new(dashboard: &'a DashboardClient) -> Self {
        ApiKeys { dashboard }
    }

    /// The merchant's keys (`GET /api-keys`): names, prefixes and last four
    /// characters, never the secrets; a restricted key's permissions, and
    /// each key's expiry (expired keys are listed, marked
    /// [`expired`](ApiKey::expired)).
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// for key in dashboard.api_keys().list().await? {
    ///     let can = key.permissions.map_or("everything".to_owned(), |p| p.to_string());
    ///     println!("{:>4} {:<20} {}...{} may do {can}, last used {:?}", key.id, key.name, key.prefix, key.last4, key.last_used_at);
    ///     if key.expired {
    ///         println!("     expired: delete it");
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list(&self) -> Result<Vec<ApiKey>> {
        let call = Call::get("/api-keys", "/api-keys");
        let list: List<ApiKey> = self.dashboard.transport.json(call).await?;
        Ok(list.data)
    }

    /// Creates a key for the server's environment (`POST /api-keys`). The
    /// answer holds the key itself, which is never shown again; an empty
    /// name lets the server choose one.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// let created = dashboard.api_keys().create("checkout service").await?;
    /// save_somewhere_safe(created.key.expose());
    /// # Ok(()) }
    /// # fn save_somewhere_safe(_: &str) {}
    /// ```
    pub async fn create(&self, name: &str) -> Result<NewApiKey> {
        self.create_with(&CreateApiKey {
            name: Some(name.to_owned()),
            ..CreateApiKey::default()
        })
        .await
    }

    /// Creates a key as `key` describes it (`POST /api-keys`): with
    /// [`permissions`](CreateApiKey::permissions), a restricted key
    /// (`rk_test_`/`rk_live_`) that may do only what they allow (resources
    /// left out are `none`); with an [`expires_at`](CreateApiKey::expires_at)
    /// (in the future, at most 366 days ahead), a key that stops working
    /// then. A name that is empty or only spaces lets the server choose
    /// one. The answer holds the key itself, which is never shown again.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::chrono::{TimeDelta, Utc};
    /// use shipment_sdk::model::{CreateApiKey, Permissions};
    /// // Support staff: read shipments and couriers, for 90 days.
    /// let created = dashboard
    ///     .api_keys()
    ///     .create_with(&CreateApiKey {
    ///         name: Some("support".into()),
    ///         permissions: Some(Permissions::read_only()),
    ///         expires_at: Some(Utc::now() + TimeDelta::days(90)),
    ///     })
    ///     .await?;
    /// assert!(created.key.expose().starts_with("rk_"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A 400 [`Error::Api`](crate::Error::Api) naming the
    /// [`field`](crate::Error::field) at fault: `expires_at` in the past
    /// or too far ahead, `permissions.couriers` at `write`...
    pub async fn create_with(&self, key: &CreateApiKey) -> Result<NewApiKey> {
        let name = key.name.as_deref().map(str::trim).filter(|n| !n.is_empty());
        let body = CreateApiKey {
            name: name.map(str::to_owned),
            ..key.clone()
        };
        let call = Call::new(Method::POST, "/api-keys", "/api-keys").json(&body)?;
        self.dashboard.transport.json(call).await
    }

    /// Deletes a key (`DELETE /api-keys/:id`); it fails with 401 at once.
    /// An id the merchant does not have is a 404.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// use shipment_sdk::model::ApiKeyId;
    /// dashboard.api_keys().delete(ApiKeyId::new(17)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self, id: ApiKeyId) -> Result<()> {
        let call = Call::new(Method::DELETE, "/api-keys/{id}", format!("/api-keys/{id}"));
        self.dashboard.transport.empty(call).await
    }

    /// Whether a pasted string is one of the merchant's working keys
    /// (`POST /api-keys/verify`), full (`sk_`) or restricted (`rk_`). Any
    /// string is a fair question: a malformed one is simply not valid. For
    /// the merchant's own key the verdict also says whether it is
    /// restricted, its permissions and expiry; an expired one is not
    /// valid, and says it [`expired`](KeyVerdict::expired).
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// let verdict = dashboard.api_keys().verify("sk_test_...").await?;
    /// if verdict.valid {
    ///     println!("key {:?} ({:?}) works", verdict.id, verdict.name);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn verify(&self, key: &str) -> Result<KeyVerdict> {
        let body = VerifyApiKey {
            key: Secret::new(key),
        };
        let call = Call::new(Method::POST, "/api-keys/verify", "/api-keys/verify").json(&body)?;
        self.dashboard.transport.json(call).await
    }
}
