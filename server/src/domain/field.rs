//! [`FieldError`]: a request field that is wrong. Its own file, below the
//! rules that refuse fields (validation, lists, the lifecycle).

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
