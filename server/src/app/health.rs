//! The readiness check's use-case.

use super::{AppState, Result};

/// Whether the database answers (the readiness check).
pub(crate) async fn ping_database(state: &AppState) -> Result<()> {
    Ok(state.store.ping().await?)
}
