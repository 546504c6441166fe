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
/// key.
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
        }
    }
}
