//! The redelivery budget: how many changes a merchant may have redelivered
//! in any minute, across its webhooks, counted from the redelivery rows of
//! the outbox (index `outbox_redeliveries`), so every process sharing the
//! database counts the same rows (DESIGN §2).

use chrono::{DateTime, Utc};

use crate::store::{StoreError, Tx};

/// Most changes a merchant may have redelivered in any sliding minute
/// (`--redeliveries-per-minute`). Each redelivery row counts once, a
/// single redelivery or one change of a bulk call alike, from when it is
/// queued, whether it has been sent since or not: a redelivery that
/// failed again still counts until its minute is over, so asking again
/// and again cannot send more than the budget to a receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedeliveryBudget {
    per_minute: u32,
}

impl RedeliveryBudget {
    /// The default budget: 1,000 redelivered changes a minute.
    pub const DEFAULT_PER_MINUTE: u32 = 1_000;

    /// How long a redelivery counts against the budget.
    pub const WINDOW: chrono::Duration = chrono::Duration::seconds(60);

    /// A budget of `n` redelivered changes a minute (at least 1).
    pub(crate) fn per_minute(n: u32) -> RedeliveryBudget {
        RedeliveryBudget {
            per_minute: n.max(1),
        }
    }

    /// How many changes a minute.
    pub(crate) fn get(self) -> u32 {
        self.per_minute
    }
}

impl Default for RedeliveryBudget {
    fn default() -> Self {
        RedeliveryBudget::per_minute(RedeliveryBudget::DEFAULT_PER_MINUTE)
    }
}

/// The merchant's redeliveries (`$1`) queued after `$2`.
const USED: &str = "SELECT COUNT(*) FROM outbox \
                    WHERE merchant_id = $1 AND redelivery_of IS NOT NULL AND created_at > $2";

/// When the one at offset `$3` (oldest first) of [`USED`] was queued.
const QUEUED_AT: &str = "SELECT created_at FROM outbox \
                         WHERE merchant_id = $1 AND redelivery_of IS NOT NULL AND created_at > $2 \
                         ORDER BY created_at LIMIT 1 OFFSET $3";

/// How many of its budget the merchant has used in the minute before `at`.
///
/// Read inside the transaction that queues, under the merchant's lock
/// (`Tx::lock_exclusively` on PostgreSQL; SQLite's write transactions are
/// alone already), so two requests at once cannot both see room for one.
pub(super) async fn used(
    tx: &mut Tx,
    merchant_id: i64,
    at: DateTime<Utc>,
) -> Result<u32, StoreError> {
    let n: i64 = tx
        .query(USED)
        .bind(merchant_id)
        .bind(at - RedeliveryBudget::WINDOW)
        .scalar()
        .await?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// How long from `at` until the merchant, which has used `used` of
/// `budget` (at least all of it), has room for one more: until enough of
/// the oldest redeliveries in the minute have left it. In whole seconds,
/// rounded up, at least 1 (what `Retry-After` says).
pub(super) async fn retry_after(
    tx: &mut Tx,
    merchant_id: i64,
    at: DateTime<Utc>,
    used: u32,
    budget: RedeliveryBudget,
) -> Result<std::time::Duration, StoreError> {
    let offset = used.saturating_sub(budget.get());
    let oldest: Option<DateTime<Utc>> = tx
        .query(QUEUED_AT)
        .bind(merchant_id)
        .bind(at - RedeliveryBudget::WINDOW)
        .bind(i64::from(offset))
        .scalar_optional()
        .await?;
    let wait = oldest.map_or(chrono::Duration::zero(), |queued| {
        queued + RedeliveryBudget::WINDOW - at
    });
    Ok(whole_seconds(wait))
}

/// `wait` in whole seconds, rounded up, at least 1.
fn whole_seconds(wait: chrono::Duration) -> std::time::Duration {
    let millis = u64::try_from(wait.num_milliseconds()).unwrap_or(0);
    std::time::Duration::from_secs(millis.div_ceil(1000).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_whole_seconds_rounded_up_and_never_zero() {
        let secs = |ms| whole_seconds(chrono::Duration::milliseconds(ms)).as_secs();
        assert_eq!(secs(-5), 1);
        assert_eq!(secs(0), 1);
        assert_eq!(secs(1), 1);
        assert_eq!(secs(1_000), 1);
        assert_eq!(secs(1_001), 2);
        assert_eq!(secs(59_999), 60);
    }

    #[test]
    fn a_budget_is_at_least_one() {
        assert_eq!(RedeliveryBudget::per_minute(0).get(), 1);
        assert_eq!(RedeliveryBudget::default().get(), 1_000);
    }
}
