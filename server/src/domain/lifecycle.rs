//! The shipment state machine of DESIGN §3, as a pure table.

use shipment_sdk::model::Status;

/// Everything that can be asked of a shipment after creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Courier assigns (or re-assigns) a driver.
    AssignDriver,
    /// Courier takes the driver off again.
    UnassignDriver,
    /// The driver picks the shipment up (also a new attempt after a failure).
    Pickup,
    /// The driver hands it over.
    Deliver,
    /// A delivery attempt failed.
    Fail,
    /// The courier returns it to the merchant.
    Return,
    /// The merchant cancels.
    Cancel,
    /// The merchant rates a delivered shipment.
    Rate,
    /// The merchant asks for a delivery confirmation code.
    GenerateConfirmationCode,
}

impl Operation {
    /// Every operation, for exhaustive tests.
    pub const ALL: [Operation; 9] = [
        Operation::AssignDriver,
        Operation::UnassignDriver,
        Operation::Pickup,
        Operation::Deliver,
        Operation::Fail,
        Operation::Return,
        Operation::Cancel,
        Operation::Rate,
        Operation::GenerateConfirmationCode,
    ];

    /// The name used in error messages, as in the URL.
    pub fn name(self) -> &'static str {
        match self {
            Operation::AssignDriver => "assign-driver",
            Operation::UnassignDriver => "unassign-driver",
            Operation::Pickup => "pickup",
            Operation::Deliver => "deliver",
            Operation::Fail => "fail",
            Operation::Return => "return",
            Operation::Cancel => "cancel",
            Operation::Rate => "rate",
            Operation::GenerateConfirmationCode => "generate-confirmation-code",
        }
    }
}

/// What an allowed operation does to the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The status becomes this one (it may be the same, as for a driver
    /// re-assignment, which is still a change).
    MoveTo(Status),
    /// The shipment changes but its status does not (rating).
    Annotate,
    /// Nothing changes at all: cancel of a cancelled shipment, or generating
    /// a confirmation code (which is not part of the shipment object).
    Unchanged,
}

/// The operation is not allowed in the shipment's current state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot {} a shipment that is {}", .operation.name(), .status)]
pub struct InvalidState {
    /// The state the shipment is in.
    pub status: Status,
    /// What was asked.
    pub operation: Operation,
}

/// Decides what `operation` does to a shipment in `status`.
pub fn apply(status: &Status, operation: Operation) -> Result<Outcome, InvalidState> {
    use Operation as Op;
    use Status as S;
    let outcome = match (status, operation) {
        (S::AssignedToCourier | S::AssignedToDriver, Op::AssignDriver) => {
            Outcome::MoveTo(S::AssignedToDriver)
        }
        (S::AssignedToDriver, Op::UnassignDriver) => Outcome::MoveTo(S::AssignedToCourier),
        (S::AssignedToDriver | S::Failed, Op::Pickup) => Outcome::MoveTo(S::InTransit),
        (S::InTransit, Op::Deliver) => Outcome::MoveTo(S::Delivered),
        (S::InTransit, Op::Fail) => Outcome::MoveTo(S::Failed),
        (S::Failed, Op::Return) => Outcome::MoveTo(S::Returned),
        (S::Pending | S::AssignedToCourier | S::AssignedToDriver, Op::Cancel) => {
            Outcome::MoveTo(S::Cancelled)
        }
        (S::Cancelled, Op::Cancel) => Outcome::Unchanged,
        (S::Delivered, Op::Rate) => Outcome::Annotate,
        (
            S::Pending | S::AssignedToCourier | S::AssignedToDriver | S::InTransit | S::Failed,
            Op::GenerateConfirmationCode,
        ) => Outcome::Unchanged,
        _ => {
            return Err(InvalidState {
                status: status.clone(),
                operation,
            });
        }
    };
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Operation as Op;
    use Status as S;

    /// The whole table, written out once more by hand: every (state,
    /// operation) pair that is allowed and what it leads to. Anything not
    /// listed must be refused.
    fn expected(status: &Status, op: Operation) -> Option<Outcome> {
        let allowed: &[(Status, Operation, Outcome)] = &[
            (
                S::AssignedToCourier,
                Op::AssignDriver,
                Outcome::MoveTo(S::AssignedToDriver),
            ),
            (
                S::AssignedToDriver,
                Op::AssignDriver,
                Outcome::MoveTo(S::AssignedToDriver),
            ),
            (
                S::AssignedToDriver,
                Op::UnassignDriver,
                Outcome::MoveTo(S::AssignedToCourier),
            ),
            (
                S::AssignedToDriver,
                Op::Pickup,
                Outcome::MoveTo(S::InTransit),
            ),
            (S::InTransit, Op::Deliver, Outcome::MoveTo(S::Delivered)),
            (S::InTransit, Op::Fail, Outcome::MoveTo(S::Failed)),
            (S::Failed, Op::Pickup, Outcome::MoveTo(S::InTransit)),
            (S::Failed, Op::Return, Outcome::MoveTo(S::Returned)),
            (S::Pending, Op::Cancel, Outcome::MoveTo(S::Cancelled)),
            (
                S::AssignedToCourier,
                Op::Cancel,
                Outcome::MoveTo(S::Cancelled),
            ),
            (
                S::AssignedToDriver,
                Op::Cancel,
                Outcome::MoveTo(S::Cancelled),
            ),
            (S::Cancelled, Op::Cancel, Outcome::Unchanged),
            (S::Delivered, Op::Rate, Outcome::Annotate),
            (S::Pending, Op::GenerateConfirmationCode, Outcome::Unchanged),
            (
                S::AssignedToCourier,
                Op::GenerateConfirmationCode,
                Outcome::Unchanged,
            ),
            (
                S::AssignedToDriver,
                Op::GenerateConfirmationCode,
                Outcome::Unchanged,
            ),
            (
                S::InTransit,
                Op::GenerateConfirmationCode,
                Outcome::Unchanged,
            ),
            (S::Failed, Op::GenerateConfirmationCode, Outcome::Unchanged),
        ];
        allowed
            .iter()
            .find(|(s, o, _)| s == status && *o == op)
            .map(|(_, _, outcome)| outcome.clone())
    }

    #[test]
    fn every_state_and_operation_pair_follows_the_table() {
        let mut states = S::KNOWN.to_vec();
        states.push(S::Unknown("held_at_customs".into()));
        let mut allowed = 0;
        for status in &states {
            for op in Op::ALL {
                match (apply(status, op), expected(status, op)) {
                    (Ok(got), Some(want)) => {
                        assert_eq!(got, want, "{status} + {}", op.name());
                        allowed += 1;
                    }
                    (Err(e), None) => {
                        assert_eq!(e.status, *status);
                        assert_eq!(e.operation, op);
                    }
                    (got, want) => panic!("{status} + {}: got {got:?}, want {want:?}", op.name()),
                }
            }
        }
        assert_eq!(allowed, 18, "the table has 18 allowed pairs");
    }

    #[test]
    fn cancel_after_pickup_is_refused() {
        let err = apply(&S::InTransit, Op::Cancel).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot cancel a shipment that is in_transit"
        );
    }

    #[test]
    fn final_states_allow_nothing_but_idempotent_cancel_and_rating() {
        for status in [S::Delivered, S::Returned, S::Cancelled] {
            for op in Op::ALL {
                let ok = apply(&status, op).is_ok();
                let exception = matches!(
                    (&status, op),
                    (S::Cancelled, Op::Cancel) | (S::Delivered, Op::Rate)
                );
                assert_eq!(ok, exception, "{status} + {}", op.name());
            }
        }
    }
}
