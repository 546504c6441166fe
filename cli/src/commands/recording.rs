//! What `listen --record` appends and `replay` reads (one delivery per
//! line), and the `--status`/`--code` filter both take.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use shipment_sdk::model::{ListenerDelivery, ShipmentCode};

use super::local_app::message_id;
use crate::error::{FAILURE, Failure};

/// Which changes are forwarded and printed: `--status` and `--code`, each
/// any of its values, both when both are given. Empty lets all through.
#[derive(Debug, Default)]
pub struct Filter {
    /// The statuses let through.
    pub statuses: Vec<String>,
    /// The shipments let through.
    pub codes: Vec<ShipmentCode>,
}

impl Filter {
    /// Whether a change of shipment `code` to `status` passes.
    pub fn matches(&self, code: &str, status: Option<&str>) -> bool {
        (self.codes.is_empty() || self.codes.iter().any(|c| c.as_str() == code))
            && (self.statuses.is_empty()
                || status.is_some_and(|s| self.statuses.iter().any(|f| f == s)))
    }
}

/// One received delivery as `--record` appends it and `shipctl replay`
/// reads it: one JSON object per line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    /// The delivery's id (`dlv_<change>_l`).
    pub delivery_id: String,
    /// When `listen` received it.
    pub received_at: DateTime<Utc>,
    /// The shipment that changed.
    pub shipment_code: String,
    /// Its version after the change.
    pub version: i64,
    /// The headers a receiver checks, as they were sent.
    pub headers: RecordedHeaders,
    /// The body, exactly (JSON-escaped in the file, so byte for byte).
    pub body: String,
}

/// The signature headers of a recorded delivery, under their HTTP names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedHeaders {
    /// `X-Service-Signature`: `sha256=<hex>` of the body under the listener
    /// signing key of the time.
    #[serde(rename = "X-Service-Signature")]
    pub signature: String,
    /// `X-Service-Delivery-Id`: what a receiver removes duplicates by.
    #[serde(rename = "X-Service-Delivery-Id")]
    pub delivery_id: String,
    /// `traceparent`: the W3C trace the change was made in, when it was
    /// made in one (absent from older recordings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// `webhook-id` (`msg_<change>_l`): what a Standard Webhooks receiver
    /// removes duplicates by, kept for `replay` to send again (absent from
    /// older recordings, where `replay` makes it from the delivery id as
    /// `listen` does). The timestamp and signature are not kept: they are
    /// made anew for each POST.
    #[serde(
        rename = "webhook-id",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub webhook_id: Option<String>,
}

impl Recorded {
    pub(crate) fn of(delivery: &ListenerDelivery) -> Recorded {
        Recorded {
            delivery_id: delivery.delivery_id.clone(),
            received_at: Utc::now(),
            shipment_code: delivery.shipment_code.clone(),
            version: delivery.version,
            headers: RecordedHeaders {
                signature: delivery.signature.clone(),
                delivery_id: delivery.delivery_id.clone(),
                traceparent: delivery.traceparent.clone(),
                webhook_id: Some(message_id(&delivery.delivery_id)),
            },
            body: delivery.body.clone(),
        }
    }

    /// Its `webhook-id`: as recorded, or for an older recording made from
    /// its delivery id as `listen` makes it.
    pub fn message_id(&self) -> String {
        self.headers
            .webhook_id
            .clone()
            .unwrap_or_else(|| message_id(&self.headers.delivery_id))
    }

    /// The delivery to POST again: its recorded headers and body.
    pub fn delivery(&self) -> ListenerDelivery {
        ListenerDelivery::new(
            self.headers.delivery_id.clone(),
            self.shipment_code.clone(),
            self.version,
            self.headers.signature.clone(),
            self.body.clone(),
        )
        .with_traceparent(self.headers.traceparent.clone())
    }
}

/// `--record FILE`, opened for appending.
pub(crate) struct Recorder {
    path: PathBuf,
    file: File,
}

impl Recorder {
    /// Opens (or creates) the file at the start, so a path that cannot be
    /// written is a usage error before anything is received. Bodies carry
    /// addresses and names: a new file is readable by its owner only.
    pub(crate) fn open(path: &Path) -> Result<Recorder, Failure> {
        let mut options = OpenOptions::new();
        options.append(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options
            .open(path)
            .map_err(|e| Failure::usage(format!("cannot open --record {}: {e}", path.display())))?;
        Ok(Recorder {
            path: path.to_owned(),
            file,
        })
    }

    /// Appends one line, in one write (the file is not buffered: a line is
    /// on disk before the delivery is forwarded).
    pub(crate) fn append(&mut self, delivery: &ListenerDelivery) -> Result<(), Failure> {
        let mut line = serde_json::to_vec(&Recorded::of(delivery))
            .map_err(|e| Failure::new(FAILURE, format!("cannot encode a delivery: {e}")))?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(|e| {
            Failure::new(
                FAILURE,
                format!("cannot append to --record {}: {e}", self.path.display()),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_take_any_of_their_values_and_both_must_pass() {
        let code: ShipmentCode = "SHP-7K3M-Q9ZX".parse().unwrap();
        let all = Filter::default();
        assert!(all.matches("SHP-0000-0000", None));
        let filter = Filter {
            statuses: vec!["delivered".into(), "cancelled".into()],
            codes: vec![code],
        };
        assert!(filter.matches("SHP-7K3M-Q9ZX", Some("cancelled")));
        assert!(!filter.matches("SHP-7K3M-Q9ZX", Some("in_transit")));
        assert!(!filter.matches("SHP-0000-0000", Some("delivered")));
        assert!(!filter.matches("SHP-7K3M-Q9ZX", None));
    }
}
