//! Pure logic: the state machine, fees, codes, keys and input validation.
//! Nothing here does I/O, so all of it is tested as plain functions.

pub mod actor;
pub mod code;
pub mod confirmation;
pub mod email;
pub mod fee;
mod field;
pub mod fixtures;
pub mod ids;
pub mod keys;
pub mod lifecycle;
pub mod list_query;
pub mod net;
pub mod sealed;
pub mod validation;

pub use field::{FieldError, FieldErrorKind};
pub use lifecycle::Refusal;
