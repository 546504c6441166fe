//! The ids a webhook delivery carries: `X-Service-Delivery-Id`, one per
//! outbox row and target, and `webhook-id`, one per change and target. The
//! dispatcher sends them, and a redelivery still waiting names the id it
//! will be sent under (`app::webhooks`).

use shipment_sdk::model::WebhookId;

use crate::domain::ids::EventId;

/// `X-Service-Delivery-Id` of outbox row `row` to a target: one per row
/// and target (`dlv_<row>_w<webhook>`, or `dlv_<row>_s` for the shipment's
/// own `webhook_url`), so a redelivery, a row of its own, has its own.
pub(crate) fn delivery_id(row: EventId, webhook: Option<WebhookId>) -> String {
    match webhook {
        Some(id) => format!("dlv_{row}_w{id}"),
        None => format!("dlv_{row}_s"),
    }
}

/// `webhook-id` of a change to a target: `msg_<change>_w<webhook>`, or
/// `msg_<change>_s` for the shipment's own `webhook_url` (and
/// `msg_<change>_l` for a listener, which `shipctl listen` makes from the
/// event's delivery id), where `<change>` is the outbox id of the change's
/// own row. The same for every attempt of one change to one target (a
/// retry after a process died, a test-control duplicate, a redelivery),
/// so a receiver drops repeats by it; unlike `X-Service-Delivery-Id`,
/// which a redelivery changes.
pub(crate) fn message_id(change: EventId, webhook: Option<WebhookId>) -> String {
    match webhook {
        Some(id) => format!("msg_{change}_w{id}"),
        None => format!("msg_{change}_s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_id_names_the_change_and_the_target_and_a_delivery_id_the_row() {
        let (change, hook) = (EventId::new(42), Some(WebhookId::new(7)));
        assert_eq!(message_id(change, hook), "msg_42_w7");
        assert_eq!(message_id(change, None), "msg_42_s");
        // A redelivery of change 42 is row 57: a delivery id of its own,
        // the change's webhook-id.
        assert_eq!(delivery_id(EventId::new(57), hook), "dlv_57_w7");
        assert_eq!(delivery_id(change, None), "dlv_42_s");
    }
}
