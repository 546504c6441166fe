//! [`WebhookInbox`]: the deliveries of one webhook, each verified with
//! `webhook-verify` against its signing key, in both schemes, before a test
//! sees it.

use shipment_sdk::model::{Shipment, Status};
use webhook_verify::Verifier;

use crate::receiver::{Received, WAIT, WebhookReceiver};

/// Whether a new inbox refuses deliveries without the Standard Webhooks
/// headers ([`WebhookInbox::require_standard_headers`]): the server sends
/// them on every delivery, so one that lacks them fails the test.
const STANDARD_HEADERS_REQUIRED: bool = true;

/// The header that names a delivery (the same on a redelivery or a
/// duplicate of it).
pub const DELIVERY_ID_HEADER: &str = "x-service-delivery-id";

/// One verified delivery.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The shipment the body carries, as `GET /shipments/{code}` showed it
    /// at that version.
    pub shipment: Shipment,
    /// Its `X-Service-Delivery-Id`.
    pub delivery_id: String,
    /// The request as it arrived (headers, exact body bytes, time).
    pub received: Received,
}

impl Delivery {
    /// Its `webhook-id` (Standard Webhooks), verified with the rest of its
    /// signature: the same for every attempt of one change to this webhook
    /// (redeliveries and duplicates keep it).
    pub fn webhook_id(&self) -> Option<&str> {
        self.received.webhook_id()
    }
}

/// The deliveries of one registered webhook, in arrival order, each
/// checked with [`Received::verify`]: `X-Service-Signature`, and the
/// Standard Webhooks headers whenever any is present (their timestamp
/// within five minutes of arrival), then parsed as a shipment. A delivery
/// that fails verification fails the test: that is a server bug. Its
/// receiver answers such a delivery `401`, as a real receiver would.
///
/// Get one from [`TestServer::webhook_inbox`](crate::TestServer::webhook_inbox).
///
/// ```no_run
/// # async fn run(server: shipment_testkit::TestServer) {
/// use shipment_sdk::model::Status;
/// let mut inbox = server.webhook_inbox().await;
/// let created = server.create_shipment().await;
/// let first = inbox.next().await;
/// assert_eq!(first.shipment.code, created.code);
/// server.advance(&created.code, Status::Delivered).await;
/// let delivered = inbox.wait_for(&created.code, Status::Delivered).await;
/// assert_eq!(delivered.shipment.status, Status::Delivered);
/// # }
/// ```
pub struct WebhookInbox {
    receiver: WebhookReceiver,
    verifier: Verifier,
    signing_key: String,
    /// How many deliveries earlier calls consumed.
    cursor: usize,
}

impl WebhookInbox {
    /// An inbox over `receiver`, whose deliveries are signed with
    /// `signing_key` (`whsec_...`).
    pub fn new(receiver: WebhookReceiver, signing_key: &str) -> WebhookInbox {
        let mut inbox = WebhookInbox {
            receiver,
            verifier: Verifier::new(signing_key),
            signing_key: signing_key.to_owned(),
            cursor: 0,
        };
        inbox.require_standard_headers(STANDARD_HEADERS_REQUIRED);
        inbox
    }

    /// Whether a delivery without the Standard Webhooks headers
    /// (`webhook-id`, `webhook-timestamp`, `webhook-signature`) fails
    /// verification; with them, they are always checked.
    pub fn require_standard_headers(&mut self, required: bool) {
        let verifier = Verifier::new(&self.signing_key);
        self.verifier = if required {
            verifier.require_standard()
        } else {
            verifier
        };
        self.receiver.verify_with(self.verifier.clone());
    }

    /// The webhook's signing key (`whsec_…`), so a merchant can run its
    /// own webhook handler's verification on the real deliveries the inbox
    /// received ([`Delivery`]'s `body` and headers).
    pub fn signing_key(&self) -> &str {
        &self.signing_key
    }

    /// The receiver's URL, as registered.
    pub fn url(&self) -> &str {
        &self.receiver.url
    }

    /// The next delivery not yet returned, waiting up to
    /// [`WAIT`](crate::WAIT) for it.
    ///
    /// # Panics
    ///
    /// When none arrives in time, or a delivery is not correctly signed or
    /// not a shipment.
    pub async fn next(&mut self) -> Delivery {
        let received = self.receiver.nth(self.cursor).await;
        self.cursor += 1;
        self.verify(received)
    }

    /// Skips deliveries until one of shipment `code` in `status` arrives,
    /// and returns it (the ones skipped are consumed).
    ///
    /// # Panics
    ///
    /// As [`next`](Self::next), and when no such delivery arrives within
    /// [`WAIT`](crate::WAIT).
    pub async fn wait_for(&mut self, code: impl AsRef<str>, status: Status) -> Delivery {
        let code = code.as_ref();
        let wait = async {
            loop {
                let delivery = self.next().await;
                if delivery.shipment.code == code && delivery.shipment.status == status {
                    return delivery;
                }
            }
        };
        match tokio::time::timeout(WAIT, wait).await {
            Ok(delivery) => delivery,
            Err(_) => panic!("no delivery of {code} in {status} within {WAIT:?}"),
        }
    }

    /// Every delivery received so far (verified), including those already
    /// returned by [`next`](Self::next); it does not move the cursor.
    pub fn all(&self) -> Vec<Delivery> {
        self.receiver
            .received()
            .into_iter()
            .map(|r| self.verify(r))
            .collect()
    }

    #[track_caller]
    fn verify(&self, received: Received) -> Delivery {
        if let Err(e) = received.verify(&self.verifier) {
            panic!("a delivery failed verification: {e}");
        }
        let shipment: Shipment = match serde_json::from_slice(&received.body) {
            Ok(shipment) => shipment,
            Err(e) => panic!("a delivery is not a shipment: {e}"),
        };
        let delivery_id = received
            .headers
            .get(DELIVERY_ID_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        Delivery {
            shipment,
            delivery_id,
            received,
        }
    }
}
