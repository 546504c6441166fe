//! `shipment-server admin …` and the demo's fixtures: accounts and keys
//! made without SQL, each printing one JSON object with `--json`.

use clap::{Args, Subcommand};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use shipment_sdk::model::{CourierId, DriverId, MerchantId};

use crate::app::{self, AppState, accounts};
use crate::domain::keys::Environment;
use crate::domain::password;
use crate::domain::sealed::DataKey;
use crate::store::{Store, StoreError};

/// The administrative subcommands.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create a merchant account (its dashboard sign-in).
    CreateMerchant {
        /// Display name.
        #[arg(long)]
        name: String,
        /// Sign-in e-mail, unique.
        #[arg(long)]
        email: String,
        /// Sign-in password (at least 8 characters).
        #[arg(long, env = "SHIPMENT_ADMIN_PASSWORD", hide_env_values = true)]
        password: String,
    },
    /// Create an API key for a merchant; the key is printed once.
    CreateApiKey {
        /// The merchant.
        #[arg(long)]
        merchant_id: MerchantId,
        /// A name to tell keys apart.
        #[arg(long, default_value = "default")]
        name: String,
    },
    /// Create a courier company with its prices.
    CreateCourier {
        /// Display name.
        #[arg(long)]
        name: String,
        /// Fixed part of the fee.
        #[arg(long, default_value = "5.00")]
        base_fee: Decimal,
        /// Fee per kilogram.
        #[arg(long, default_value = "1.00")]
        per_kg: Decimal,
        /// Fee per kilometre.
        #[arg(long, default_value = "0.10")]
        per_km: Decimal,
    },
    /// Link a courier company to a merchant.
    LinkCourier {
        /// The merchant.
        #[arg(long)]
        merchant_id: MerchantId,
        /// The courier company.
        #[arg(long)]
        courier_id: CourierId,
    },
    /// Create a key for a courier company; the key is printed once.
    CreateCourierKey {
        /// The courier company.
        #[arg(long)]
        courier_id: CourierId,
    },
    /// Add a driver to a courier company.
    CreateDriver {
        /// The courier company.
        #[arg(long)]
        courier_id: CourierId,
        /// Display name.
        #[arg(long)]
        name: String,
    },
    /// Apply a fixtures file (as `serve --fixtures`) and exit: make what it
    /// declares and is missing, in one transaction; print how many records
    /// of each kind were made (all 0 when the file was applied before).
    ApplyFixtures {
        /// The TOML file (format in the book: docs/src/ci.md, "Declared fixtures").
        #[arg(value_name = "FILE")]
        file: std::path::PathBuf,
        /// Accept webhooks on loopback and private addresses, as a server
        /// started with this flag would.
        #[arg(long, env = "SHIPMENT_ALLOW_PRIVATE_WEBHOOK_TARGETS")]
        allow_private_webhook_targets: bool,
        /// Seals the signing keys: the same data key as the servers that
        /// will sign with them.
        #[command(flatten)]
        data_key: crate::config::DataKeyArgs,
    },
}

/// Output switches shared by the admin commands.
#[derive(Debug, Clone, Args)]
pub struct Output {
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A failed admin command, worded for the operator.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Bad arguments.
    #[error("{0}")]
    Invalid(String),
    /// The database refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A use-case failed for a reason of the server's, not the arguments'.
    #[error(transparent)]
    Failed(app::Error),
    /// A fixtures file was not applied.
    #[error(transparent)]
    Fixtures(#[from] crate::testing::fixtures::FixtureError),
}

impl From<app::Error> for AdminError {
    /// The operator's wording of a use-case's refusal: a field is the flag
    /// that gave it (`name` is `--name`, `base_fee` is `--base-fee`), and
    /// an id nothing has is said as the use-case says it.
    fn from(e: app::Error) -> AdminError {
        match e {
            app::Error::Field(f) => {
                let flag = format!("--{}", f.field.replace('_', "-"));
                AdminError::Invalid(f.detail.replacen(&format!("`{}`", f.field), &flag, 1))
            }
            app::Error::NotFound(said) => AdminError::Invalid(said),
            e => AdminError::Failed(e),
        }
    }
}

/// Hashes a password (`domain::password::hash`) off the async threads: it is
/// slow on purpose.
pub async fn hash_password(password: String) -> Result<String, AdminError> {
    tokio::task::spawn_blocking(move || {
        password::hash(&password)
            .map_err(|e| AdminError::Invalid(format!("cannot hash the password: {e}")))
    })
    .await
    .map_err(|e| AdminError::Invalid(format!("password hashing failed: {e}")))?
}

/// The state the commands' use-cases run with: this server's store and
/// environment, as a server started with these flags would have.
fn state(
    store: &Store,
    env: Environment,
    data_key: DataKey,
    allow_private_webhook_targets: bool,
) -> AppState {
    AppState::new(app::Shared::new(
        store.clone(),
        env,
        std::time::Duration::from_secs(30),
        data_key,
        allow_private_webhook_targets,
        std::sync::Arc::default(),
    ))
}

impl AdminCommand {
    /// Runs the command and returns what it prints as JSON. Each command is
    /// a use-case of `app` (`app::accounts`, the fixtures), so its
    /// arguments meet the rules the API's inputs meet.
    pub async fn run(self, store: &Store, env: Environment) -> Result<Value, AdminError> {
        // Only the fixtures seal signing keys; the other commands seal
        // nothing, so a data key of their own is as good as the servers'.
        let accounts_state = || state(store, env, DataKey::generate(), false);
        Ok(match self {
            AdminCommand::ApplyFixtures {
                file,
                allow_private_webhook_targets,
                data_key,
            } => {
                let data_key = data_key
                    .load()
                    .map_err(|e| AdminError::Invalid(e.to_string()))?;
                let state = state(store, env, data_key, allow_private_webhook_targets);
                let created = crate::testing::fixtures::apply_file(&state, &file).await?;
                json!({ "applied": file.display().to_string(), "created": created })
            }
            AdminCommand::CreateMerchant {
                name,
                email,
                password,
            } => {
                let id =
                    accounts::create_merchant(&accounts_state(), &name, &email, password).await?;
                json!({ "merchant_id": id })
            }
            AdminCommand::CreateApiKey { merchant_id, name } => {
                let (key, secret) =
                    accounts::create_api_key(&accounts_state(), merchant_id, &name).await?;
                json!({ "id": key.id, "key": secret.expose() })
            }
            AdminCommand::CreateCourier {
                name,
                base_fee,
                per_kg,
                per_km,
            } => {
                let fees = accounts::Fees {
                    base_fee,
                    per_kg,
                    per_km,
                };
                let id = accounts::create_courier(&accounts_state(), &name, fees).await?;
                json!({ "courier_company_id": id })
            }
            AdminCommand::LinkCourier {
                merchant_id,
                courier_id,
            } => {
                accounts::link_courier(&accounts_state(), merchant_id, courier_id).await?;
                json!({ "merchant_id": merchant_id, "courier_company_id": courier_id, "linked": true })
            }
            AdminCommand::CreateCourierKey { courier_id } => {
                let (id, secret) =
                    accounts::create_courier_key(&accounts_state(), courier_id).await?;
                json!({ "id": id.get(), "key": secret.expose() })
            }
            AdminCommand::CreateDriver { courier_id, name } => {
                let driver = accounts::create_driver(&accounts_state(), courier_id, &name).await?;
                json!({ "driver_id": driver.id })
            }
        })
    }
}

/// What the demo made: everything a person needs to try the API. `Debug`
/// leaves the password and keys out.
pub struct DemoAccount {
    /// The demo merchant.
    pub merchant_id: MerchantId,
    /// Its sign-in.
    pub email: String,
    /// Its password.
    pub password: String,
    /// A merchant API key.
    pub api_key: String,
    /// The first courier company.
    pub courier_id: CourierId,
    /// A key of that courier company.
    pub courier_key: String,
    /// One of its drivers.
    pub driver_id: DriverId,
}

impl std::fmt::Debug for DemoAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoAccount")
            .field("merchant_id", &self.merchant_id)
            .field("email", &self.email)
            .field("courier_id", &self.courier_id)
            .field("driver_id", &self.driver_id)
            .finish_non_exhaustive()
    }
}

/// Seeds a demo merchant with a key and two linked couriers with drivers.
/// Run again on the same database, it makes a fresh merchant so it never
/// fails on what an earlier run left.
pub async fn seed_demo(store: &Store, env: Environment) -> Result<DemoAccount, AdminError> {
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..6];
    let email = format!("demo-{suffix}@example.com");
    let password = format!("demo-{suffix}-password");
    let hash = hash_password(password.clone()).await?;
    let merchant_id = store.create_merchant("Demo Shop", &email, &hash).await?;
    let api_key = store.create_api_key(merchant_id, "demo", env).await?;
    let swift = store.create_courier("Swift Couriers", 500, 150, 10).await?;
    let steady = store.create_courier("Steady Freight", 300, 200, 5).await?;
    let mut driver_id = None;
    for (courier, drivers) in [(swift, ["Ada", "Grace"]), (steady, ["Linus", "Barbara"])] {
        store.link_courier(merchant_id, courier).await?;
        for name in drivers {
            let d = store.create_driver(courier, name).await?;
            if courier == swift && driver_id.is_none() {
                driver_id = Some(DriverId::new(d.id));
            }
        }
    }
    let courier_key = store.create_courier_key(swift, env).await?;
    Ok(DemoAccount {
        merchant_id,
        email,
        password,
        api_key: api_key.key.expose().to_owned(),
        courier_id: swift,
        courier_key: courier_key.key.expose().to_owned(),
        driver_id: driver_id.expect("the demo gives Swift Couriers drivers"),
    })
}
