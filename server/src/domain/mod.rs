//! Pure logic: the state machine, fees, codes, keys and input validation.
//! Nothing here does I/O, so all of it is tested as plain functions.

pub(crate) mod actor;
pub(crate) mod code;
pub(crate) mod confirmation;
pub(crate) mod delivery_health;
pub(crate) mod email;
pub(crate) mod fee;
mod field;
pub mod fixtures;
pub(crate) mod ids;
pub(crate) mod keys;
pub(crate) mod lifecycle;
pub(crate) mod list_query;
pub(crate) mod net;
pub(crate) mod password;
pub(crate) mod sealed;
pub(crate) mod validation;

pub(crate) use field::{FieldError, FieldErrorKind};
pub(crate) use lifecycle::Refusal;
