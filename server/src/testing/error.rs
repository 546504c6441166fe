//! Why a test control did not do what was asked: the use-cases' own
//! refusals (controls off, a shipment that cannot get there, limits) beside
//! any use-case's [`Error`], which the API shows as it shows that error.

use shipment_sdk::model::Status;

use crate::app::Error;
use crate::domain::FieldError;
use crate::test_controls::MAX_FAULTS;

/// Why a test control did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum TestingError {
    /// The server runs without `--test-controls`.
    #[error("test controls are off: start the server with --test-controls")]
    Disabled,
    /// No series of lifecycle operations leads from the shipment's state to
    /// the one asked for.
    #[error(
        "cannot advance a shipment that is {from} to {to}: no path of the lifecycle leads there \
         (from {from} it reaches {reachable})"
    )]
    Unreachable {
        /// The shipment's state.
        from: Status,
        /// The state asked for.
        to: Status,
        /// The states that can be reached from `from`, for the message.
        reachable: String,
    },
    /// The merchant has [`MAX_FAULTS`] faults armed.
    #[error(
        "{MAX_FAULTS} faults are armed for this merchant already; disarm them with \
         DELETE /testing/faults first"
    )]
    TooManyFaults,
    /// A deletion waited in vain for the merchant's deliveries in flight.
    #[error(
        "{0} of this merchant's changes are being delivered right now; the merchant can be \
         deleted once they are (stop making changes, then try again)"
    )]
    DeliveriesInFlight(u64),
    /// As many test merchants as may exist at once exist already (made by
    /// this caller's merchant when `per_caller`, else by anyone).
    #[error(
        "{limit} test merchants {whose} exist already, the most that may at once; delete one \
         with DELETE /testing/merchants/{{id}} (its own key), then try again"
    )]
    TooManyTestMerchants {
        /// The limit reached.
        limit: u64,
        /// "made by your keys" or "of all callers", for the message.
        whose: &'static str,
    },
    /// The merchant to delete was not made by `POST /testing/merchants`.
    #[error(
        "this merchant was not made by POST /testing/merchants (it comes from the fixtures \
         file, `admin` or the demo), and only those can be deleted here"
    )]
    NotATestMerchant,
    /// A use-case refused or failed (a bad field, no such shipment, ...).
    #[error(transparent)]
    App(#[from] Error),
}

impl From<FieldError> for TestingError {
    fn from(e: FieldError) -> Self {
        TestingError::App(e.into())
    }
}

/// The outcome of a test control.
pub(crate) type Result<T, E = TestingError> = std::result::Result<T, E>;
