//! `demo --simulate`: shipments that move through their lifecycle by
//! themselves, so a demo shows webhooks firing without anyone typing curl.
//!
//! The simulator is an HTTP client of the demo server, using the printed
//! merchant and courier keys: every change goes through the same handlers,
//! outbox and dispatcher as a real one.

use std::time::Duration;

use rand::Rng;
use serde_json::{Value, json};

use crate::admin::DemoAccount;

/// At most this many shipments are moving at once.
const MOVING: usize = 5;

/// Every `every`, creates a shipment (while fewer than five move) and
/// moves each moving shipment one step, until the process stops.
pub async fn run(base: String, demo: DemoAccount, every: Duration) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("a plain HTTP client builds");
    let sim = Simulator { client, base, demo };
    let mut moving: Vec<String> = Vec::new();
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

struct Simulator {
    client: reqwest::Client,
    base: String,
    demo: DemoAccount,
}

impl Simulator {
    async fn create(&self) -> Result<String, String> {
        let (lat, lng) = {
            let mut rng = rand::rng();
            (rng.random_range(48.0..54.0), rng.random_range(4.0..14.0))
        };
        let body = json!({
            "courier_company_id": self.demo.courier_id,
            "description": "Simulated parcel",
            "weight_kg": 1.5,
            "items": ["parcel"],
            "start_address": "52.5200,13.4050",
            "end_address": format!("{lat:.4},{lng:.4}"),
        });
        let created = self
            .send(
                self.client
                    .post(format!("{}/shipments", self.base))
                    .header("X-API-KEY", &self.demo.api_key)
                    .json(&body),
            )
            .await?;
        let code = created["code"].as_str().ok_or("no code in the answer")?;
        tracing::info!(%code, "simulate: created");
        Ok(code.to_owned())
    }

    /// Moves a shipment one step; `false` once it reached a final state.
    async fn step(&self, code: &str) -> Result<bool, String> {
        let current = self
            .send(
                self.client
                    .get(format!("{}/shipments/{code}", self.base))
                    .header("X-API-KEY", &self.demo.api_key),
            )
            .await?;
        let roll: f64 = rand::rng().random();
        let (op, body) = match current["status"].as_str().unwrap_or("") {
            "assigned_to_courier" => (
                "assign-driver",
                Some(json!({"driver_id": self.demo.driver_id})),
            ),
            "assigned_to_driver" => ("pickup", None),
            "in_transit" if roll < 0.8 => ("deliver", None),
            "in_transit" => ("fail", Some(json!({"reason": "nobody at the door"}))),
            "failed" if roll < 0.5 => ("pickup", None),
            "failed" => ("return", None),
            _ => return Ok(false),
        };
        let mut request = self
            .client
            .post(format!("{}/courier/shipments/{code}/{op}", self.base))
            .header("X-API-KEY", &self.demo.courier_key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let moved = self.send(request).await?;
        tracing::info!(%code, status = moved["status"].as_str().unwrap_or("?"), "simulate: moved");
        Ok(true)
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Value, String> {
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(format!("{status}: {}", body["detail"]))
        }
    }
}
