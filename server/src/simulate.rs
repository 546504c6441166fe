//! `demo --simulate`: shipments that move through their lifecycle by
//! themselves, so a demo shows webhooks firing without anyone typing curl.
//!
//! The simulator is an HTTP client of the demo server, using the printed
//! merchant and courier keys: every change goes through the same handlers,
//! outbox and dispatcher as a real one.
//!
//! Each change is printed as one short line on standard output
//! ([`change_line`]), where the demo printed its keys: a person watching
//! sees the shipments move without the request log (the demo logs requests
//! only with `-v`).

use std::time::Duration;

use rand::Rng;
use serde::de::DeserializeOwned;
use serde_json::json;
use shipment_sdk::model::{CreateShipment, Problem, Shipment, ShipmentCode, Status};

use crate::admin::DemoAccount;

/// At most this many shipments are moving at once.
const MOVING: usize = 5;

/// Why a simulated request failed (logged; the simulation goes on).
#[derive(Debug, thiserror::Error)]
enum SimulateError {
    /// The request did not get an answer.
    #[error("request failed: {0}")]
    Transport(#[from] reqwest::Error),
    /// The server refused it.
    #[error("{status} {code}: {detail}")]
    Refused {
        status: reqwest::StatusCode,
        code: String,
        detail: String,
    },
}
/// Every `every`, creates a shipment (while fewer than five move) and
/// moves each moving shipment one step, until the process stops.
pub async fn run(base: String, demo: DemoAccount, every: Duration) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("a plain HTTP client builds");
    let sim = Simulator { client, base, demo };
    let mut moving: Vec<ShipmentCode> = Vec::new();
    let mut ticks = tokio::time::interval(every);
    loop {
        ticks.tick().await;
        if moving.len() < MOVING {
            match sim.create().await {
                Ok(code) => moving.push(code),
                Err(e) => tracing::warn!(error = %e, "simulate: cannot create a shipment"),
            }
        }
        let mut still = Vec::with_capacity(moving.len());
        for code in moving {
            match sim.step(&code).await {
                Ok(true) => still.push(code),
                Ok(false) => {}
                Err(e) => tracing::warn!(%code, error = %e, "simulate: a step failed"),
            }
        }
        moving = still;
    }
}

/// The line printed for a change: `SHP-7K3M-Q9ZX v3 in_transit`.
pub fn change_line(shipment: &Shipment) -> String {
    format!(
        "{} v{} {}",
        shipment.code, shipment.version, shipment.status
    )
}

struct Simulator {
    client: reqwest::Client,
    base: String,
    demo: DemoAccount,
}

impl Simulator {
    async fn create(&self) -> Result<ShipmentCode, SimulateError> {
        let (lat, lng) = {
            let mut rng = rand::rng();
            (rng.random_range(48.0..54.0), rng.random_range(4.0..14.0))
        };
        let body = CreateShipment::new(self.demo.courier_id)
            .description("Simulated parcel")
            .weight_kg(rust_decimal::Decimal::new(15, 1))
            .item("parcel")
            .start_address("52.5200,13.4050")
            .end_address(format!("{lat:.4},{lng:.4}"));
        let created: Shipment = self
            .send(
                self.client
                    .post(format!("{}/shipments", self.base))
                    .header("X-API-KEY", &self.demo.api_key)
                    .json(&body),
            )
            .await?;
        println!("{}", change_line(&created));
        Ok(created.code)
    }

    /// Moves a shipment one step; `false` once it reached a final state.
    async fn step(&self, code: &ShipmentCode) -> Result<bool, SimulateError> {
        let current: Shipment = self
            .send(
                self.client
                    .get(format!("{}/shipments/{code}", self.base))
                    .header("X-API-KEY", &self.demo.api_key),
            )
            .await?;
        let roll: f64 = rand::rng().random();
        // The courier side's bodies are the reference server's own (the
        // SDK is the merchant's client), so they are written here.
        let (op, body) = match current.status {
            Status::AssignedToCourier => (
                "assign-driver",
                Some(json!({"driver_id": self.demo.driver_id})),
            ),
            Status::AssignedToDriver => ("pickup", None),
            Status::InTransit if roll < 0.8 => ("deliver", None),
            Status::InTransit => ("fail", Some(json!({"reason": "nobody at the door"}))),
            Status::Failed if roll < 0.5 => ("pickup", None),
            Status::Failed => ("return", None),
            _ => return Ok(false),
        };
        let mut request = self
            .client
            .post(format!("{}/courier/shipments/{code}/{op}", self.base))
            .header("X-API-KEY", &self.demo.courier_key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let moved: Shipment = self.send(request).await?;
        println!("{}", change_line(&moved));
        Ok(true)
    }

    async fn send<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, SimulateError> {
        let response = request.send().await?;
        let status = response.status();
        if status.is_success() {
            return Ok(response.json().await?);
        }
        let problem: Problem = response.json().await?;
        Err(SimulateError::Refused {
            status,
            code: problem.code.to_string(),
            detail: problem.detail,
        })
    }
}

#[cfg(test)]
mod tests {
    use shipment_sdk::model::Shipment;

    use super::change_line;

    #[test]
    fn a_change_is_one_short_line() {
        let at = "2026-11-21T09:30:12.123456Z";
        let shipment: Shipment = serde_json::from_value(serde_json::json!({
            "id": 1, "code": "SHP-7K3M-Q9ZX", "merchant_id": 1, "status": "in_transit",
            "courier_company_id": 1, "assigned_driver_id": 7, "description": null,
            "weight_kg": null, "dimensions": null, "items": [], "start_address": null,
            "end_address": null, "total_fee": 5.0, "webhook_url": null, "version": 3,
            "rating": null, "failure_reason": null, "created_at": at,
            "assigned_to_courier_at": null, "assigned_to_driver_at": null,
            "picked_up_at": at, "delivered_at": null, "failed_at": null,
            "returned_at": null, "cancelled_at": null, "rated_at": null, "updated_at": at
        }))
        .unwrap();
        assert_eq!(change_line(&shipment), "SHP-7K3M-Q9ZX v3 in_transit");
    }
}
