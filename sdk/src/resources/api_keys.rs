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
    /// characters, never the secrets.
    ///
    /// ```no_run
    /// # async fn run(dashboard: shipment_sdk::DashboardClient) -> shipment_sdk::Result<()> {
    /// for key in dashboard.api_keys().list().await? {
    ///     println!("{:>4} {:<20} {}...{} last used {:?}", key.id, key.name, key.prefix, key.last4, key.last_used_at);
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
        let name = name.trim();
        let body = CreateApiKey {
            name: (!name.is_empty()).then(|| name.to_owned()),
            ..CreateApiKey::default()
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
    /// (`POST /api-keys/verify`). Any string is a fair question: a
    /// malformed one is simply not valid.
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
