//! [`TestMerchant`]: a fresh merchant of a [`TestServer`](crate::TestServer)
//! for one test (`POST /testing/merchants`), isolated from every other
//! merchant as any two merchants are.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::{
    ApiKey, ApiKeyId, CourierId, CreateApiKey, DriverId, MerchantId, NewApiKey, Shipment, Status,
};
use shipment_sdk::{Client, DashboardClient};

use crate::{WebhookInbox, WebhookReceiver};

/// A merchant made for one test by [`TestServer::new_merchant`](crate::TestServer::new_merchant)
/// (crate::TestServer::new_merchant): its own API key, sign-in, courier
/// companies of its own (copies of the first merchant's, priced the same),
/// a courier key and a driver, and a webhook inbox of its own. Its
/// shipments, deliveries, faults and listener events are invisible to
/// every other merchant, and its courier key sees only its shipments, so
/// tests sharing one server run in parallel.
///
/// [`delete`](Self::delete) removes it and everything it owns; a merchant
/// not deleted goes with its server.
pub struct TestMerchant {
    /// Its id.
    pub id: MerchantId,
    /// Its API key (`sk_test_…`).
    pub api_key: String,
    /// The e-mail it signs in to the dashboard with.
    pub email: String,
    /// Its dashboard password.
    pub password: String,
    /// Its own courier companies (copies of the server's first merchant's).
    pub courier_company_ids: Vec<CourierId>,
    /// A key (`ck_test_…`) of its first courier company, for
    /// `/courier/...` routes; `None` when none is linked.
    pub courier_key: Option<String>,
    /// A driver of its first courier company, made for it.
    pub driver_id: Option<DriverId>,
    inbox: WebhookInbox,
    sdk: Client,
    base: String,
    client: reqwest::Client,
}

impl TestMerchant {
    /// Makes a merchant with `caller_key`, registering `receiver` as its
    /// webhook.
    pub(crate) async fn create(
        base: &str,
        client: &reqwest::Client,
        caller_key: &str,
        receiver: WebhookReceiver,
        sdk: impl FnOnce(&str) -> Client,
    ) -> TestMerchant {
        let (status, made) = crate::send(
            client
                .post(format!("{base}/testing/merchants"))
                .header("X-API-KEY", caller_key)
                .json(&json!({ "webhook_urls": [receiver.url] })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "a new merchant: {made}");
        let text = |field: &str| made[field].as_str().map(str::to_owned);
        let api_key = text("api_key").expect("an API key");
        let signing_key = made["webhooks"][0]["signing_key"]
            .as_str()
            .expect("a signing key");
        TestMerchant {
            id: MerchantId::new(made["merchant_id"].as_i64().expect("an id")),
            email: text("email").expect("an e-mail"),
            password: text("password").expect("a password"),
            courier_company_ids: made["courier_companies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["id"].as_i64())
                .map(CourierId::new)
                .collect(),
            courier_key: text("courier_key"),
            driver_id: made["driver"]["id"].as_i64().map(DriverId::new),
            inbox: WebhookInbox::new(receiver, signing_key),
            sdk: sdk(&api_key),
            api_key,
            base: base.to_owned(),
            client: client.clone(),
        }
    }

    /// An SDK client with its key (short retry back-offs, as
    /// [`TestServer::sdk`](crate::TestServer::sdk)).
    pub fn sdk(&self) -> &Client {
        &self.sdk
    }

    /// Its webhook inbox: every delivery of its shipments, verified with
    /// the webhook's signing key ([`WebhookInbox::signing_key`]).
    pub fn inbox(&mut self) -> &mut WebhookInbox {
        &mut self.inbox
    }

    /// Moves its shipment `code` through the real lifecycle to `to`
    /// (`POST /testing/shipments/{code}/advance`).
    ///
    /// # Panics
    ///
    /// When the server refuses (`to` is not reachable from where it is).
    pub async fn advance(&self, code: impl AsRef<str>, to: Status) -> Shipment {
        let path = format!("/testing/shipments/{}/advance", code.as_ref());
        let body = self.control(Method::POST, &path, json!({ "to": to.as_str() }));
        serde_json::from_value(body.await).expect("a shipment")
    }

    /// A new API key of this merchant, made through its dashboard sign-in
    /// as `key` describes it (permissions, expiry), as
    /// [`TestServer::create_api_key`](crate::TestServer::create_api_key)
    /// does for the first merchant.
    ///
    /// # Panics
    ///
    /// When the sign-in fails or the server refuses the key.
    pub async fn create_api_key(&self, key: &CreateApiKey) -> NewApiKey {
        DashboardClient::builder()
            .base_url(&self.base)
            .login(&self.email, &self.password)
            .await
            .expect("the merchant signs in")
            .api_keys()
            .create_with(key)
            .await
            .expect("the server makes the key")
    }

    /// Makes its API key `api_key` (its own [`api_key`](Self::api_key), or
    /// one from [`create_api_key`](Self::create_api_key)) expire now
    /// (`POST /testing/api-keys/{id}/expire`, asked with its own key), as
    /// [`TestServer::expire_api_key`](crate::TestServer::expire_api_key)
    /// does. Expiring its own key leaves it without a working key for
    /// the test controls: [`delete`](Self::delete) then needs another.
    ///
    /// # Panics
    ///
    /// When `api_key` is not a working key of this merchant, or the server
    /// refuses.
    pub async fn expire_api_key(&self, api_key: &str) -> ApiKey {
        let id = key_id(&self.base, &self.client, api_key).await;
        let path = format!("/testing/api-keys/{}/expire", id.get());
        let answer = self.control(Method::POST, &path, Value::Null).await;
        serde_json::from_value(answer).expect("the key as listed")
    }

    /// Deletes it and everything it owns (`DELETE /testing/merchants/{id}`);
    /// its key is refused from then on. Returns what was removed, per kind
    /// (`{"shipments": 2, "webhooks": 1, ...}`).
    ///
    /// # Panics
    ///
    /// When the server refuses (a change still being delivered after
    /// 10 s).
    pub async fn delete(self) -> Value {
        let path = format!("/testing/merchants/{}", self.id.get());
        let answer = self.control(Method::DELETE, &path, Value::Null).await;
        answer["removed"].clone()
    }

    async fn control(&self, method: Method, path: &str, body: Value) -> Value {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("X-API-KEY", &self.api_key)
            .timeout(Duration::from_secs(30));
        if !body.is_null() {
            request = request.json(&body);
        }
        let (status, answer) = crate::send(request).await;
        assert!(status.is_success(), "{path}: {status} {answer}");
        answer
    }
}

/// The id of the working key `api_key`, as the key tells it
/// (`GET /api-keys/current`): the id the test controls take.
///
/// # Panics
///
/// When the server does not accept the key.
pub(crate) async fn key_id(base: &str, client: &reqwest::Client, api_key: &str) -> ApiKeyId {
    let (status, answer) = crate::send(
        client
            .get(format!("{base}/api-keys/current"))
            .header("X-API-KEY", api_key),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the key is not a working key: {answer}"
    );
    ApiKeyId::new(answer["id"].as_i64().expect("the key's id"))
}
