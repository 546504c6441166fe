//! API keys of a merchant: listed without secrets, created (the secret
//! shown once), deleted (refused at once), and a pasted key checked.

use shipment_sdk::model::{ApiKey, ApiKeyId, MerchantId};

use super::{AppState, Error, Result};
use crate::domain::FieldError;
use crate::domain::keys::{self, KeyKind};
use crate::store::api_keys::ApiKeyInfo;
use crate::store::listen::Revoked;

/// Longest key name accepted.
pub(crate) const MAX_KEY_NAME: usize = 100;

fn view(k: ApiKeyInfo) -> ApiKey {
    let mut key = ApiKey::new(ApiKeyId::new(k.id), k.name, k.prefix, k.last4, k.created_at);
    key.last_used_at = k.last_used_at;
    key
}

/// The merchant's keys, newest first, without their secrets.
pub(crate) async fn list_api_keys(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<Vec<ApiKey>> {
    let keys = state.store.api_keys(merchant_id).await?;
    Ok(keys.into_iter().map(view).collect())
}

/// Creates an API key for the merchant, named `name` (trimmed; a default
/// when empty; at most [`MAX_KEY_NAME`] characters). The secret is returned
/// once and only its digest is stored.
pub(crate) async fn create_api_key(
    state: &AppState,
    merchant_id: MerchantId,
    name: Option<&str>,
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
        .create_named_api_key(merchant_id, &name, state.environment)
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

/// Forgets a credential this process just deleted wherever the process
/// remembers it: the key cache, and the listener streams it opened.
pub(crate) fn forget_revoked(state: &AppState, revoked: Revoked) {
    state.key_cache.forget(revoked);
    state.listeners.revoked(revoked);
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

/// The merchant's working key that `pasted` is, if it is one: well formed,
/// of this server's environment, and not deleted.
pub(crate) async fn find_own_key(
    state: &AppState,
    merchant_id: MerchantId,
    pasted: &str,
) -> Result<Option<ApiKey>> {
    let key = pasted.trim();
    let well_formed = keys::shape(key)
        .is_some_and(|s| s.kind == KeyKind::Merchant && s.environment == state.environment);
    if !well_formed {
        return Ok(None);
    }
    Ok(state
        .store
        .api_key_by_digest(merchant_id, &keys::digest(key))
        .await?
        .map(view))
}
