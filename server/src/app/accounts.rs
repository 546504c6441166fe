//! The accounts an operator makes (`shipment-server admin …`): merchants
//! with a dashboard sign-in, courier companies with their prices, the links
//! between the two, courier keys and drivers.
//!
//! No route makes these (a merchant's API key or session acts only on its
//! own account), but their inputs follow the rules the routes follow: a
//! key's or driver's name goes through the very use-case of the API
//! ([`api_keys::create_api_key`], [`couriers::create_driver`]), and the
//! rest through the same checks ([`validation`], [`password`]), so a rule
//! lives in one place. Refusals are [`Error::Field`] naming the input and
//! [`Error::NotFound`] for an id nothing has; `admin` words them for the
//! operator.

use rust_decimal::Decimal;
use shipment_sdk::model::{ApiKey, CourierId, MerchantId};

use super::{AppState, Error, Result, api_keys, auth, couriers};
use crate::domain::fee::to_minor_units;
use crate::domain::ids::CourierKeyId;
use crate::domain::keys::Secret;
use crate::domain::{FieldError, email, password, validation};
use crate::store::StoreError;

/// A courier company's prices as an operator gives them, in major units.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fees {
    /// The fixed part of the fee.
    pub base_fee: Decimal,
    /// Per kilogram.
    pub per_kg: Decimal,
    /// Per kilometre.
    pub per_km: Decimal,
}

/// Makes a merchant that signs in to the dashboard with `email` (normalised,
/// unique) and `password` (at least [`password::MIN_LEN`] characters).
pub(crate) async fn create_merchant(
    state: &AppState,
    name: &str,
    email: &str,
    password: String,
) -> Result<MerchantId> {
    validation::no_control_characters("name", name)?;
    if password.chars().count() < password::MIN_LEN {
        return Err(FieldError::invalid(
            "password",
            format!(
                "`password` must be at least {} characters",
                password::MIN_LEN
            ),
        )
        .into());
    }
    validation::no_control_characters("email", email)?;
    let email = email::normalize(email);
    if !email.contains('@') {
        return Err(FieldError::invalid("email", "`email` must be an e-mail address").into());
    }
    let hash = auth::hash_password(state, password).await?;
    match state.store.create_merchant(name, &email, &hash).await {
        Ok(id) => Ok(id),
        Err(StoreError::EmailTaken) => Err(FieldError::invalid(
            "email",
            format!("a merchant with e-mail {email} exists"),
        )
        .into()),
        Err(e) => Err(e.into()),
    }
}

/// Makes an API key for the merchant, as the dashboard does; the secret is
/// returned once.
pub(crate) async fn create_api_key(
    state: &AppState,
    merchant_id: MerchantId,
    name: &str,
) -> Result<(ApiKey, Secret)> {
    require_merchant(state, merchant_id).await?;
    api_keys::create_api_key(state, merchant_id, Some(name)).await
}

/// Makes a courier company with its prices (each not negative, with at
/// most two decimal places).
pub(crate) async fn create_courier(state: &AppState, name: &str, fees: Fees) -> Result<CourierId> {
    validation::no_control_characters("name", name)?;
    let base_fee = minor_units("base_fee", fees.base_fee)?;
    let per_kg = minor_units("per_kg", fees.per_kg)?;
    let per_km = minor_units("per_km", fees.per_km)?;
    Ok(state
        .store
        .create_courier(name, base_fee, per_kg, per_km)
        .await?)
}

/// Links a courier company to a merchant, so its creates may name it.
pub(crate) async fn link_courier(
    state: &AppState,
    merchant_id: MerchantId,
    courier_id: CourierId,
) -> Result<()> {
    require_merchant(state, merchant_id).await?;
    require_courier(state, courier_id).await?;
    Ok(state.store.link_courier(merchant_id, courier_id).await?)
}

/// Makes a key of the courier company for this server's environment; the
/// secret is returned once.
pub(crate) async fn create_courier_key(
    state: &AppState,
    courier_id: CourierId,
) -> Result<(CourierKeyId, Secret)> {
    require_courier(state, courier_id).await?;
    let key = state
        .store
        .create_courier_key(courier_id, state.environment)
        .await?;
    Ok((key.id, key.key))
}

/// Adds a driver to the courier company, as the courier API does.
pub(crate) async fn create_driver(
    state: &AppState,
    courier_id: CourierId,
    name: &str,
) -> Result<couriers::Driver> {
    require_courier(state, courier_id).await?;
    couriers::create_driver(state, courier_id, name).await
}

/// An amount in minor units, refused when negative or finer than a cent.
fn minor_units(field: &str, amount: Decimal) -> Result<i64, FieldError> {
    if amount.is_sign_negative() {
        return Err(FieldError::invalid(
            field,
            format!("`{field}` must not be negative"),
        ));
    }
    to_minor_units(amount).ok_or_else(|| {
        FieldError::invalid(
            field,
            format!("`{field}` must have at most two decimal places"),
        )
    })
}

async fn require_merchant(state: &AppState, id: MerchantId) -> Result<()> {
    if state.store.merchant_exists(id).await? {
        Ok(())
    } else {
        Err(Error::NotFound(format!("no merchant has id {id}")))
    }
}

async fn require_courier(state: &AppState, id: CourierId) -> Result<()> {
    if state.store.courier_exists(id).await? {
        Ok(())
    } else {
        Err(Error::NotFound(format!("no courier company has id {id}")))
    }
}
