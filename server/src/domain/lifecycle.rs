//! The shipment state machine of DESIGN §3, as a pure table.

use chrono::{DateTime, Utc};
use shipment_sdk::model::{Shipment, Status};

use super::field::FieldError;

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
pub(crate) enum Outcome {
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
pub(crate) fn apply(status: &Status, operation: Operation) -> Result<Outcome, InvalidState> {
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

/// Applies `op` to `shipment` at `at`: checks it against the table, moves
/// the status, stamps the matching `*_at` (and takes the driver off when it
/// goes back to the courier). `Ok(false)` when nothing changes. Version and
/// `updated_at` are the store's: it sets them when it writes the update.
pub(crate) fn transition(
    shipment: &mut Shipment,
    op: Operation,
    at: DateTime<Utc>,
) -> Result<bool, Refusal> {
    let to = match apply(&shipment.status, op)? {
        Outcome::MoveTo(to) => to,
        Outcome::Annotate => return Ok(true),
        Outcome::Unchanged => return Ok(false),
    };
    let stamp = match to {
        Status::AssignedToCourier => {
            shipment.assigned_driver_id = None;
            &mut shipment.assigned_to_courier_at
        }
        Status::AssignedToDriver => &mut shipment.assigned_to_driver_at,
        Status::InTransit => &mut shipment.picked_up_at,
        Status::Delivered => &mut shipment.delivered_at,
        Status::Failed => &mut shipment.failed_at,
        Status::Returned => &mut shipment.returned_at,
        Status::Cancelled => &mut shipment.cancelled_at,
        // `Status` is non-exhaustive: a state the table does not name is
        // never a target of `apply`.
        _ => unreachable!("the lifecycle never moves to {to}"),
    };
    *stamp = Some(at);
    shipment.status = to;
    Ok(true)
}

/// Rates a delivered shipment, once: "rate once, only when delivered".
pub(crate) fn rate(
    shipment: &mut Shipment,
    rating: u8,
    at: DateTime<Utc>,
) -> Result<bool, Refusal> {
    transition(shipment, Operation::Rate, at)?;
    if shipment.rating.is_some() {
        return Err(Refusal::AlreadyRated);
    }
    shipment.rating = Some(rating);
    shipment.rated_at = Some(at);
    Ok(true)
}

/// The shortest sequence of operations that moves a shipment from `from`
/// to `to`, found by a breadth-first search over the table's status moves
/// ([`apply`] answering [`Outcome::MoveTo`] another status); operations are
/// tried in the order of [`Operation::ALL`], so the answer is always the
/// same. Re-assigning a driver, rating and confirmation codes move nothing
/// and are never part of it. `Some(vec![])` when the shipment is there
/// already, `None` when no path leads there (from a final state, say).
pub(crate) fn path(from: &Status, to: &Status) -> Option<Vec<Operation>> {
    if from == to {
        return Some(Vec::new());
    }
    let mut seen = vec![from.clone()];
    let mut queue = std::collections::VecDeque::from([(from.clone(), Vec::new())]);
    while let Some((status, steps)) = queue.pop_front() {
        for op in Operation::ALL {
            let Ok(Outcome::MoveTo(next)) = apply(&status, op) else {
                continue;
            };
            if seen.contains(&next) {
                continue;
            }
            let mut steps: Vec<Operation> = steps.clone();
            steps.push(op);
            if next == *to {
                return Some(steps);
            }
            seen.push(next.clone());
            queue.push_back((next, steps));
        }
    }
    None
}

/// Why an operation on an existing shipment was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The shipment belongs to another merchant or courier company.
    #[error("this shipment belongs to another account")]
    Forbidden,
    /// The lifecycle does not allow the operation in this state.
    #[error(transparent)]
    InvalidState(#[from] InvalidState),
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

#[cfg(test)]
mod tests {
    use super::*;
    use Operation as Op;
    use Status as S;
    use shipment_sdk::model::DriverId;

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

    /// A shipment in `status` with a driver, nothing stamped yet.
    fn shipment_in(status: &Status) -> Shipment {
        let at = "2026-11-21T09:30:12.123456Z";
        serde_json::from_value(serde_json::json!({
            "id": 1, "code": "SHP-7K3M-Q9ZX", "merchant_id": 1, "status": status.as_str(),
            "courier_company_id": 1, "assigned_driver_id": 7, "description": null,
            "weight_kg": null, "dimensions": null, "items": [], "start_address": null,
            "end_address": null, "total_fee": 5.0, "webhook_url": null, "version": 1,
            "rating": null, "failure_reason": null, "created_at": at,
            "assigned_to_courier_at": null, "assigned_to_driver_at": null,
            "picked_up_at": null, "delivered_at": null, "failed_at": null,
            "returned_at": null, "cancelled_at": null, "rated_at": null, "updated_at": at
        }))
        .unwrap()
    }

    /// Which timestamp a move to `to` stamps, written out by hand.
    fn stamp_of(s: &Shipment, to: &Status) -> Option<DateTime<Utc>> {
        match to {
            S::AssignedToCourier => s.assigned_to_courier_at,
            S::AssignedToDriver => s.assigned_to_driver_at,
            S::InTransit => s.picked_up_at,
            S::Delivered => s.delivered_at,
            S::Failed => s.failed_at,
            S::Returned => s.returned_at,
            S::Cancelled => s.cancelled_at,
            _ => None,
        }
    }

    #[test]
    fn every_move_stamps_its_own_timestamp_and_nothing_else() {
        let at: DateTime<Utc> = "2026-11-22T10:00:00.000001Z".parse().unwrap();
        for status in S::KNOWN {
            for op in Op::ALL {
                let mut shipment = shipment_in(&status);
                let before = shipment.clone();
                match (transition(&mut shipment, op, at), apply(&status, op)) {
                    (Ok(true), Ok(Outcome::MoveTo(to))) => {
                        assert_eq!(shipment.status, to);
                        assert_eq!(stamp_of(&shipment, &to), Some(at), "{status} {op:?}");
                        let stamped = |s: &Shipment| {
                            [
                                s.assigned_to_courier_at,
                                s.assigned_to_driver_at,
                                s.picked_up_at,
                                s.delivered_at,
                                s.failed_at,
                                s.returned_at,
                                s.cancelled_at,
                            ]
                            .iter()
                            .filter(|t| t.is_some())
                            .count()
                        };
                        assert_eq!(stamped(&shipment), stamped(&before) + 1, "{status} {op:?}");
                        // Back to the courier: the driver is taken off.
                        let driver = (to != S::AssignedToCourier).then_some(DriverId::new(7));
                        assert_eq!(shipment.assigned_driver_id, driver);
                    }
                    (Ok(changed), Ok(_)) => {
                        assert_eq!(shipment.status, status);
                        assert_eq!(changed, op == Op::Rate, "{status} {op:?}");
                    }
                    (Err(_), Err(_)) => assert_eq!(shipment, before),
                    (got, table) => panic!("{status} {op:?}: {got:?} but the table says {table:?}"),
                }
            }
        }
    }

    #[test]
    fn a_delivered_shipment_is_rated_once() {
        let at: DateTime<Utc> = "2026-11-22T10:00:00.000001Z".parse().unwrap();
        let mut shipment = shipment_in(&S::Delivered);
        assert_eq!(rate(&mut shipment, 9, at), Ok(true));
        assert_eq!((shipment.rating, shipment.rated_at), (Some(9), Some(at)));
        assert_eq!(rate(&mut shipment, 3, at), Err(Refusal::AlreadyRated));
        assert_eq!(shipment.rating, Some(9));
        let mut moving = shipment_in(&S::InTransit);
        assert!(matches!(
            rate(&mut moving, 9, at),
            Err(Refusal::InvalidState(_))
        ));
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

    #[test]
    fn paths_follow_the_table_and_stop_at_final_states() {
        let from_new = |to: Status| path(&S::AssignedToCourier, &to);
        assert_eq!(from_new(S::AssignedToCourier), Some(vec![]));
        assert_eq!(from_new(S::AssignedToDriver), Some(vec![Op::AssignDriver]));
        assert_eq!(
            from_new(S::InTransit),
            Some(vec![Op::AssignDriver, Op::Pickup])
        );
        assert_eq!(
            from_new(S::Delivered),
            Some(vec![Op::AssignDriver, Op::Pickup, Op::Deliver])
        );
        assert_eq!(
            from_new(S::Failed),
            Some(vec![Op::AssignDriver, Op::Pickup, Op::Fail])
        );
        assert_eq!(
            from_new(S::Returned),
            Some(vec![Op::AssignDriver, Op::Pickup, Op::Fail, Op::Return])
        );
        assert_eq!(from_new(S::Cancelled), Some(vec![Op::Cancel]));
        assert_eq!(from_new(S::Pending), None, "nothing leads to pending");
        assert_eq!(
            path(&S::AssignedToDriver, &S::AssignedToCourier),
            Some(vec![Op::UnassignDriver])
        );
        assert_eq!(
            path(&S::Failed, &S::Delivered),
            Some(vec![Op::Pickup, Op::Deliver])
        );
        assert_eq!(path(&S::Delivered, &S::InTransit), None);
        assert_eq!(path(&S::Cancelled, &S::Delivered), None);
        // Every path found is one the table allows, step by step.
        for from in S::KNOWN {
            for to in S::KNOWN {
                let Some(steps) = path(&from, &to) else {
                    continue;
                };
                let mut at = from.clone();
                for op in steps {
                    match apply(&at, op) {
                        Ok(Outcome::MoveTo(next)) => at = next,
                        other => panic!("{from} -> {to}: {op:?} gave {other:?}"),
                    }
                }
                assert_eq!(at, to);
            }
        }
    }
}
