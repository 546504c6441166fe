//! Webhook delivery: the dispatcher that drains the outbox, signs each
//! change and POSTs it to every target, and the SSRF guard.
//!
//! Delivery is at most one attempt per change and target (DESIGN §4): a
//! failure is logged, not retried; receivers catch up with
//! `GET /shipments?updated_after=...`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shipment_sdk::model::{MerchantId, WebhookId};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;
use tracing::Instrument as _;

use crate::domain::ids::EventId;
use crate::domain::sealed::DataKey;
use crate::store::outbox::{Attempt, OutboxRow, Target};
use crate::store::{Store, StoreError};

pub(crate) mod ids;
use ids::{delivery_id, message_id};

pub(crate) mod guard;
pub(crate) mod listeners;

/// Header naming a delivery, unique per change and target, so a receiver can
/// spot a repeat after a dispatcher crash.
pub(crate) const DELIVERY_ID_HEADER: &str = "X-Service-Delivery-Id";
/// The `User-Agent` of deliveries.
pub(crate) const USER_AGENT: &str =
    concat!("shipment-server/", env!("CARGO_PKG_VERSION"), " (webhooks)");

/// The first pause before a failed finishing write is tried again.
const FINISH_BACKOFF_MIN: Duration = Duration::from_millis(100);
/// The longest pause between tries of a finishing write: how late, at
/// most, a row is finished after the database is back.
const FINISH_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// How the dispatcher behaves.
#[derive(Debug, Clone)]
pub struct DispatchSettings {
    /// Allow loopback and private targets (tests, local development).
    pub allow_private_targets: bool,
    /// Extra root certificates (PEM) trusted for targets.
    pub extra_roots_pem: Option<Vec<u8>>,
    /// Longest a delivery may take, connection included.
    pub timeout: Duration,
    /// Pause between polls when the outbox is empty.
    pub poll_interval: Duration,
    /// How long a claim holds before another process may take the row.
    pub lease: Duration,
    /// Rows claimed at once.
    pub batch: u32,
    /// Rows being delivered at once, overall.
    pub max_in_flight: usize,
    /// Requests in flight to one URL at once, so a slow receiver holds only
    /// its own share.
    pub per_target: usize,
}

impl Default for DispatchSettings {
    fn default() -> Self {
        DispatchSettings {
            allow_private_targets: false,
            extra_roots_pem: None,
            timeout: Duration::from_secs(10),
            poll_interval: Duration::from_millis(200),
            lease: Duration::from_secs(60),
            // Measured (docs/src/appendix/benchmarks-history.md,
            // "The dispatcher"): with 32 and 64, the dispatcher spent
            // its time waiting on claims, and PostgreSQL delivered about 900
            // a second while creates came in at 2,000.
            batch: 64,
            max_in_flight: 128,
            per_target: 8,
        }
    }
}

/// Makes ring this process's rustls crypto provider, unless one is installed
/// already (a program embedding the server may have chosen its own). Called
/// by [`Dispatcher::new`]; calling it again does nothing.
///
/// reqwest is built without a provider of its own (`rustls-no-provider`: its
/// `rustls` feature compiles aws-lc-rs, a C library that cost about 45
/// CPU-seconds of a cold build, BENCHMARKS.md), so every reqwest client of
/// the process uses the installed one: the dispatcher's and the others
/// (`demo --simulate`'s). Certificates are checked by reqwest as before: the
/// platform's roots through `rustls-platform-verifier`, plus
/// `--webhook-ca-file`.
///
/// Without the `ring` feature this does nothing: the test kit builds the
/// server so, next to the SDK, whose reqwest brings aws-lc-rs and uses it
/// when no provider is installed.
pub fn install_tls_provider() {
    #[cfg(feature = "ring")]
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another thread's install is fine: one is in.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Drains the outbox. Cheap to clone; every clone shares one HTTP client.
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

/// Why the HTTPS client for deliveries could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The extra root certificates are no valid PEM.
    #[error("the webhook CA file holds no valid PEM certificate: {0}")]
    Ca(reqwest::Error),
    /// The client could not be built.
    #[error("cannot build the webhook client: {0}")]
    Build(reqwest::Error),
}

/// The test controls' duplicate deliveries, as the dispatcher asks for
/// them: defined here and implemented above (by `test_controls`), so the
/// dispatcher does not reach up into the state that keeps them.
pub(crate) trait Duplicates: Send + Sync {
    /// Whether the next delivery of this merchant is to be sent twice;
    /// takes one from the count if so.
    fn take_duplicate(&self, merchant_id: MerchantId) -> bool;
}

struct Inner {
    store: Store,
    data_key: DataKey,
    client: reqwest::Client,
    settings: DispatchSettings,
    worker: String,
    per_target: std::sync::Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Rung after a change in this process; other processes' changes are
    /// found by polling.
    signal: Arc<Notify>,
    /// With `--test-controls`: asked per delivery whether to send it twice.
    test_controls: Option<Arc<dyn Duplicates>>,
    /// Every claimed change goes to the listeners connected to this process.
    listeners: listeners::Listeners,
}

impl Dispatcher {
    /// A dispatcher for `store`, opening signing keys with `data_key`.
    pub fn new(
        store: Store,
        data_key: DataKey,
        settings: DispatchSettings,
    ) -> Result<Dispatcher, ClientError> {
        install_tls_provider();
        let mut builder = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .https_only(true)
            .dns_resolver(guard::PublicOnlyResolver {
                allow_private: settings.allow_private_targets,
            });
        if let Some(pem) = &settings.extra_roots_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(ClientError::Ca)?;
            builder = builder.tls_certs_merge(certs);
        }
        let client = builder.build().map_err(ClientError::Build)?;
        Ok(Dispatcher {
            inner: Arc::new(Inner {
                store,
                data_key,
                client,
                settings,
                per_target: std::sync::Mutex::default(),
                signal: Arc::new(Notify::new()),
                test_controls: None,
                listeners: listeners::Listeners::new(),
                worker: format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple()),
            }),
        })
    }

    /// This dispatcher, also woken (besides its polling) when `signal` is
    /// notified.
    #[must_use]
    pub fn woken_by(self, signal: Arc<Notify>) -> Dispatcher {
        let inner = Arc::into_inner(self.inner).expect("woken_by is called before cloning");
        Dispatcher {
            inner: Arc::new(Inner { signal, ..inner }),
        }
    }

    /// This dispatcher, handing every change it claims to `listeners` (the
    /// server's, which its listener streams subscribe to).
    #[must_use]
    pub fn feeding(self, listeners: listeners::Listeners) -> Dispatcher {
        let inner = Arc::into_inner(self.inner).expect("feeding is called before cloning");
        Dispatcher {
            inner: Arc::new(Inner { listeners, ..inner }),
        }
    }

    /// This dispatcher, sending a delivery twice (byte for byte, with the
    /// same delivery id) when the test controls say so for its merchant.
    #[must_use]
    pub(crate) fn with_test_controls(
        self,
        test_controls: Option<Arc<dyn Duplicates>>,
    ) -> Dispatcher {
        let inner =
            Arc::into_inner(self.inner).expect("with_test_controls is called before cloning");
        Dispatcher {
            inner: Arc::new(Inner {
                test_controls,
                ..inner
            }),
        }
    }

    /// Polls and delivers until `stop` turns true, then finishes the
    /// deliveries in flight and returns.
    ///
    /// Rows are claimed whenever there is room (up to `max_in_flight`), not
    /// batch by batch, so a slow receiver delays only its own rows.
    ///
    /// A row being delivered renews its lease (see `deliver_row`). Should a
    /// renewal come late (a stalled database) and the row come back in this
    /// dispatcher's next claim, the claim renews its lease, and it is not
    /// sent a second time.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let settings = &self.inner.settings;
        let mut running: JoinSet<()> = JoinSet::new();
        let mut in_flight: HashMap<tokio::task::Id, EventId> = HashMap::new();
        // A claim failed, and may have committed all the same: its rows are
        // this worker's, and nobody delivers them (`Store::release_outbox`).
        let mut release_owed = false;
        loop {
            if *stop.borrow() {
                break;
            }
            while let Some(joined) = running.try_join_next_with_id() {
                in_flight.remove(&task_of(joined));
            }
            if release_owed {
                let keep: Vec<EventId> = in_flight.values().copied().collect();
                let store = &self.inner.store;
                if let Ok(released) = store.release_outbox(&self.inner.worker, &keep).await {
                    release_owed = false;
                    if released > 0 {
                        tracing::info!(
                            released,
                            "outbox: released rows of a claim whose answer was lost"
                        );
                    }
                }
            }
            let room = settings.max_in_flight.saturating_sub(running.len());
            let mut claimed = 0;
            if room > 0 {
                let limit = u32::try_from(room).unwrap_or(u32::MAX).min(settings.batch);
                match self.claim(limit).await {
                    Ok(batch) => {
                        claimed = batch.len();
                        for (row, targets) in batch {
                            let id = EventId::new(row.id);
                            if in_flight.values().any(|&held| held == id) {
                                continue;
                            }
                            let delivery =
                                self.clone().deliver_row_logged(row, targets, stop.clone());
                            let task = running.spawn(delivery);
                            in_flight.insert(task.id(), id);
                        }
                    }
                    Err(e) => {
                        release_owed = true;
                        tracing::warn!(error = %e, "outbox: cannot claim rows; will retry");
                    }
                }
            }
            if claimed == 0 || running.len() >= settings.max_in_flight {
                // A finished row may unblock the next change of its shipment,
                // so a completion is a reason to claim again.
                tokio::select! {
                    Some(joined) = running.join_next_with_id(), if !running.is_empty() => {
                        in_flight.remove(&task_of(joined));
                    }
                    () = tokio::time::sleep(settings.poll_interval) => {}
                    () = self.inner.signal.notified() => {}
                    _ = stop.changed() => {}
                }
            }
        }
        while running.join_next().await.is_some() {}
    }

    /// Claims up to `limit` rows, each with its targets (read for the
    /// whole batch at once). If the targets cannot be read, the rows stay
    /// claimed until their lease runs out, and another claim retries them.
    async fn claim(&self, limit: u32) -> Result<Vec<(OutboxRow, Vec<Target>)>, StoreError> {
        let inner = &self.inner;
        let rows = inner
            .store
            .claim_outbox(&inner.worker, self.lease(), limit)
            .await?;
        // Committed and claimed: listeners get it now, in the same order
        // per shipment as webhooks do, each change with its listen position
        // (what a resuming listener's `Last-Event-ID` names), before any
        // delivery of it, so no change is delivered that listeners never
        // get. On PostgreSQL every server process has listeners of its own:
        // the positions were announced to all of them when they committed
        // (`listeners::relay`), this one included.
        let fed = inner.store.feed_listeners(&rows).await?;
        if inner.store.backend() == crate::store::Backend::Sqlite {
            inner.listeners.publish(fed);
        }
        let targets = inner.store.outbox_targets(&rows).await?;
        Ok(rows.into_iter().zip(targets).collect())
    }

    /// The lease of a claim, as the store takes it.
    fn lease(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.inner.settings.lease)
            .unwrap_or(chrono::Duration::seconds(60))
    }

    async fn deliver_row_logged(
        self,
        row: OutboxRow,
        targets: Vec<Target>,
        stop: watch::Receiver<bool>,
    ) {
        if let Err(e) = self.deliver_row(&row, targets, stop).await {
            // The lease runs out and another claim retries the row.
            tracing::warn!(outbox_id = row.id, error = %e, "outbox: row not finished");
        }
    }

    /// Claims one batch, delivers it and waits for it; returns how many
    /// rows it handled. (Tests drive dispatchers with this.)
    pub async fn run_once(&self) -> Result<usize, StoreError> {
        let batch = self.claim(self.inner.settings.batch).await?;
        let n = batch.len();
        // Never stopped: the call waits for its rows.
        let (_running, stop) = watch::channel(false);
        let mut running = JoinSet::new();
        for (row, targets) in batch {
            running.spawn(self.clone().deliver_row_logged(row, targets, stop.clone()));
        }
        while running.join_next().await.is_some() {}
        Ok(n)
    }

    /// Sends one row to each of its targets at once, logs every attempt as
    /// it ends, and marks the row done in the write that logs the last one.
    ///
    /// Every third of the lease while it is still sending (or waiting for
    /// its turn at a slow receiver), it renews its claim, so no other
    /// process takes the row and sends it a second time. Only slow rows pay
    /// that write.
    ///
    /// An attempt whose own record fails (the database unreachable for a
    /// moment) is logged with the last one instead; and the write that
    /// marks the row done is tried again ([`Dispatcher::finish`]) until it
    /// succeeds, since the row holds back every later change of its
    /// shipment until it is done.
    async fn deliver_row(
        &self,
        row: &OutboxRow,
        targets: Vec<Target>,
        stop: watch::Receiver<bool>,
    ) -> Result<(), StoreError> {
        // About when the claim runs out (it was made a moment ago).
        let mut claimed_until = Instant::now() + self.inner.settings.lease;
        let mut sends = JoinSet::new();
        for target in targets {
            let this = self.clone();
            let row = row.clone();
            sends.spawn(async move {
                let attempt = this.send(&row, &target).await;
                (target, attempt)
            });
        }
        let store = &self.inner.store;
        let worker = &self.inner.worker;
        let every = (self.inner.settings.lease / 3).max(Duration::from_millis(1));
        let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut unlogged = Vec::new();
        loop {
            tokio::select! {
                sent = sends.join_next() => match sent {
                    None => break,
                    Some(Ok(sent)) if sends.is_empty() => unlogged.push(sent),
                    Some(Ok((target, attempt))) => {
                        if let Err(e) = store.record_delivery(row, &target, &attempt).await {
                            tracing::warn!(outbox_id = row.id, error = %e, "outbox: cannot log an attempt; it is logged when the row is finished");
                            unlogged.push((target, attempt));
                        }
                    }
                    Some(Err(e)) => tracing::error!(error = %e, "outbox: a delivery task failed"),
                },
                _ = renew.tick() => match store.renew_outbox(EventId::new(row.id), worker, self.lease()).await {
                    Ok(true) => claimed_until = Instant::now() + self.inner.settings.lease,
                    // Sending on: this process's attempts are logged, and
                    // the receiver spots a repeat by its delivery id.
                    Ok(false) => tracing::warn!(outbox_id = row.id, "outbox: lease lost while delivering; another process may send this row too"),
                    Err(e) => tracing::warn!(outbox_id = row.id, error = %e, "outbox: cannot renew a lease; will retry"),
                },
            }
        }
        self.finish(row, &unlogged, claimed_until, stop).await
    }

    /// Marks `row` done, logging `unlogged` with it; if the write fails
    /// (the database unreachable, or its answer lost), tries again with
    /// back-off (up to [`FINISH_BACKOFF_MAX`]), so the row is done within
    /// moments of the database's return instead of holding back its
    /// shipment's later changes until its lease runs out. Gives up when the
    /// lease has run out (another claim retries the row then, and sends only
    /// what was not logged) or the dispatcher stops.
    async fn finish(
        &self,
        row: &OutboxRow,
        unlogged: &[(Target, Attempt)],
        claimed_until: Instant,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), StoreError> {
        let store = &self.inner.store;
        let worker = &self.inner.worker;
        let mut backoff = FINISH_BACKOFF_MIN;
        loop {
            let logging = unlogged.iter().map(|(target, attempt)| (target, attempt));
            let failed = match store.finish_outbox_logging(row, worker, logging).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() + backoff >= claimed_until || *stop.borrow() {
                return Err(failed);
            }
            tracing::warn!(outbox_id = row.id, error = %failed, retry_in_ms = backoff.as_millis(), "outbox: cannot finish a row; will retry");
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                _ = stop.changed() => return Err(failed),
            }
            backoff = (backoff * 2).min(FINISH_BACKOFF_MAX);
        }
    }

    /// The semaphore bounding requests to one URL.
    fn slot(&self, url: &str) -> Arc<Semaphore> {
        let mut slots = self
            .inner
            .per_target
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Forget idle URLs now and then so the map does not grow forever.
        if slots.len() > 10_000 {
            let limit = self.inner.settings.per_target;
            slots.retain(|_, s| s.available_permits() < limit);
        }
        slots
            .entry(url.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.inner.settings.per_target)))
            .clone()
    }

    async fn send(&self, row: &OutboxRow, target: &Target) -> Attempt {
        let slot = self.slot(&target.url);
        let _permit = slot.acquire().await;
        let twice = self
            .inner
            .test_controls
            .as_ref()
            .is_some_and(|c| c.take_duplicate(MerchantId::new(row.merchant_id)));
        // The delivery's span, a child of the span of the request that
        // made the change (its stored `traceparent`), which the receiver
        // gets as the parent of its own work. Only with exported spans.
        // Merchants put tokens in their URLs' queries: logs and spans show
        // the URL redacted.
        let shown_url = crate::telemetry::redact_url(&target.url);
        let span = tracing::info_span!(
            "webhook.delivery",
            otel.kind = "client",
            outbox_id = row.id,
            url.full = %shown_url,
            http.request.method = "POST",
            http.response.status_code = tracing::field::Empty,
        );
        let traceparent = crate::telemetry::continue_trace(&span, row.trace_parent.as_deref());
        let traceparent = traceparent.as_deref();
        let started = Instant::now();
        // Signed once for the attempt (its `webhook-timestamp` is now, once
        // its turn at the URL came), so a duplicate repeats it exactly.
        let signed = self.sign(row, target);
        let outcome = match &signed {
            Ok(signed) => {
                self.try_send(row, signed, traceparent)
                    .instrument(span.clone())
                    .await
            }
            Err(error) => Err(error.clone()),
        };
        if let Ok(status) = &outcome {
            span.record("http.response.status_code", status);
        }
        drop(span);
        let elapsed = started.elapsed();
        if twice && let Ok(signed) = &signed {
            // The same request again (same body, headers and signatures,
            // timestamp included); the log keeps the first attempt.
            let again = self.try_send(row, signed, traceparent).await;
            tracing::info!(outbox_id = row.id, url = %shown_url, outcome = ?again, "webhook delivery sent again (test controls)");
        }
        let duration_ms = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        let attempt = match outcome {
            Ok(status) if status < 400 => Attempt {
                status_code: Some(status),
                error: None,
                duration_ms,
            },
            Ok(status) => Attempt {
                status_code: Some(status),
                error: Some(format!("the receiver answered {status}")),
                duration_ms,
            },
            Err(error) => Attempt {
                status_code: None,
                error: Some(error),
                duration_ms,
            },
        };
        crate::metrics::delivery(attempt.error.is_none(), elapsed.as_secs_f64());
        tracing::info!(
            outbox_id = row.id,
            shipment = %row.shipment_code,
            version = row.version,
            url = %shown_url,
            status = attempt.status_code,
            error = attempt.error.as_deref(),
            duration_ms,
            "webhook delivery"
        );
        attempt
    }

    /// The request of one attempt of `row` to `target`, signed both ways
    /// with the target's key: `X-Service-Signature` over the body, and the
    /// Standard Webhooks headers over id, timestamp (now) and body.
    /// `Err` says why it cannot be sent (for the delivery log).
    fn sign(&self, row: &OutboxRow, target: &Target) -> Result<Signed, String> {
        let url = url::Url::parse(&target.url).map_err(|e| format!("invalid URL: {e}"))?;
        guard::check_literal(&url, self.inner.settings.allow_private_targets)
            .map_err(|e| e.to_string())?;
        let sealed = target
            .signing_key_sealed
            .as_deref()
            .ok_or("the merchant has no shipment signing key")?;
        let key = self
            .inner
            .data_key
            .open(sealed)
            .map_err(|e| e.to_string())?;
        let body = row.payload.as_bytes();
        let webhook = target.webhook_id.map(WebhookId::new);
        let message_id = message_id(EventId::new(row.change_id), webhook);
        let timestamp = chrono::Utc::now().timestamp();
        let standard = match webhook_verify::standard::sign(&key, &message_id, timestamp, body) {
            Ok(signature) => Some(Standard {
                message_id,
                timestamp,
                signature,
            }),
            // Every key the server makes or accepts (`whsec_` and 32 base62
            // characters, `domain::keys::is_signing_key`) is base64, so
            // only a key written into the database by other means gets
            // here. Its receivers still get the delivery with the seed's
            // signature, which is all such a key ever gave them; one that
            // requires the stronger scheme refuses it.
            Err(e) => {
                tracing::error!(outbox_id = row.id, webhook_id = target.webhook_id, error = %e, "webhook delivery sent without the Standard Webhooks headers");
                None
            }
        };
        Ok(Signed {
            url,
            signature: webhook_verify::sign(&key, body),
            delivery_id: delivery_id(EventId::new(row.id), webhook),
            standard,
        })
    }

    async fn try_send(
        &self,
        row: &OutboxRow,
        signed: &Signed,
        traceparent: Option<&str>,
    ) -> Result<u16, String> {
        let mut request = self
            .inner
            .client
            .post(signed.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(webhook_verify::SIGNATURE_HEADER, &signed.signature)
            .header(DELIVERY_ID_HEADER, &signed.delivery_id);
        if let Some(standard) = &signed.standard {
            use webhook_verify::standard::{ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER};
            request = request
                .header(ID_HEADER, &standard.message_id)
                .header(TIMESTAMP_HEADER, standard.timestamp.to_string())
                .header(SIGNATURE_HEADER, &standard.signature);
        }
        if let Some(traceparent) = traceparent {
            request = request.header(crate::telemetry::TRACEPARENT, traceparent);
        }
        let response = request
            .body(row.payload.clone())
            .send()
            .await
            .map_err(|e| describe(&e, self.inner.settings.timeout))?;
        Ok(response.status().as_u16())
    }
}

/// One attempt's request, signed: what is sent again, unchanged, when the
/// test controls ask for a duplicate.
struct Signed {
    url: url::Url,
    /// `X-Service-Signature`.
    signature: String,
    /// `X-Service-Delivery-Id`.
    delivery_id: String,
    /// The Standard Webhooks headers; `None` only for a key that is not
    /// base64 (see [`Dispatcher::sign`]).
    standard: Option<Standard>,
}

/// The Standard Webhooks headers of one attempt.
struct Standard {
    /// `webhook-id`.
    message_id: String,
    /// `webhook-timestamp`: Unix seconds when the attempt was signed.
    timestamp: i64,
    /// `webhook-signature`: `v1,<base64>`.
    signature: String,
}

/// The task a joined delivery ran in, whether it ended or panicked.
fn task_of(joined: Result<(tokio::task::Id, ()), tokio::task::JoinError>) -> tokio::task::Id {
    joined.map_or_else(|e| e.id(), |(task, ())| task)
}

/// A one-line reason for the delivery log, without internals of reqwest.
fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        return format!("timed out after {} s", timeout.as_secs());
    }
    // The innermost cause says what happened (refused, TLS, private address).
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    if e.is_connect() {
        format!("connection failed: {cause}")
    } else {
        format!("request failed: {cause}")
    }
}
