//! Declared fixtures: `serve --fixtures FILE`, `demo --fixtures FILE` and
//! `admin apply-fixtures FILE` make what the file declares, idempotently,
//! in one transaction.
//!
//! The file is read and checked by [`crate::domain::fixtures`]; here its
//! webhook hosts go through the same guard as registration, and it is
//! matched against the database: a courier company by name (the oldest of
//! that name), a merchant by normalised e-mail, a driver by name within its
//! company, an API or courier key by its digest, a webhook by the merchant
//! and its normalised URL. What is missing is made, stored as the server
//! stores it (keys as digests, signing keys sealed with the data key,
//! passwords with argon2id); what exists is left exactly as it is. An
//! existing record that disagrees with the file in a value the file
//! declares (a fee, a merchant's name or password, a key that belongs to
//! someone else, another signing key) stops the apply with a
//! [`FixtureError::Conflict`] naming the line, and nothing is applied:
//! a CI run then fails at start instead of in a test that trusted the file.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

use shipment_sdk::model::{CourierId, MerchantId};
use subtle::ConstantTimeEq as _;

use crate::app::{AppState, auth};
use crate::domain::fee::from_minor_units;
use crate::domain::fixtures::{self, ApiKey, At, Courier, Merchant, Problem};
use crate::domain::keys::{self, KeyKind, Secret};
use crate::store::{StoreError, Tx};

/// The advisory lock that makes concurrent applies (several processes
/// starting on one PostgreSQL) run one after another ("SHIPFIXT").
const FIXTURES_LOCK: i64 = 0x5348_4950_4649_5854;
/// The name of API keys made from the file.
pub(crate) const API_KEY_NAME: &str = "fixtures";

/// Why a fixtures file was not applied. Nothing of it was, in every case;
/// no message quotes a key, signing key or password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FixtureError {
    /// The file could not be read.
    #[error("cannot read the fixtures file {file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is longer than [`fixtures::MAX_FILE_BYTES`]; nothing past
    /// that was read.
    #[error(
        "the fixtures file {file} is larger than 1 MiB ({} bytes), the most a fixtures file may \
         be",
        fixtures::MAX_FILE_BYTES
    )]
    TooLarge {
        /// The file.
        file: String,
    },
    /// The file is malformed or declares something the server refuses.
    #[error("{}", Lines { file, problems })]
    Invalid {
        /// The file.
        file: String,
        /// Every problem, in line order.
        problems: Vec<Problem>,
    },
    /// The database holds a record the file would have to change.
    #[error(
        "{file}, line {line}: {detail}. Fixtures never change what exists: make the file \
         match, or start from an empty database; nothing was applied"
    )]
    Conflict {
        /// The file.
        file: String,
        /// The line of the disagreeing value.
        line: usize,
        /// What disagrees.
        detail: String,
    },
    /// The database failed.
    #[error("applying the fixtures file {file}: {source}")]
    Store {
        /// The file.
        file: String,
        /// Why.
        source: StoreError,
    },
    /// Any other server fault (hashing a password).
    #[error("applying the fixtures file {file}: {detail}")]
    Internal {
        /// The file.
        file: String,
        /// What failed.
        detail: String,
    },
}

impl FixtureError {
    /// The lines the error names, in order (none for a read or database
    /// failure).
    pub fn lines(&self) -> Vec<usize> {
        match self {
            FixtureError::Invalid { problems, .. } => problems.iter().map(|p| p.line).collect(),
            FixtureError::Conflict { line, .. } => vec![*line],
            _ => Vec::new(),
        }
    }
}

/// One `FILE, line N: detail` per problem.
struct Lines<'a> {
    file: &'a str,
    problems: &'a [Problem],
}

impl fmt::Display for Lines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{}, line {}: {}", self.file, p.line, p.detail)?;
        }
        Ok(())
    }
}

/// How many records an apply made, by kind; all zero when everything the
/// file declares existed already.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FixtureReport {
    /// Courier companies.
    pub couriers: u32,
    /// Courier keys.
    pub courier_keys: u32,
    /// Drivers.
    pub drivers: u32,
    /// Merchants.
    pub merchants: u32,
    /// Merchant API keys.
    pub api_keys: u32,
    /// Links of a merchant to a courier company.
    pub courier_links: u32,
    /// Webhooks.
    pub webhooks: u32,
    /// Shipment signing keys.
    pub shipment_signing_keys: u32,
}

impl FixtureReport {
    /// Records made, of every kind.
    pub fn total(&self) -> u32 {
        self.couriers
            + self.courier_keys
            + self.drivers
            + self.merchants
            + self.api_keys
            + self.courier_links
            + self.webhooks
            + self.shipment_signing_keys
    }
}

/// Reads the file at `path` ([`read_fixtures_file`]) and applies it
/// ([`apply`]).
pub(crate) async fn apply_file(
    state: &AppState,
    path: &Path,
) -> Result<FixtureReport, FixtureError> {
    let file = path.display().to_string();
    let owned = path.to_owned();
    let text = tokio::task::spawn_blocking(move || read_fixtures_file(&owned))
        .await
        .map_err(|e| FixtureError::Internal {
            file: file.clone(),
            detail: format!("reading the file: {e}"),
        })??;
    apply(state, &file, &text).await
}

/// The text of the fixtures file at `path`, read up to
/// [`fixtures::MAX_FILE_BYTES`] and not a byte further: a larger file (or
/// `/dev/zero`, or a pipe that never ends) is refused with
/// [`FixtureError::TooLarge`] as soon as the cap is passed, instead of
/// being read whole into memory. Blocking.
pub fn read_fixtures_file(path: &Path) -> Result<String, FixtureError> {
    let file = path.display().to_string();
    let opened = std::fs::File::open(path).map_err(|source| FixtureError::Read {
        file: file.clone(),
        source,
    })?;
    read_capped(&file, opened)
}

/// Reads `reader` (the file named `file`) to its end, or refuses it once it
/// has given more than [`fixtures::MAX_FILE_BYTES`].
fn read_capped(file: &str, reader: impl Read) -> Result<String, FixtureError> {
    let cap = fixtures::MAX_FILE_BYTES;
    let unreadable = |source| FixtureError::Read {
        file: file.to_owned(),
        source,
    };
    let mut bytes = Vec::new();
    // One byte more than the cap tells a file of exactly the cap from a
    // longer one.
    reader
        .take(u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() > cap {
        return Err(FixtureError::TooLarge {
            file: file.to_owned(),
        });
    }
    String::from_utf8(bytes).map_err(|_| {
        unreadable(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it is not UTF-8 text",
        ))
    })
}

/// Applies the fixtures `text` (`file` names it in messages): checks it
/// whole, then makes what is missing in one transaction, or nothing.
pub(crate) async fn apply(
    state: &AppState,
    file: &str,
    text: &str,
) -> Result<FixtureReport, FixtureError> {
    let invalid = |problems| FixtureError::Invalid {
        file: file.to_owned(),
        problems,
    };
    let declared = fixtures::parse(text, state.environment).map_err(invalid)?;
    let mut unusable = Vec::new();
    for hook in declared.merchants.iter().flat_map(|m| &m.webhooks) {
        if let Err(e) = crate::app::webhooks::check_target(state, "url", &hook.url.value).await {
            unusable.push(Problem {
                line: hook.url.line,
                detail: e.to_string(),
            });
        }
    }
    if !unusable.is_empty() {
        return Err(invalid(unusable));
    }
    let mut applying = Applying {
        state,
        file,
        report: FixtureReport::default(),
    };
    let store = |source| FixtureError::Store {
        file: file.to_owned(),
        source,
    };
    let mut tx = state.store.begin().await.map_err(store)?;
    tx.lock_exclusively(FIXTURES_LOCK).await.map_err(store)?;
    let mut couriers = HashMap::new();
    for courier in &declared.couriers {
        let id = applying.courier(&mut tx, courier).await?;
        couriers.insert(courier.name.value.as_str(), id);
    }
    for merchant in &declared.merchants {
        applying.merchant(&mut tx, merchant, &couriers).await?;
    }
    tx.commit().await.map_err(store)?;
    let report = applying.report;
    tracing::info!(file, created = report.total(), ?report, "fixtures applied");
    Ok(report)
}

/// One apply in progress.
struct Applying<'a> {
    state: &'a AppState,
    file: &'a str,
    report: FixtureReport,
}

impl Applying<'_> {
    fn conflict(&self, line: usize, detail: impl Into<String>) -> FixtureError {
        FixtureError::Conflict {
            file: self.file.to_owned(),
            line,
            detail: detail.into(),
        }
    }

    fn store(&self, source: StoreError) -> FixtureError {
        FixtureError::Store {
            file: self.file.to_owned(),
            source,
        }
    }

    fn internal(&self, e: &crate::app::Error) -> FixtureError {
        FixtureError::Internal {
            file: self.file.to_owned(),
            detail: e.to_string(),
        }
    }

    /// Finds or makes the courier company, its keys and drivers; its id.
    async fn courier(&mut self, tx: &mut Tx, c: &Courier) -> Result<CourierId, FixtureError> {
        let name = &c.name.value;
        let fees = c.fees.each_ref().map(|f| f.value);
        let id = match tx.courier_by_name(name).await.map_err(|e| self.store(e))? {
            Some(found) => {
                let stored = [found.base_fee_minor, found.per_kg_minor, found.per_km_minor];
                let fields = ["base_fee", "per_kg", "per_km"];
                for ((field, declared), stored) in fields.iter().zip(&c.fees).zip(stored) {
                    if declared.value != stored {
                        return Err(self.conflict(
                            declared.line,
                            format!(
                                "courier company `{name}` exists with {field} {}, the file \
                                 says {}",
                                from_minor_units(stored),
                                from_minor_units(declared.value)
                            ),
                        ));
                    }
                }
                CourierId::new(found.id)
            }
            None => {
                self.report.couriers += 1;
                tx.create_courier(name, fees)
                    .await
                    .map_err(|e| self.store(e))?
            }
        };
        for key in &c.keys {
            self.courier_key(tx, id, key).await?;
        }
        let existing = tx.drivers(id).await.map_err(|e| self.store(e))?;
        for driver in &c.drivers {
            if !existing.iter().any(|d| d.name == driver.value) {
                tx.create_driver(id, &driver.value)
                    .await
                    .map_err(|e| self.store(e))?;
                self.report.drivers += 1;
            }
        }
        Ok(id)
    }

    async fn courier_key(
        &mut self,
        tx: &mut Tx,
        courier_id: CourierId,
        key: &At<Secret>,
    ) -> Result<(), FixtureError> {
        let digest = keys::digest(key.value.expose());
        match tx
            .find_key(KeyKind::Courier, &digest)
            .await
            .map_err(|e| self.store(e))?
        {
            Some(owner) if owner.owner_id == courier_id.get() => Ok(()),
            Some(owner) => Err(self.conflict(
                key.line,
                format!(
                    "`keys`: this key belongs to courier company {} already",
                    owner.owner_id
                ),
            )),
            None => {
                tx.create_courier_key_of(courier_id, &key.value, self.state.environment)
                    .await
                    .map_err(|e| self.store(e))?;
                self.report.courier_keys += 1;
                Ok(())
            }
        }
    }

    /// Finds or makes the merchant, then its keys, links and webhooks.
    async fn merchant(
        &mut self,
        tx: &mut Tx,
        m: &Merchant,
        couriers: &HashMap<&str, CourierId>,
    ) -> Result<(), FixtureError> {
        let email = &m.email.value;
        let password = m.password.value.expose().to_owned();
        let id = match tx
            .merchant_by_email(email)
            .await
            .map_err(|e| self.store(e))?
        {
            Some(account) => {
                if account.name != m.name.value {
                    return Err(self.conflict(
                        m.name.line,
                        format!(
                            "the merchant with e-mail {email} is named `{}` in the database",
                            account.name
                        ),
                    ));
                }
                let same = auth::check_password(self.state, account.password_hash, password)
                    .await
                    .map_err(|e| self.internal(&e))?;
                if !same {
                    return Err(self.conflict(
                        m.password.line,
                        format!("the merchant with e-mail {email} has another password"),
                    ));
                }
                MerchantId::new(account.id)
            }
            None => {
                let hash = auth::hash_password(self.state, password)
                    .await
                    .map_err(|e| self.internal(&e))?;
                self.report.merchants += 1;
                tx.create_merchant(&m.name.value, email, &hash)
                    .await
                    .map_err(|e| self.store(e))?
            }
        };
        for key in &m.api_keys {
            self.api_key(tx, id, key).await?;
        }
        for courier in &m.couriers {
            let courier_id = couriers[courier.value.as_str()];
            if tx
                .link_courier(id, courier_id)
                .await
                .map_err(|e| self.store(e))?
            {
                self.report.courier_links += 1;
            }
        }
        if let Some(key) = &m.shipment_signing_key {
            let stored = tx
                .shipment_signing_key(id)
                .await
                .map_err(|e| self.store(e))?;
            match stored {
                Some(sealed) => self.same_signing_key(&sealed, key, "shipment_signing_key")?,
                None => {
                    let sealed = self.state.data_key.seal(key.value.expose());
                    tx.set_shipment_signing_key(id, &sealed)
                        .await
                        .map_err(|e| self.store(e))?;
                    self.report.shipment_signing_keys += 1;
                }
            }
        }
        for hook in &m.webhooks {
            let url = hook.url.value.as_str();
            match tx
                .webhook_by_url(id, url)
                .await
                .map_err(|e| self.store(e))?
            {
                Some(found) => {
                    self.same_signing_key(
                        &found.signing_key_encrypted,
                        &hook.signing_key,
                        "signing_key",
                    )?;
                    if !found.active {
                        tracing::warn!(
                            file = self.file,
                            line = hook.url.line,
                            webhook_id = found.id,
                            "this webhook was switched off through the API; fixtures leave it off"
                        );
                    }
                }
                None => {
                    let sealed = self.state.data_key.seal(hook.signing_key.value.expose());
                    tx.create_webhook(id, url, &sealed)
                        .await
                        .map_err(|e| self.store(e))?;
                    self.report.webhooks += 1;
                }
            }
        }
        Ok(())
    }

    async fn api_key(
        &mut self,
        tx: &mut Tx,
        merchant_id: MerchantId,
        declared: &ApiKey,
    ) -> Result<(), FixtureError> {
        let key = &declared.key;
        let digest = keys::digest(key.value.expose());
        let permissions = declared.permissions.as_ref().map(|p| p.value);
        match tx
            .find_key(KeyKind::Merchant, &digest)
            .await
            .map_err(|e| self.store(e))?
        {
            // The key's expiry is left as it is: `expires_in` counts from
            // when the key was made, not from every start.
            Some(owner)
                if owner.owner_id == merchant_id.get() && owner.permissions.0 == permissions =>
            {
                Ok(())
            }
            Some(owner) if owner.owner_id == merchant_id.get() => Err(self.conflict(
                declared.permissions.as_ref().map_or(key.line, |p| p.line),
                "`api_keys`: this key exists with other permissions",
            )),
            Some(owner) => Err(self.conflict(
                key.line,
                format!(
                    "`api_keys`: this key belongs to merchant {} already",
                    owner.owner_id
                ),
            )),
            None => {
                tx.create_api_key_of(
                    merchant_id,
                    API_KEY_NAME,
                    &key.value,
                    self.state.environment,
                    &keys::KeyTerms {
                        permissions,
                        expires_at: declared.expires_at.as_ref().map(|at| at.value),
                    },
                )
                .await
                .map_err(|e| self.store(e))?;
                self.report.api_keys += 1;
                Ok(())
            }
        }
    }

    /// Whether a stored (sealed) signing key is the file's, compared in
    /// constant time.
    fn same_signing_key(
        &self,
        sealed: &str,
        declared: &At<Secret>,
        field: &str,
    ) -> Result<(), FixtureError> {
        let stored = self.state.data_key.open(sealed).map_err(|_| {
            self.conflict(
                declared.line,
                format!(
                    "`{field}`: the stored signing key cannot be opened with this server's data \
                     key (start with the data key that sealed it: --data-key or --data-key-file)"
                ),
            )
        })?;
        if bool::from(stored.as_bytes().ct_eq(declared.value.expose().as_bytes())) {
            Ok(())
        } else {
            Err(self.conflict(
                declared.line,
                format!("`{field}`: the database holds another signing key for it"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_exactly_the_cap_is_read() {
        let text = " ".repeat(fixtures::MAX_FILE_BYTES);
        assert_eq!(read_capped("f.toml", text.as_bytes()).unwrap(), text);
    }

    #[test]
    fn one_byte_over_the_cap_is_refused_naming_the_file_and_the_cap() {
        let text = " ".repeat(fixtures::MAX_FILE_BYTES + 1);
        let err = read_capped("ci.toml", text.as_bytes()).unwrap_err();
        assert!(matches!(err, FixtureError::TooLarge { .. }), "{err:?}");
        let message = err.to_string();
        assert!(
            message.contains("ci.toml") && message.contains("1 MiB (1048576 bytes)"),
            "{message}"
        );
    }

    #[test]
    fn an_endless_reader_is_refused_after_the_cap() {
        // As `/dev/zero`: a reader that never ends is read up to the cap
        // and one byte, then refused; without the cap this never returns.
        let mut endless = std::io::repeat(b'#');
        let err = read_capped("/dev/zero", &mut endless).unwrap_err();
        assert!(matches!(err, FixtureError::TooLarge { .. }), "{err:?}");
    }

    #[test]
    fn text_that_is_not_utf8_is_refused_without_quoting_it() {
        let err = read_capped("f.toml", &b"name = \"\xff\xfesk_test_x\""[..]).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("not UTF-8"), "{message}");
        assert!(!message.contains("sk_test_x"), "{message}");
    }
}
