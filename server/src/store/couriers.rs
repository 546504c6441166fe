//! Courier companies, their links to merchants, and their drivers.

use chrono::{DateTime, Utc};
use shipment_sdk::model::{CourierCompany, CourierId, DriverId, MerchantId};

use super::{Store, StoreError, Tx, now};
use crate::domain::fee::{Pricing, from_minor_units};

const CREATE_COURIER: &str = "INSERT INTO courier_companies \
                              (name, active, base_fee_minor, per_kg_minor, per_km_minor, created_at) \
                              VALUES ($1, TRUE, $2, $3, $4, $5) RETURNING id";
const LINK_COURIER: &str = "INSERT INTO merchant_couriers (merchant_id, courier_company_id, linked_at) \
                            VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
const CREATE_DRIVER: &str = "INSERT INTO drivers (courier_company_id, name, created_at) \
                             VALUES ($1, $2, $3) RETURNING id, courier_company_id, name, created_at";
const DRIVERS: &str = "SELECT id, courier_company_id, name, created_at FROM drivers \
                       WHERE courier_company_id = $1 ORDER BY id";

/// A courier company's prices, as declared fixtures compare them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct CourierFees {
    /// The company.
    pub id: i64,
    /// Fixed part of the fee, in minor units.
    pub base_fee_minor: i64,
    /// Per kilogram, in minor units.
    pub per_kg_minor: i64,
    /// Per kilometre, in minor units.
    pub per_km_minor: i64,
}

/// A driver of a courier company, as stored (`app::couriers::Driver` is
/// what the API shows).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DriverRow {
    /// The driver's id.
    pub id: i64,
    /// The company employing the driver.
    pub courier_company_id: i64,
    /// Display name.
    pub name: String,
    /// When the driver was added.
    pub created_at: DateTime<Utc>,
}

/// A linked courier company with its prices, as stored.
#[derive(sqlx::FromRow)]
struct CourierRow {
    id: i64,
    name: String,
    active: bool,
    base_fee_minor: i64,
    per_kg_minor: i64,
    per_km_minor: i64,
    linked_at: DateTime<Utc>,
}

impl CourierRow {
    fn pricing(&self) -> Pricing {
        Pricing {
            base_fee: from_minor_units(self.base_fee_minor),
            per_kg: from_minor_units(self.per_kg_minor),
            per_km: from_minor_units(self.per_km_minor),
        }
    }
}

impl Store {
    /// Whether a courier company with this id exists.
    pub(crate) async fn courier_exists(&self, id: CourierId) -> Result<bool, StoreError> {
        let sql = "SELECT COUNT(*) FROM courier_companies WHERE id = $1";
        let n: i64 = self.query(sql).bind(id.get()).scalar().await?;
        Ok(n > 0)
    }

    /// Adds a courier company with its prices in minor units.
    pub async fn create_courier(
        &self,
        name: &str,
        base_fee_minor: i64,
        per_kg_minor: i64,
        per_km_minor: i64,
    ) -> Result<CourierId, StoreError> {
        let id = self
            .query(CREATE_COURIER)
            .bind(name)
            .bind(base_fee_minor)
            .bind(per_kg_minor)
            .bind(per_km_minor)
            .bind(now())
            .scalar()
            .await?;
        Ok(CourierId::new(id))
    }

    /// Links a courier company to a merchant (idempotent).
    pub async fn link_courier(
        &self,
        merchant_id: MerchantId,
        courier_id: CourierId,
    ) -> Result<(), StoreError> {
        self.query(LINK_COURIER)
            .bind(merchant_id.get())
            .bind(courier_id.get())
            .bind(now())
            .execute()
            .await?;
        Ok(())
    }

    /// The courier companies linked to a merchant, by id.
    pub(crate) async fn merchant_couriers(
        &self,
        merchant_id: MerchantId,
    ) -> Result<Vec<CourierCompany>, StoreError> {
        let sql = "SELECT c.id, c.name, c.active, c.base_fee_minor, c.per_kg_minor, c.per_km_minor, \
                   l.linked_at FROM merchant_couriers l \
                   JOIN courier_companies c ON c.id = l.courier_company_id \
                   WHERE l.merchant_id = $1 ORDER BY c.id";
        let rows: Vec<CourierRow> = self.query(sql).bind(merchant_id.get()).fetch_all().await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let p = r.pricing();
                let mut company = CourierCompany::new(
                    CourierId::new(r.id),
                    r.name,
                    [p.base_fee, p.per_kg, p.per_km],
                    r.linked_at,
                );
                company.active = r.active;
                company
            })
            .collect())
    }

    /// The prices of a courier company if it is linked to the merchant and
    /// active; `None` otherwise.
    pub(crate) async fn linked_courier_pricing(
        &self,
        merchant_id: MerchantId,
        courier_id: CourierId,
    ) -> Result<Option<Pricing>, StoreError> {
        let sql = "SELECT c.id, c.name, c.active, c.base_fee_minor, c.per_kg_minor, c.per_km_minor, \
                   l.linked_at FROM merchant_couriers l \
                   JOIN courier_companies c ON c.id = l.courier_company_id \
                   WHERE l.merchant_id = $1 AND l.courier_company_id = $2 AND c.active";
        let row: Option<CourierRow> = self
            .query(sql)
            .bind(merchant_id.get())
            .bind(courier_id.get())
            .fetch_optional()
            .await?;
        Ok(row.map(|r| r.pricing()))
    }

    /// Adds a driver to a courier company.
    pub async fn create_driver(
        &self,
        courier_id: CourierId,
        name: &str,
    ) -> Result<DriverRow, StoreError> {
        Ok(self
            .query(CREATE_DRIVER)
            .bind(courier_id.get())
            .bind(name)
            .bind(now())
            .fetch_one()
            .await?)
    }

    /// The drivers of a courier company, by id.
    pub async fn drivers(&self, courier_id: CourierId) -> Result<Vec<DriverRow>, StoreError> {
        Ok(self
            .query(DRIVERS)
            .bind(courier_id.get())
            .fetch_all()
            .await?)
    }

    /// One driver, if it exists.
    pub(crate) async fn driver(
        &self,
        driver_id: DriverId,
    ) -> Result<Option<DriverRow>, StoreError> {
        let sql = "SELECT id, courier_company_id, name, created_at FROM drivers WHERE id = $1";
        Ok(self
            .query(sql)
            .bind(driver_id.get())
            .fetch_optional()
            .await?)
    }
}

/// The same writes inside a transaction, for declared fixtures.
impl Tx {
    /// The oldest courier company named exactly `name`, with its prices.
    pub(crate) async fn courier_by_name(
        &mut self,
        name: &str,
    ) -> Result<Option<CourierFees>, StoreError> {
        let sql = "SELECT id, base_fee_minor, per_kg_minor, per_km_minor FROM courier_companies \
                   WHERE name = $1 AND test_merchant_id IS NULL ORDER BY id LIMIT 1";
        Ok(self.query(sql).bind(name).fetch_optional().await?)
    }

    /// Adds a courier company with its prices in minor units.
    pub async fn create_courier(
        &mut self,
        name: &str,
        fees: [i64; 3],
    ) -> Result<CourierId, StoreError> {
        let [base_fee, per_kg, per_km] = fees;
        let id = self
            .query(CREATE_COURIER)
            .bind(name)
            .bind(base_fee)
            .bind(per_kg)
            .bind(per_km)
            .bind(now())
            .scalar()
            .await?;
        Ok(CourierId::new(id))
    }

    /// Links a courier company to a merchant; `false` if it was linked.
    pub async fn link_courier(
        &mut self,
        merchant_id: MerchantId,
        courier_id: CourierId,
    ) -> Result<bool, StoreError> {
        let n = self
            .query(LINK_COURIER)
            .bind(merchant_id.get())
            .bind(courier_id.get())
            .bind(now())
            .execute()
            .await?;
        Ok(n == 1)
    }

    /// The drivers of a courier company, by id.
    pub async fn drivers(&mut self, courier_id: CourierId) -> Result<Vec<DriverRow>, StoreError> {
        Ok(self
            .query(DRIVERS)
            .bind(courier_id.get())
            .fetch_all()
            .await?)
    }

    /// Adds a driver to a courier company.
    pub async fn create_driver(
        &mut self,
        courier_id: CourierId,
        name: &str,
    ) -> Result<DriverRow, StoreError> {
        Ok(self
            .query(CREATE_DRIVER)
            .bind(courier_id.get())
            .bind(name)
            .bind(now())
            .fetch_one()
            .await?)
    }
}
