//! API keys of a merchant: listed without secrets, created (the secret
//! shown once; full, or restricted and expiring), deleted (refused at
//! once), a pasted key checked, and a key's view of itself.

use chrono::{DateTime, Utc};
use shipment_sdk::model::{ApiKey, ApiKeyId, CreateApiKey, CurrentKey, MerchantId};

use super::auth::{KeyHolder, forget_revoked};
use super::{AppState, Error, Result};
use crate::domain::FieldError;
use crate::domain::keys::{self, KeyTerms};
use crate::store::api_keys::ApiKeyInfo;
use crate::store::now;

/// Longest key name accepted.
pub(crate) const MAX_KEY_NAME: usize = 100;

fn view(k: ApiKeyInfo) -> ApiKey {
    view_at(k, now())
}

/// The key as listed at `at` (`expired` is a matter of time).
fn view_at(k: ApiKeyInfo, at: DateTime<Utc>) -> ApiKey {
    let mut key = ApiKey::new(ApiKeyId::new(k.id), k.name, k.prefix, k.last4, k.created_at);
    key.last_used_at = k.last_used_at;
    key.permissions = k.permissions.0;
    key.expires_at = k.expires_at;
    key.expired = k.expires_at.is_some_and(|e| e <= at);
    key
}

/// The merchant's keys, newest first, without their secrets.
pub(crate) async fn list_api_keys(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<Vec<ApiKey>> {
    let keys = state.store.api_keys(merchant_id).await?;
    let at = now();
    Ok(keys.into_iter().map(|k| view_at(k, at)).collect())
}

/// Creates a full API key for the merchant, named `name` (trimmed; a
/// default when empty; at most [`MAX_KEY_NAME`] characters). The secret is
/// returned once and only its digest is stored.
pub(crate) async fn create_api_key(
    state: &AppState,
    merchant_id: MerchantId,
    name: Option<&str>,
) -> Result<(ApiKey, keys::Secret)> {
    create_key_on(state, merchant_id, name, KeyTerms::default()).await
}

/// Creates the API key `request` asks for: restricted (`rk_`) when it
/// names permissions, expiring when it names a time ([`KeyTerms::parse`]
/// says what is refused), named as [`create_api_key`] names it.
pub(crate) async fn create_requested_key(
    state: &AppState,
    merchant_id: MerchantId,
    request: &CreateApiKey,
) -> Result<(ApiKey, keys::Secret)> {
    let terms = KeyTerms::parse(request.permissions, request.expires_at, now())?;
    create_key_on(state, merchant_id, request.name.as_deref(), terms).await
}

async fn create_key_on(
    state: &AppState,
    merchant_id: MerchantId,
    name: Option<&str>,
    terms: KeyTerms,
) -> Result<(ApiKey, keys::Secret)> {
    if let Some(sent) = name {
        // As sent, before trimming, as the OpenAPI document's pattern says.
        crate::domain::validation::no_control_characters("name", sent)?;
    }
    let name = match name.map(str::trim) {
        Some(n) if n.chars().count() > MAX_KEY_NAME => {
            return Err(FieldError::invalid(
                "name",
                format!("`name` must be at most {MAX_KEY_NAME} characters"),
            )
            .into());
        }
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => "API key".to_owned(),
    };
    let (info, key) = state
        .store
        .create_named_api_key(merchant_id, &name, state.environment, &terms)
        .await?;
    Ok((view(info), key))
}

/// Deletes one of the merchant's keys; it is refused at once, and the
/// listener streams it opened end: in this process now, in the others
/// sharing a PostgreSQL database when the deletion's announcement reaches
/// them (`webhooks::listeners::relay`).
pub(crate) async fn delete_api_key(
    state: &AppState,
    merchant_id: MerchantId,
    id: ApiKeyId,
) -> Result<()> {
    match state.store.delete_api_key(merchant_id, id).await? {
        Some(revoked) => {
            forget_revoked(state, revoked);
            Ok(())
        }
        None => Err(Error::NotFound("you have no API key with this id".into())),
    }
}

/// One of the merchant's keys, by id.
pub(crate) async fn get_api_key(
    state: &AppState,
    merchant_id: MerchantId,
    id: ApiKeyId,
) -> Result<ApiKey> {
    state
        .store
        .api_key(merchant_id, id)
        .await?
        .map(view)
        .ok_or_else(|| Error::NotFound("you have no API key with this id".into()))
}

/// Makes one of the merchant's keys expire now (the test controls): it is
/// refused with `api_key_expired` at once here, and in the other processes
/// as a deletion is ([`delete_api_key`]); its listener streams end.
pub(crate) async fn expire_api_key(
    state: &AppState,
    merchant_id: MerchantId,
    id: ApiKeyId,
) -> Result<ApiKey> {
    match state.store.expire_api_key(merchant_id, id).await? {
        Some(revoked) => forget_revoked(state, revoked),
        None => return Err(Error::NotFound("you have no API key with this id".into())),
    }
    get_api_key(state, merchant_id, id).await
}

/// The key that made the request, as it sees itself
/// (`GET /api-keys/current`).
pub(crate) async fn current_key(
    state: &AppState,
    holder: KeyHolder<MerchantId>,
) -> Result<CurrentKey> {
    let key = get_api_key(state, holder.owner_id, holder.key_id).await?;
    Ok(CurrentKey::new(
        &key,
        holder.owner_id,
        state.environment.name(),
    ))
}

/// The merchant's key that `pasted` is, if it is one: well formed (a full
/// or a restricted key), of this server's environment, and not deleted;
/// expired or not (the listing's `expired` says).
pub(crate) async fn find_own_key(
    state: &AppState,
    merchant_id: MerchantId,
    pasted: &str,
) -> Result<Option<ApiKey>> {
    let key = pasted.trim();
    let well_formed = keys::shape(key)
        .is_some_and(|s| s.kind.is_merchant() && s.environment == state.environment);
    if !well_formed {
        return Ok(None);
    }
    Ok(state
        .store
        .api_key_by_digest(merchant_id, &keys::digest(key))
        .await?
        .map(view))
}
