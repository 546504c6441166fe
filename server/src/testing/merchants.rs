//! A merchant per test (`POST /testing/merchants`): a fresh merchant with
//! everything a test needs, and its deletion with everything it owns.
//!
//! Why: a parallel suite sharing one server mixes its tests' shipments,
//! webhooks, faults and listener events when they share a merchant; a
//! merchant per test is isolated the way any two merchants are.
//!
//! What a test merchant gets, and what it can see:
//! - Courier companies of its own: for each company named (which must be
//!   linked to the caller: any other id, existing or not, is refused with
//!   one message, so ids cannot be probed) or, by default, each company
//!   linked to the caller, a copy priced the same and linked to it alone.
//!   Its courier key is a key of the first copy, so it sees and moves only
//!   this test merchant's shipments: a company's key sees every shipment at
//!   the company, and a company shared by two merchants would show each
//!   the other's.
//! - A key, a sign-in, a driver of the first copy, and its webhooks.
//! - How many exist at once is bounded per caller and in all
//!   ([`TestMerchantLimits`], `--max-test-merchants-per-caller` and
//!   `--max-test-merchants`); one more is 429 `rate_limited`, so a test
//!   loop that never deletes cannot fill the disk.
//!
//! What a deletion decides:
//! - Only a merchant made here can be deleted here, with its own key (a
//!   merchant of the fixtures file, `admin` or the demo is 403: deleting
//!   the key a CI file shares would break every test that uses it).
//! - Its shipments, and everything made for it: its courier companies with
//!   their keys (refused at once, in every process on PostgreSQL) and
//!   drivers.
//! - A change being delivered right now (claimed by a dispatcher) holds the
//!   deletion back: it waits up to [`DELETE_WAIT`] for the delivery to end,
//!   then answers 409 `invalid_state`. Changes not yet claimed are deleted
//!   unsent (on PostgreSQL they are locked meanwhile, so no process claims
//!   one while the deletion runs).
//! - Its API keys and sessions are forgotten at once in this process (key
//!   cache, listener streams: an open listen stream ends) and, on
//!   PostgreSQL, announced to the other processes in the deleting
//!   transaction, as a deleted key is.
//! - Its faults and pending duplicate deliveries are dropped from this
//!   process's memory (another process sharing the database keeps those
//!   armed there until they are used; the merchant's requests are refused
//!   anyway).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use shipment_sdk::model::{CourierCompany, CourierId, MerchantId, WebhookId};

use super::controls::{TEST_DRIVER, controls};
use super::{Result, TestingError};
use crate::app::couriers::{self, Driver};
use crate::app::{AppState, Error, api_keys, auth, webhooks};
use crate::domain::FieldError;
use crate::domain::keys;
use crate::store::merchants::{
    MerchantDeletion, RemovedCounts, TestMerchantCreation, TestMerchantLimits, TestMerchantSpec,
};

/// Longest merchant name accepted, in characters.
pub(crate) const MAX_MERCHANT_NAME: usize = 100;
/// Most webhook URLs one new merchant may register.
pub(crate) const MAX_WEBHOOK_URLS: usize = 10;
/// Most courier companies one new merchant may be linked to.
pub(crate) const MAX_COURIER_COMPANIES: usize = 20;
/// How long a deletion waits for the merchant's deliveries in flight.
pub(crate) const DELETE_WAIT: Duration = Duration::from_secs(10);
/// Why a deletion of another merchant's id (or of no merchant's) is 404.
const NOT_YOURS: &str = "no merchant of yours has this id: a merchant's key deletes only that \
                         merchant";
/// The name of a merchant made without one.
pub(crate) const DEFAULT_NAME: &str = "Test merchant";
/// Test merchants one merchant's keys may have made that exist at once,
/// unless `--max-test-merchants-per-caller` says otherwise: more than a
/// parallel suite holds at a time.
pub(crate) const DEFAULT_MAX_PER_CALLER: u64 = 100;
/// Test merchants that may exist at once in all, unless
/// `--max-test-merchants` says otherwise (each is a few rows and ~14 KB).
pub(crate) const DEFAULT_MAX_TOTAL: u64 = 1_000;
/// `Retry-After` of a creation refused by a limit: a parallel suite's
/// tests delete theirs within seconds.
pub(crate) const LIMIT_RETRY_AFTER_SECS: u64 = 5;
/// Why a named courier company cannot be copied, whether it exists or not.
fn not_linked(id: CourierId) -> FieldError {
    FieldError::invalid(
        "courier_company_ids",
        format!(
            "no courier company linked to you has the id {}: name only companies \
             GET /merchant-couriers lists",
            id.get()
        ),
    )
}

impl Default for TestMerchantLimits {
    fn default() -> TestMerchantLimits {
        TestMerchantLimits {
            per_caller: DEFAULT_MAX_PER_CALLER,
            total: DEFAULT_MAX_TOTAL,
        }
    }
}

/// Body of `POST /testing/merchants`; every field may be left out.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewMerchant {
    /// Display name (trimmed; at most 100 characters); "Test merchant"
    /// when absent or empty.
    #[schema(example = "checkout tests #7")]
    pub name: Option<String>,
    /// The courier companies to copy, by id (at most 20, each linked to
    /// the caller); when absent, those linked to the caller. The new
    /// merchant gets a company of its own per id, priced the same.
    #[schema(value_type = Option<Vec<i64>>)]
    pub courier_company_ids: Option<Vec<CourierId>>,
    /// Webhooks to register for the new merchant (at most 10, distinct,
    /// each a URL `POST /webhooks` would take).
    #[schema(example = json!(["https://ci.example.com/hooks/shipments"]))]
    pub webhook_urls: Option<Vec<String>>,
}

/// A webhook registered for a new test merchant.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct TestWebhook {
    /// The webhook's id.
    #[schema(value_type = i64)]
    pub webhook_id: WebhookId,
    /// Its URL.
    pub url: String,
    /// Its signing key (`whsec_…`), shown this once.
    pub signing_key: String,
}

/// Everything a test needs of its fresh merchant. Secrets are shown this
/// once.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct TestMerchant {
    /// The merchant's id (the `{id}` of its deletion).
    #[schema(value_type = i64)]
    pub merchant_id: MerchantId,
    /// Display name.
    pub name: String,
    /// An API key of the merchant (`X-API-KEY`).
    pub api_key: String,
    /// The e-mail it signs in to the dashboard with.
    pub email: String,
    /// Its dashboard password.
    pub password: String,
    /// Its own courier companies, one per company asked for (copies,
    /// priced the same, linked to it alone).
    pub courier_companies: Vec<CourierCompany>,
    /// A key of its first courier company (`ck_…`): it sees and moves only
    /// this merchant's shipments; `null` when it has no company.
    pub courier_key: Option<String>,
    /// A driver of its first courier company; `null` when it has none.
    pub driver: Option<Driver>,
    /// One per URL of the body, in its order.
    pub webhooks: Vec<TestWebhook>,
}

/// The answer to `DELETE /testing/merchants/{id}`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct DeletedMerchant {
    /// The merchant deleted.
    #[schema(value_type = i64)]
    pub merchant_id: MerchantId,
    /// What was removed.
    pub removed: RemovedCounts,
}

/// Checks `request` whole before anything is made, so a refused body
/// leaves nothing behind: the name, the courier ids, the URLs.
async fn check(
    state: &AppState,
    caller: MerchantId,
    request: &NewMerchant,
) -> Result<(String, Vec<CourierId>, Vec<String>)> {
    if let Some(sent) = &request.name {
        crate::domain::validation::no_control_characters("name", sent)?;
    }
    let name = match request.name.as_deref().map(str::trim) {
        Some(n) if n.chars().count() > MAX_MERCHANT_NAME => {
            return Err(FieldError::invalid(
                "name",
                format!("`name` must be at most {MAX_MERCHANT_NAME} characters"),
            )
            .into());
        }
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => DEFAULT_NAME.to_owned(),
    };
    let couriers = match &request.courier_company_ids {
        Some(ids) => {
            if ids.len() > MAX_COURIER_COMPANIES {
                return Err(FieldError::invalid(
                    "courier_company_ids",
                    format!(
                        "`courier_company_ids` holds at most {MAX_COURIER_COMPANIES} courier \
                         companies"
                    ),
                )
                .into());
            }
            let linked = couriers::list_merchant_couriers(state, caller).await?;
            let mut unique = Vec::with_capacity(ids.len());
            for id in ids {
                if !linked.iter().any(|c| c.id == *id) {
                    return Err(not_linked(*id).into());
                }
                if !unique.contains(id) {
                    unique.push(*id);
                }
            }
            unique
        }
        None => couriers::list_merchant_couriers(state, caller)
            .await?
            .into_iter()
            .map(|c| c.id)
            .collect(),
    };
    let urls = request.webhook_urls.clone().unwrap_or_default();
    if urls.len() > MAX_WEBHOOK_URLS {
        return Err(FieldError::invalid(
            "webhook_urls",
            format!("`webhook_urls` holds at most {MAX_WEBHOOK_URLS} URLs"),
        )
        .into());
    }
    let mut checked: Vec<String> = Vec::with_capacity(urls.len());
    for (at, raw) in urls.iter().enumerate() {
        let url = webhooks::check_webhook_url(state, "webhook_urls", raw).await?;
        if let Some(first) = checked.iter().position(|u| u == url.as_str()) {
            return Err(FieldError::invalid(
                "webhook_urls",
                format!(
                    "`webhook_urls` names the same URL twice (items {first} and {at}, counted \
                     from 0)"
                ),
            )
            .into());
        }
        checked.push(url.as_str().to_owned());
    }
    Ok((name, couriers, checked))
}

/// Makes a fresh merchant for a test: its API key, a sign-in e-mail and
/// password, courier companies of its own (copies of the caller's, or of
/// those the body names), a courier key and a driver of the first of them,
/// and a webhook per URL of the body.
pub(crate) async fn create_test_merchant(
    state: &AppState,
    caller: MerchantId,
    request: NewMerchant,
) -> Result<TestMerchant> {
    let controls = controls(state)?;
    let (name, courier_ids, urls) = check(state, caller, &request).await?;
    // Random, so concurrent suites on one server never collide; the
    // reserved `.test` domain can receive no mail.
    let email = format!(
        "{}@merchants.test",
        keys::random_token("merchant-")
            .expose()
            .to_ascii_lowercase()
    );
    let password = keys::random_token("pw-").expose().to_owned();
    let hash = auth::hash_password(state, password.clone()).await?;
    let spec = TestMerchantSpec {
        made_by: caller,
        name: &name,
        email: &email,
        password_hash: &hash,
        couriers: &courier_ids,
        driver_name: TEST_DRIVER,
        environment: state.environment,
        limits: controls.limits,
    };
    let made = match state
        .store
        .create_test_merchant(&spec)
        .await
        .map_err(Error::from)?
    {
        TestMerchantCreation::Made(made) => made,
        TestMerchantCreation::CallerAtLimit(limit) => {
            return Err(TestingError::TooManyTestMerchants {
                limit,
                whose: "made by your keys",
            });
        }
        TestMerchantCreation::TotalAtLimit(limit) => {
            return Err(TestingError::TooManyTestMerchants {
                limit,
                whose: "of all callers",
            });
        }
        TestMerchantCreation::NotLinked(id) => return Err(not_linked(id).into()),
    };
    let merchant_id = made.merchant_id;
    let (_, api_key) = api_keys::create_api_key(state, merchant_id, Some("test merchant")).await?;
    let (courier_key, driver) = match made.courier_key {
        Some((key, driver)) => (Some(key.expose().to_owned()), Some(Driver::from(driver))),
        None => (None, None),
    };
    let mut hooks = Vec::with_capacity(urls.len());
    for url in urls {
        let (webhook, signing_key) = webhooks::register_webhook(state, merchant_id, &url).await?;
        hooks.push(TestWebhook {
            webhook_id: webhook.webhook_id,
            url: webhook.url.to_string(),
            signing_key: signing_key.expose().to_owned(),
        });
    }
    Ok(TestMerchant {
        merchant_id,
        name,
        api_key: api_key.expose().to_owned(),
        email,
        password,
        courier_companies: couriers::list_merchant_couriers(state, merchant_id).await?,
        courier_key,
        driver,
        webhooks: hooks,
    })
}

/// Deletes the caller's own merchant (`id` must be the caller: another
/// merchant's id is not found, as for any resource of another merchant),
/// if `POST /testing/merchants` made it, and everything it owns; see the
/// module documentation for what it decides about courier companies,
/// deliveries in flight and listeners.
pub(crate) async fn delete_test_merchant(
    state: &AppState,
    caller: MerchantId,
    id: MerchantId,
) -> Result<DeletedMerchant> {
    let controls = controls(state)?;
    if id != caller {
        return Err(Error::NotFound(NOT_YOURS.into()).into());
    }
    let started = Instant::now();
    let (mut removed, revoked) = loop {
        match state
            .store
            .delete_test_merchant(id)
            .await
            .map_err(Error::from)?
        {
            MerchantDeletion::Deleted { removed, revoked } => break (removed, revoked),
            MerchantDeletion::Missing => {
                return Err(Error::NotFound(NOT_YOURS.into()).into());
            }
            MerchantDeletion::NotATestMerchant => return Err(TestingError::NotATestMerchant),
            MerchantDeletion::InFlight(n) if started.elapsed() >= DELETE_WAIT => {
                return Err(TestingError::DeliveriesInFlight(n));
            }
            MerchantDeletion::InFlight(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    for r in revoked {
        auth::forget_revoked(state, r);
    }
    // The caches' own rules (`cache/pricing.rs`, `cache/listed.rs`) hold
    // while rows are only added; this deletion removes links and shipments,
    // so this process drops what it remembered of them at once, after the
    // commit.
    state.pricing.forget_merchant(id);
    state.listed.forget_merchant(id);
    (removed.faults, removed.duplicate_deliveries) = controls.forget_merchant(id);
    Ok(DeletedMerchant {
        merchant_id: id,
        removed,
    })
}
