//! How each of the SDK's types looks as a table row and on its own.
//!
//! Kept apart from the writing in [`super`]: a field added to the model is
//! a line here, and nothing here can write raw text, since every cell is a
//! [`Cell`], escaped when made.

use anstyle::{AnsiColor, Style};
use chrono::{DateTime, Utc};
use shipment_sdk::model::{
    ApiKey, ConfirmationCode, CourierCompany, Delivery, Permissions, Shipment, Webhook,
};

use super::{BOLD, Cell, DIM, Tabular, short_time, status_style};

impl Tabular for Shipment {
    const HEADERS: &'static [&'static str] =
        &["CODE", "STATUS", "COURIER", "DRIVER", "FEE", "CREATED"];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::styled(self.code.as_str(), BOLD),
            Cell::styled(self.status.as_str(), status_style(&self.status)),
            Cell::plain(self.courier_company_id.to_string()),
            Cell::opt(self.assigned_driver_id),
            Cell::plain(self.total_fee.to_string()),
            Cell::plain(short_time(&self.created_at)),
        ]
    }
    fn detail(&self) -> Vec<(&'static str, Cell)> {
        let time = |t: &Option<DateTime<Utc>>| Cell::opt(t.as_ref().map(short_time));
        vec![
            ("code", Cell::styled(self.code.as_str(), BOLD)),
            (
                "status",
                Cell::styled(self.status.as_str(), status_style(&self.status)),
            ),
            ("version", Cell::plain(self.version.to_string())),
            ("courier", Cell::plain(self.courier_company_id.to_string())),
            ("driver", Cell::opt(self.assigned_driver_id)),
            ("description", Cell::opt(self.description.as_ref())),
            ("weight_kg", Cell::opt(self.weight_kg)),
            ("dimensions", Cell::opt(self.dimensions.as_ref())),
            (
                "items",
                if self.items.is_empty() {
                    Cell::opt(None::<String>)
                } else {
                    Cell::plain(self.items.join(", "))
                },
            ),
            ("from", Cell::opt(self.start_address.as_ref())),
            ("to", Cell::opt(self.end_address.as_ref())),
            ("total_fee", Cell::plain(self.total_fee.to_string())),
            ("webhook_url", Cell::opt(self.webhook_url.as_ref())),
            ("rating", Cell::opt(self.rating)),
            ("failure_reason", Cell::opt(self.failure_reason.as_ref())),
            ("created_at", Cell::plain(short_time(&self.created_at))),
            ("driver_assigned", time(&self.assigned_to_driver_at)),
            ("picked_up_at", time(&self.picked_up_at)),
            ("delivered_at", time(&self.delivered_at)),
            ("failed_at", time(&self.failed_at)),
            ("returned_at", time(&self.returned_at)),
            ("cancelled_at", time(&self.cancelled_at)),
            ("rated_at", time(&self.rated_at)),
            ("updated_at", Cell::plain(short_time(&self.updated_at))),
        ]
    }
}

impl Tabular for CourierCompany {
    const HEADERS: &'static [&'static str] =
        &["ID", "NAME", "ACTIVE", "BASE FEE", "PER KG", "PER KM"];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::plain(self.id.to_string()),
            Cell::styled(&self.name, BOLD),
            yes_no(self.active),
            Cell::plain(self.base_fee.to_string()),
            Cell::plain(self.per_kg.to_string()),
            Cell::plain(self.per_km.to_string()),
        ]
    }
}

impl Tabular for ConfirmationCode {
    const HEADERS: &'static [&'static str] = &["SHIPMENT", "CONFIRMATION CODE", "EXPIRES"];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::plain(self.code.as_str()),
            Cell::styled(&self.confirmation_code, BOLD),
            Cell::plain(short_time(&self.expires_at)),
        ]
    }
}

impl Tabular for ApiKey {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "KEY",
        "PERMISSIONS",
        "EXPIRES",
        "CREATED",
        "LAST USED",
    ];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::plain(self.id.to_string()),
            Cell::styled(&self.name, BOLD),
            Cell::plain(format!("{}...{}", self.prefix, self.last4)),
            permissions_cell(self.permissions.as_ref()),
            expiry_cell(self.expires_at.as_ref(), self.expired),
            Cell::plain(short_time(&self.created_at)),
            Cell::opt(self.last_used_at.as_ref().map(short_time)),
        ]
    }
}

/// A key's permissions: `full` for a full key (which may do everything),
/// else the restricted key's as `shipctl keys create --permissions` takes
/// them, so a list shows what to type for another like it.
pub fn permissions_cell(permissions: Option<&Permissions>) -> Cell {
    match permissions {
        None => Cell::plain("full"),
        Some(p) => Cell::styled(p.to_string(), YELLOW),
    }
}

/// When a key expires: `-` for never, its time, or `expired` with its
/// time once passed (the service's verdict, not this machine's clock).
pub fn expiry_cell(expires_at: Option<&DateTime<Utc>>, expired: bool) -> Cell {
    match (expires_at, expired) {
        (Some(t), true) => Cell::styled(format!("expired {}", short_time(t)), RED),
        (Some(t), false) => Cell::plain(short_time(t)),
        (None, _) => Cell::opt(None::<String>),
    }
}

const YELLOW: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Yellow)));
const RED: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Red)));

impl Tabular for Webhook {
    const HEADERS: &'static [&'static str] = &["ID", "URL", "ACTIVE", "CREATED"];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::plain(self.webhook_id.to_string()),
            Cell::styled(&self.url, BOLD),
            yes_no(self.active),
            Cell::plain(short_time(&self.created_at)),
        ]
    }
}

impl Tabular for Delivery {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "SHIPMENT",
        "VERSION",
        "RESULT",
        "STATUS",
        "MS",
        "AT",
        "REDELIVERY OF",
        "ERROR",
    ];
    fn cells(&self) -> Vec<Cell> {
        let result = if self.success {
            Cell::styled("ok", Style::new().fg_color(Some(AnsiColor::Green.into())))
        } else {
            Cell::styled("failed", Style::new().fg_color(Some(AnsiColor::Red.into())))
        };
        vec![
            Cell::plain(self.id.to_string()),
            Cell::plain(self.shipment_code.as_str()),
            Cell::plain(self.version.to_string()),
            result,
            Cell::opt(self.status_code),
            Cell::plain(self.duration_ms.to_string()),
            Cell::plain(short_time(&self.delivered_at)),
            Cell::opt(self.redelivery_of),
            Cell::opt(self.error.as_ref()),
        ]
    }
}

fn yes_no(b: bool) -> Cell {
    if b {
        Cell::plain("yes")
    } else {
        Cell::styled("no", DIM)
    }
}
