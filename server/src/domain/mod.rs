//! Pure logic: the state machine, fees, codes, keys and input validation.
//! Nothing here does I/O, so all of it is tested as plain functions.

pub mod code;
pub mod confirmation;
pub mod email;
pub mod fee;
pub mod fixtures;
pub mod keys;
pub mod lifecycle;
pub mod list_query;
pub mod net;
pub mod sealed;
pub mod validation;

/// A request field that is wrong, with what a person should know about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct FieldError {
    /// Which rule it broke.
    pub kind: FieldErrorKind,
    /// The field name, as on the wire.
    pub field: String,
    /// A sentence for a person.
    pub detail: String,
}

/// The ways a field can be wrong; each has its own problem `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// Required and absent: `missing_field`.
    Missing,
    /// Present and wrong: `invalid_field`.
    Invalid,
    /// Not a field of this request: `unknown_field`.
    Unknown,
}

impl FieldError {
    /// A present field with a wrong value.
    pub fn invalid(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError {
            kind: FieldErrorKind::Invalid,
            field: field.into(),
            detail: detail.into(),
        }
    }

    /// A field the request does not have.
    pub fn unknown(field: impl Into<String>) -> FieldError {
        let field = field.into();
        let detail = format!("unknown field `{field}`");
        FieldError {
            kind: FieldErrorKind::Unknown,
            field,
            detail,
        }
    }
}

/// Why an operation on an existing shipment was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The shipment belongs to another merchant or courier company.
    #[error("this shipment belongs to another account")]
    Forbidden,
    /// The lifecycle does not allow the operation in this state.
    #[error(transparent)]
    InvalidState(#[from] lifecycle::InvalidState),
    /// The shipment was rated before.
    #[error("this shipment has already been rated")]
    AlreadyRated,
    /// A request field is wrong given the shipment (an unknown driver, say).
    #[error(transparent)]
    Field(#[from] FieldError),
    /// The delivery confirmation code is missing, wrong, expired or void.
    #[error("{0}")]
    ConfirmationCode(String),
}
