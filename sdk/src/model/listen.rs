//! Listening to a merchant's changes (`GET /webhooks/listen`, `shipctl
//! listen`): what each event of the stream carries.

use serde::{Deserialize, Serialize};

/// One change as a listener receives it: exactly what a webhook delivery
/// carries, so a local app can be handed the same request.
///
/// The `delivery` events of `GET /webhooks/listen` carry this as their
/// data; POST [`body`](Self::body) with the headers `X-Service-Signature:
/// <signature>` and `X-Service-Delivery-Id: <delivery_id>` and a receiver
/// cannot tell it from a webhook delivery signed with the listener signing
/// key. When the change was made in a traced request (a W3C
/// `traceparent` came with it, or the service exports its own spans),
/// [`traceparent`](Self::traceparent) names that trace: send it as the
/// `traceparent` header, as a webhook delivery does, and the receiver's
/// span joins the merchant's trace.
///
/// ```
/// use shipment_sdk::model::ListenerDelivery;
/// let event: ListenerDelivery = serde_json::from_str(
///     r#"{"delivery_id":"dlv_7_l","shipment_code":"SHP-AB12CD34","version":2,
///         "signature":"sha256=00","body":"{\"code\":\"SHP-AB12CD34\"}"}"#,
/// )
/// .unwrap();
/// assert_eq!(event.body, r#"{"code":"SHP-AB12CD34"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct ListenerDelivery {
    /// The `X-Service-Delivery-Id` of this delivery (`dlv_<change>_l`).
    #[cfg_attr(feature = "openapi", schema(example = "dlv_1042_l"))]
    pub delivery_id: String,
    /// The shipment that changed.
    #[cfg_attr(feature = "openapi", schema(example = "SHP-7KQ2M9XD"))]
    pub shipment_code: String,
    /// The shipment's version after the change.
    pub version: i64,
    /// `X-Service-Signature`: `sha256=<hex>`, the HMAC-SHA256 of `body`
    /// under the listener signing key.
    pub signature: String,
    /// The request body, byte for byte: the shipment as
    /// `GET /shipments/{code}` showed it at that change.
    pub body: String,
    /// The W3C `traceparent` of the trace the change was made in, if any
    /// (absent from the event otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    )]
    pub traceparent: Option<String>,
}

impl ListenerDelivery {
    /// A delivery as the service sends it.
    pub fn new(
        delivery_id: impl Into<String>,
        shipment_code: impl Into<String>,
        version: i64,
        signature: impl Into<String>,
        body: impl Into<String>,
    ) -> ListenerDelivery {
        ListenerDelivery {
            delivery_id: delivery_id.into(),
            shipment_code: shipment_code.into(),
            version,
            signature: signature.into(),
            body: body.into(),
            traceparent: None,
        }
    }

    /// The same delivery in the trace `traceparent` names (see
    /// [`traceparent`](Self::traceparent)).
    #[must_use]
    pub fn with_traceparent(mut self, traceparent: Option<String>) -> ListenerDelivery {
        self.traceparent = traceparent;
        self
    }
}
