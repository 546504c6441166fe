//! Real HTTPS webhook receivers for the delivery tests: the test kit's
//! [`WebhookReceiver`], whose certificate comes from the test kit's local CA
//! (which every test server trusts through `--webhook-ca-file`).

// Also compiled into the delivery benchmark, which needs only `Receiver`.
#[allow(unused_imports)]
pub use shipment_testkit::{Received, WebhookReceiver as Receiver, ca};
