//! The merchant dashboard in a real browser: headless Chromium driven over
//! WebDriver (Debian's `chromium` and `chromium-driver`), against the real
//! server, on SQLite and PostgreSQL. Each test has its own server and its
//! own chromedriver on a free port.
//!
//! Every page a walk checks is run through axe-core (the copy in
//! `tests/vendor/axe-core`), which must find nothing wrong.
//!
//! Without chromedriver the tests fail under CI (`CI` set) and print
//! `SKIPPED (no chromedriver)` elsewhere. The SQLite run writes a
//! screenshot of every page it visits to `target/screenshots/<page>.png`.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use reqwest::{Method, StatusCode};
use serde_json::json;
use shipment_sdk::model::{MerchantId, WebhookId};
use shipment_testkit::{Db, Fixture, TestApp, WebhookReceiver, db_tests, send};

db_tests!(
    a_merchant_manages_keys_and_webhooks_and_signs_out,
    a_merchant_follows_shipments_through_the_pages,
    support_redelivers_failed_deliveries_from_the_pages,
    no_page_scrolls_sideways_on_a_phone,
    delivery_health_reads_on_a_phone_and_to_a_screen_reader,
);

/// axe-core, run in each page a walk checks (`tests/vendor/axe-core` says
/// which version, and why it is kept there).
const AXE: &str = include_str!("../vendor/axe-core/axe.min.js");

/// What axe-core checks: WCAG 2.1 at levels A and AA, and its own best
/// practices.
const AXE_RULES: &str = "['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']";

/// How long a page may take to show what a step waits for.
const WAIT: Duration = Duration::from_secs(15);

/// The phone the narrow checks are made on: 390 CSS pixels wide.
const PHONE_WIDTH: u32 = 390;

/// A chromedriver process of this test, killed when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where an executable is on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

impl Driver {
    /// Starts chromedriver on a free port; `None` (after printing
    /// `SKIPPED`) when it is not installed and this is not CI.
    fn start() -> Option<Driver> {
        let Some(binary) = on_path("chromedriver") else {
            assert!(
                std::env::var_os("CI").is_none(),
                "chromedriver is not installed: CI must install chromium and chromium-driver (.ci/run does)"
            );
            eprintln!("SKIPPED (no chromedriver)");
            return None;
        };
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(binary)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let driver = Driver { child, port };
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(driver)
    }

    /// A new headless Chromium session, as wide as a desktop window.
    async fn browser(&self) -> Client {
        self.session(None).await
    }

    /// A new headless Chromium session that is a phone: a viewport
    /// [`PHONE_WIDTH`] CSS pixels wide (Chromium's device emulation).
    async fn phone(&self) -> Client {
        self.session(Some(json!({
            "deviceMetrics": { "width": PHONE_WIDTH, "height": 844, "pixelRatio": 3.0 }
        })))
        .await
    }

    async fn session(&self, mobile_emulation: Option<serde_json::Value>) -> Client {
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
            "--no-default-browser-check",
            "--password-store=basic",
            "--window-size=1280,900",
        ];
        let mut options = json!({ "args": args });
        if let Some(emulation) = mobile_emulation {
            options["mobileEmulation"] = emulation;
        }
        if Path::new("/usr/bin/chromium").is_file() {
            options["binary"] = json!("/usr/bin/chromium");
        }
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert("goog:chromeOptions".into(), options);
        ClientBuilder::rustls()
            .expect("a WebDriver connector")
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("chromedriver opens a Chromium session")
    }
}

/// A browser on a server's dashboard, with the checks every page gets.
struct Walk<'a> {
    client: Client,
    server: &'a TestApp,
    screenshots: bool,
}

impl Walk<'_> {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.root)
    }

    async fn goto(&self, path: &str) {
        self.client.goto(&self.url(path)).await.expect("navigate");
    }

    async fn path(&self) -> String {
        let url = self.client.current_url().await.expect("a URL");
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        }
    }

    async fn source(&self) -> String {
        self.client.source().await.expect("the page source")
    }

    /// Waits until the page shows `text`, and returns the source.
    async fn wait_for_text(&self, text: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let source = self.source().await;
            if source.contains(text) {
                return source;
            }
            assert!(
                Instant::now() < deadline,
                "the page at {} never showed {text:?}:\n{source}",
                self.path().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn fill(&self, id: &str, text: &str) {
        let field = self.client.find(Locator::Id(id)).await.expect(id);
        field.clear().await.expect("clear");
        field.send_keys(text).await.expect("type");
    }

    async fn click(&self, css: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
            .click()
            .await
            .expect("click");
    }

    async fn value(&self, id: &str) -> String {
        self.client
            .find(Locator::Id(id))
            .await
            .expect(id)
            .prop("value")
            .await
            .expect("a value")
            .unwrap_or_default()
    }

    /// Every visible form control is labelled, and the page is saved as
    /// `target/screenshots/<name>.png`.
    async fn check_page(&self, name: &str) {
        let unlabelled = self
            .client
            .execute(
                "return Array.from(document.querySelectorAll(\
                   'input:not([type=hidden]), select, textarea'))\
                 .filter(e => !e.closest('label') && !(e.id && \
                   document.querySelector('label[for=\"' + CSS.escape(e.id) + '\"]')))\
                 .map(e => e.outerHTML);",
                vec![],
            )
            .await
            .expect("run the label check");
        assert_eq!(
            unlabelled,
            json!([]),
            "{name}: form controls without a label"
        );
        self.axe_clean(name).await;
        self.screenshot(name).await;
    }

    /// axe-core finds nothing wrong with the page ([`AXE_RULES`]); each
    /// violation is named with the elements it was found on.
    async fn axe_clean(&self, name: &str) {
        let violations = self.axe_violations(name).await;
        assert_eq!(violations, json!([]), "{name}: axe-core finds violations");
    }

    /// What axe-core finds wrong with the page: one line per rule broken,
    /// `id (impact): help at element, …`.
    async fn axe_violations(&self, name: &str) -> serde_json::Value {
        // Loaded into each page anew: a navigation forgets it. Run through
        // WebDriver, which the page's CSP does not govern.
        let loaded = self
            .client
            .execute(&format!("{AXE}\nreturn typeof window.axe;"), vec![])
            .await
            .expect("load axe-core");
        assert_eq!(loaded, json!("object"), "{name}: axe-core did not load");
        let script = format!(
            "const done = arguments[arguments.length - 1];\
             axe.run(document, {{ runOnly: {{ type: 'tag', values: {AXE_RULES} }} }})\
               .then(r => done(r.violations.map(v => v.id + ' (' + v.impact + '): ' + v.help\
                 + ' at ' + v.nodes.map(n => n.target.join(' ')).join(', '))))\
               .catch(e => done(['axe-core failed: ' + e]));"
        );
        self.client
            .execute_async(&script, vec![])
            .await
            .expect("run axe-core")
    }

    /// Saves the page as `target/screenshots/<name>.png` (when this walk
    /// takes them).
    async fn screenshot(&self, name: &str) {
        if self.screenshots {
            let png = self.client.screenshot().await.expect("a screenshot");
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/screenshots");
            std::fs::create_dir_all(&dir).expect("the screenshot folder");
            std::fs::write(dir.join(format!("{name}.png")), png).expect("write the screenshot");
        }
    }

    /// Opens `/keys` signed out, signs in (a wrong password first), and
    /// comes back to `/keys`.
    async fn sign_in(&self, f: &Fixture) {
        self.goto("/keys").await;
        assert_eq!(
            self.path().await,
            "/login?next=%2Fkeys",
            "signed out: sent to sign in"
        );
        self.check_page("sign-in").await;
        self.fill("email", &f.email).await;
        self.fill("password", "not the password").await;
        self.click("form[action='/login'] button[type=submit]")
            .await;
        self.wait_for_text("Wrong e-mail or password.").await;
        self.check_page("sign-in-failed").await;
        self.fill("password", f.password.as_deref().expect("a login"))
            .await;
        self.click("form[action='/login'] button[type=submit]")
            .await;
        self.wait_for_text("<h1>API keys</h1>").await;
        assert_eq!(self.path().await, "/keys", "back to the page asked for");
    }
}

async fn start(server: &TestApp) -> Option<(Driver, Walk<'_>)> {
    let driver = Driver::start()?;
    let client = driver.browser().await;
    Some((
        driver,
        Walk {
            client,
            server,
            screenshots: server.db == Db::Sqlite,
        },
    ))
}

async fn webhook_active(server: &TestApp, f: &Fixture, id: i64) -> bool {
    let webhook = server
        .store
        .webhook(MerchantId::new(f.merchant_id), WebhookId::new(id))
        .await
        .unwrap();
    webhook.expect("the webhook exists").active
}

async fn a_merchant_manages_keys_and_webhooks_and_signs_out(server: &TestApp) {
    let Some((_driver, walk)) = start(server).await else {
        return;
    };
    let f = server.fixture_with_login().await;
    walk.sign_in(&f).await;
    walk.goto("/").await;
    walk.check_page("overview").await;

    // Create a key and see it once.
    walk.goto("/keys").await;
    walk.check_page("api-keys").await;
    walk.fill("key-name", "browser key").await;
    walk.click("form[action='/keys'] button[type=submit]").await;
    walk.wait_for_text("Key created").await;
    let key = walk.value("new-key").await;
    assert!(key.starts_with("sk_test_") && key.len() == 40, "{key}");
    assert!(walk.source().await.contains("will not be shown again"));
    // The copy button is shown by the page's script (allowed by the CSP).
    let copy = walk
        .client
        .find(Locator::Css("button[data-copy='new-key']"))
        .await
        .expect("a copy button");
    assert!(copy.is_displayed().await.unwrap(), "copy.js ran");
    walk.check_page("api-key-created").await;
    assert!(
        !walk.path().await.contains(&key),
        "the key is never in the URL"
    );

    // Back on the list, the key is gone; only its prefix and last 4 show.
    walk.goto("/keys").await;
    let listed = walk.wait_for_text("browser key").await;
    assert!(!listed.contains(&key), "the key is shown only once");
    assert!(listed.contains(&format!("sk_test_…{}", &key[36..])));

    // A restricted key that expires: a select per resource, an expiry.
    walk.fill("key-name", "support desk").await;
    walk.click("#key-access option[value='restricted']").await;
    walk.click("#key-permission-shipments option[value='read']")
        .await;
    walk.click("#key-expires option[value='30']").await;
    walk.click("form[action='/keys'] button[type=submit]").await;
    walk.wait_for_text("Key created").await;
    let restricted = walk.value("new-key").await;
    assert!(restricted.starts_with("rk_test_"), "{restricted}");
    let (status, _) = send(server.req(Method::GET, "/shipments", &restricted)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(
        server
            .req(Method::POST, "/shipments", &restricted)
            .json(&json!({ "courier_company_id": f.courier_id })),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "a read-only key cannot create"
    );
    walk.goto("/keys").await;
    let listed = walk.wait_for_text("support desk").await;
    assert!(listed.contains("shipments: read, couriers: read"));
    assert!(
        listed.contains("full access"),
        "the first key is a full one"
    );

    // Verify it with the form.
    walk.fill("verify-key", &key).await;
    walk.click("form[action='/keys/verify'] button[type=submit]")
        .await;
    walk.wait_for_text("Valid: this is your key “browser key”")
        .await;
    walk.check_page("api-key-verified").await;

    // Delete it (with the confirmation) and the API refuses it.
    let (status, _) = send(server.req(Method::GET, "/merchant-couriers", &key)).await;
    assert_eq!(status, StatusCode::OK);
    walk.client
        .find(Locator::XPath(
            "//tr[td[text()='browser key']]//a[contains(@href, '/delete')]",
        ))
        .await
        .expect("the key's delete link")
        .click()
        .await
        .expect("click");
    walk.wait_for_text("Delete the key").await;
    walk.check_page("api-key-delete").await;
    walk.click("form[action$='/delete'] button[type=submit]")
        .await;
    walk.wait_for_text("The key was deleted").await;
    assert!(!walk.source().await.contains("browser key"));
    let (status, body) = send(server.req(Method::GET, "/merchant-couriers", &key)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");

    // Register a webhook and see its signing key once.
    walk.goto("/webhooks").await;
    walk.check_page("webhooks-empty").await;
    let url = "https://127.0.0.1:9/browser-hook";
    walk.fill("webhook-url", url).await;
    walk.click("form[action='/webhooks'] button[type=submit]")
        .await;
    walk.wait_for_text("Webhook registered").await;
    let signing_key = walk.value("new-signing-key").await;
    assert!(signing_key.starts_with("whsec_"), "{signing_key}");
    walk.check_page("webhook-registered").await;
    walk.goto("/webhooks").await;
    let listed = walk.wait_for_text(url).await;
    assert!(!listed.contains(&signing_key), "shown only once");
    let id = server
        .store
        .webhooks(MerchantId::new(f.merchant_id))
        .await
        .unwrap()[0]
        .id;

    // Disable, enable.
    walk.click(&format!("form[action='/webhooks/{id}/disable'] button"))
        .await;
    walk.wait_for_text("The webhook is disabled").await;
    assert!(!webhook_active(server, &f, id).await);
    walk.check_page("webhooks").await;
    walk.click(&format!("form[action='/webhooks/{id}/enable'] button"))
        .await;
    walk.wait_for_text("The webhook is enabled").await;
    assert!(webhook_active(server, &f, id).await);

    // A change is delivered (and fails: nothing listens there), and the
    // log says so. Made once the webhook is enabled again: a change the
    // dispatcher claimed while it was disabled would have no target, and so
    // no log line (as could happen when the claim came late, on a busy
    // machine).
    server
        .create(&f, json!({"courier_company_id": f.courier_id}))
        .await;

    // Its delivery log.
    walk.click(&format!("a[href='/webhooks/{id}']")).await;
    walk.wait_for_text("Delivery log").await;
    let deadline = Instant::now() + WAIT;
    while !walk.source().await.contains("badge-bad") {
        assert!(Instant::now() < deadline, "the failed delivery was logged");
        tokio::time::sleep(Duration::from_millis(200)).await;
        walk.client.refresh().await.expect("reload");
    }
    walk.check_page("webhook-deliveries").await;

    // The shipment signing key, shown once.
    walk.goto("/webhooks/signing-key").await;
    walk.check_page("signing-key").await;
    walk.click("form[action='/webhooks/signing-key'] button[type=submit]")
        .await;
    walk.wait_for_text("New shipment signing key").await;
    assert!(
        walk.value("new-shipment-signing-key")
            .await
            .starts_with("whsec_")
    );
    walk.check_page("signing-key-created").await;

    // Delete the webhook, with the confirmation.
    walk.goto("/webhooks").await;
    walk.click(&format!("a[href='/webhooks/{id}/delete']"))
        .await;
    walk.wait_for_text("Delete the webhook").await;
    walk.check_page("webhook-delete").await;
    walk.click(&format!("form[action='/webhooks/{id}/delete'] button"))
        .await;
    walk.wait_for_text("The webhook was deleted").await;
    assert!(
        server
            .store
            .webhooks(MerchantId::new(f.merchant_id))
            .await
            .unwrap()
            .is_empty()
    );

    // Sign out; every page sends the browser back to sign in.
    walk.click("form[action='/logout'] button").await;
    walk.wait_for_text("You have signed out.").await;
    walk.check_page("signed-out").await;
    for path in [
        "/",
        "/keys",
        "/webhooks",
        "/shipments",
        &format!("/webhooks/{id}"),
    ] {
        walk.goto(path).await;
        let back: String = url::form_urlencoded::byte_serialize(path.as_bytes()).collect();
        let expected = match path {
            "/" => "/login".to_owned(),
            _ => format!("/login?next={back}"),
        };
        assert_eq!(walk.path().await, expected, "{path} after sign-out");
    }
    walk.client.close().await.expect("close the browser");
}

async fn a_merchant_follows_shipments_through_the_pages(server: &TestApp) {
    let Some((_driver, walk)) = start(server).await else {
        return;
    };
    let f = server.fixture_with_login().await;
    // Enough older ones for a second page.
    for _ in 0..20 {
        server
            .create(&f, json!({"courier_company_id": f.courier_id}))
            .await;
    }
    let mut delivered = String::new();
    for (i, target) in [
        "delivered",
        "in_transit",
        "cancelled",
        "failed",
        "assigned_to_driver",
    ]
    .iter()
    .enumerate()
    {
        let created = server
            .create(
                &f,
                json!({
                    "courier_company_id": f.courier_id,
                    "description": format!("Order #{}", 1001 + i),
                    "weight_kg": 2.5,
                    "items": ["book", "mug"],
                    "start_address": "52.5200,13.4050",
                    "end_address": "52.3759,4.8975",
                }),
            )
            .await;
        let code = created["code"].as_str().unwrap().to_owned();
        server.advance(&f, &code, target).await;
        if *target == "delivered" {
            delivered = code;
        }
    }
    walk.sign_in(&f).await;
    walk.goto("/shipments").await;
    let first = walk.wait_for_text("Page 1 of 2").await;
    assert!(first.contains(&delivered), "newest first");
    walk.check_page("shipments").await;
    walk.click("a[rel=next]").await;
    let second = walk.wait_for_text("Page 2 of 2").await;
    assert!(!second.contains(&delivered));

    // Filter by status.
    walk.client
        .find(Locator::Id("status-filter"))
        .await
        .expect("the status filter")
        .select_by_value("delivered")
        .await
        .expect("choose delivered");
    walk.click("form.filter button[type=submit]").await;
    walk.wait_for_text("Page 1 of 1 · 1 in all").await;
    assert!(walk.path().await.contains("status=delivered"));
    walk.check_page("shipments-delivered").await;

    // A shipment's page and its timeline.
    walk.click(&format!("a[href='/shipments/{delivered}']"))
        .await;
    let page = walk.wait_for_text("Timeline").await;
    let timeline = &page[page.find("Timeline").unwrap()..];
    let steps = [
        "Created and handed",
        "Driver assigned",
        "Picked up",
        "Delivered",
    ];
    let at: Vec<usize> = steps
        .iter()
        .map(|s| {
            timeline
                .find(s)
                .unwrap_or_else(|| panic!("{s}: {timeline}"))
        })
        .collect();
    assert!(at.is_sorted(), "{at:?}");
    walk.check_page("shipment").await;
    walk.client.close().await.expect("close the browser");
}

/// Reloads the page until it shows `text` (what the dispatcher writes
/// arrives after the page was drawn); returns the source.
async fn reload_until(walk: &Walk<'_>, text: &str) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let source = walk.source().await;
        if source.contains(text) {
            return source;
        }
        assert!(
            Instant::now() < deadline,
            "{} never showed {text:?}:\n{source}",
            walk.path().await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        walk.client.refresh().await.expect("reload");
    }
}

async fn support_redelivers_failed_deliveries_from_the_pages(server: &TestApp) {
    let Some((_driver, walk)) = start(server).await else {
        return;
    };
    let f = server.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = server.login(&email, &password).await;
    // Nothing listens there: every attempt fails.
    let (status, hook) = send(
        server
            .bearer(Method::POST, "/webhooks", &token)
            .json(&json!({"url": "https://127.0.0.1:9/down"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    let id = hook["webhook_id"].as_i64().unwrap();
    let code = server.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    walk.sign_in(&f).await;

    // The failed delivery has a Redeliver button; the new attempt says
    // which one it repeats.
    walk.goto(&format!("/webhooks/{id}")).await;
    reload_until(&walk, "badge-bad").await;
    let (log, _) = server
        .store
        .webhook_deliveries(WebhookId::new(id), 10, 0)
        .await
        .unwrap();
    let first = log[0].id;
    walk.click(&format!(
        "form[action='/webhooks/{id}/deliveries/{first}/redeliver'] button"
    ))
    .await;
    walk.wait_for_text(&format!("Delivery #{first} is being sent again"))
        .await;
    assert_eq!(
        walk.path().await,
        format!("/webhooks/{id}?redelivered={first}")
    );
    reload_until(&walk, &format!("redelivery of #{first}")).await;
    walk.check_page("webhook-redelivered").await;

    // "Redeliver failures since…", its field filled with a day back: the
    // one change, once, though it failed twice (once the redelivery is
    // finished: one still waiting is not queued again).
    let deadline = Instant::now() + WAIT;
    while server.store.outbox_backlog().await.unwrap().depth > 0 {
        assert!(Instant::now() < deadline, "the outbox never drained");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    walk.click(&format!(
        "form[action='/webhooks/{id}/redeliver'] button[type=submit]"
    ))
    .await;
    walk.wait_for_text("1 redelivery queued").await;
    walk.check_page("webhook-failures-redelivered").await;

    // The shipment's page lists its deliveries, and sends one again too.
    walk.goto(&format!("/shipments/{code}")).await;
    let page = reload_until(&walk, "redelivery of #").await;
    assert!(page.contains("Deliveries") && page.contains("https://127.0.0.1:9/down"));
    walk.click(&format!(
        "form[action='/webhooks/{id}/deliveries/{first}/redeliver'] button"
    ))
    .await;
    walk.wait_for_text(&format!("Delivery #{first} is being sent again"))
        .await;
    assert_eq!(
        walk.path().await,
        format!("/shipments/{code}?redelivered={first}")
    );
    walk.check_page("shipment-deliveries").await;
    walk.client.close().await.expect("close the browser");
}

/// What a phone shows of a page: the page's width and the viewport's, and
/// each table cell with text in it that is shown (not in a folded
/// `<details>`): its column, its left and right edges, and the width its
/// text has.
async fn phone_layout(walk: &Walk<'_>) -> (f64, f64, Vec<(String, f64, f64, f64)>) {
    let got = walk
        .client
        .execute(
            "const d = document.documentElement;\
             const cells = Array.from(document.querySelectorAll('td'))\
               .filter(td => td.textContent.trim() !== '' && td.getClientRects().length > 0)\
               .map(td => { const r = td.getBoundingClientRect(); const s = getComputedStyle(td);\
                 return [td.dataset.label || '', r.left, r.right,\
                   r.width - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)]; });\
             return [d.scrollWidth, d.clientWidth, cells];",
            vec![],
        )
        .await
        .expect("measure the page");
    let number = |v: &serde_json::Value| v.as_f64().expect("a number");
    let cells = got[2]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| {
            (
                c[0].as_str().unwrap_or("").to_owned(),
                number(&c[1]),
                number(&c[2]),
                number(&c[3]),
            )
        })
        .collect();
    (number(&got[0]), number(&got[1]), cells)
}

/// Nothing of a page measured by [`phone_layout`] lies beyond the screen:
/// it does not scroll sideways, and every cell is inside it with room for
/// more than a few letters a line.
fn fits_a_phone(path: &str, scroll: f64, view: f64, cells: &[(String, f64, f64, f64)]) {
    assert!(scroll <= view, "{path} scrolls sideways: {scroll} > {view}");
    for (column, left, right, text_width) in cells {
        assert!(
            *left >= 0.0 && *right <= view,
            "{path}: the {column:?} cell is off the screen ({left}..{right} of {view})"
        );
        assert!(
            *text_width >= 160.0,
            "{path}: the {column:?} cell leaves its text {text_width} px"
        );
    }
}

/// At 390 px no page scrolls sideways, and the tables stay readable: every
/// cell inside the screen (all six columns of the shipment list), a URL
/// given room for more than a few letters a line.
async fn no_page_scrolls_sideways_on_a_phone(server: &TestApp) {
    let Some(driver) = Driver::start() else {
        return;
    };
    // No screenshots while signing in: those are the desktop's.
    let mut walk = Walk {
        client: driver.phone().await,
        server,
        screenshots: false,
    };
    let f = server.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = server.login(&email, &password).await;
    // Long things, where a narrow screen hurts: a webhook URL (nothing
    // listens there, so every delivery fails and is listed), a key's name,
    // a shipment's description, and enough deliveries for the note under
    // a shipment's table.
    let url =
        "https://127.0.0.1:9/webhooks/shipments/a-rather-long-endpoint-path?shop=example-store";
    let (status, hook) = send(
        server
            .bearer(Method::POST, "/webhooks", &token)
            .json(&json!({ "url": url })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    let id = hook["webhook_id"].as_i64().unwrap();
    let (status, key) = send(
        server
            .bearer(Method::POST, "/api-keys", &token)
            .json(&json!({ "name": "checkout server in the eu-central region" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    let key_id = key["id"].as_i64().unwrap();
    // A restricted, expiring key: the list's longest cells.
    let (status, restricted) = send(
        server.bearer(Method::POST, "/api-keys", &token).json(&json!({
            "name": "listener of the warehouse in the eu-central region",
            "permissions": {"shipments": "write", "couriers": "read", "listen": "write", "testing": "write"},
            "expires_at": (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339(),
        })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{restricted}");
    let code = server
        .create(
            &f,
            json!({
                "courier_company_id": f.courier_id,
                "description": "A description without spaces: Donaudampfschifffahrtsgesellschaftskapitänsmütze",
                "dimensions": "30x20x10 cm",
                "items": ["Mug, blue", "Book"],
            }),
        )
        .await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    server.advance(&f, &code, "failed").await;

    // Signed out first: the sign-in page.
    walk.goto("/login").await;
    let (scroll, view, _) = phone_layout(&walk).await;
    assert!(scroll <= view, "/login scrolls sideways: {scroll} > {view}");
    assert_eq!(view, f64::from(PHONE_WIDTH), "a phone's viewport");
    walk.sign_in(&f).await;
    walk.goto(&format!("/webhooks/{id}")).await;
    reload_until(&walk, "badge-bad").await;
    walk.goto(&format!("/shipments/{code}")).await;
    reload_until(&walk, "badge-bad").await;
    walk.screenshots = server.db == Db::Sqlite;

    let pages = [
        ("/", "overview"),
        ("/shipments", "shipments"),
        (&*format!("/shipments/{code}"), "shipment"),
        ("/keys", "api-keys"),
        (&*format!("/keys/{key_id}/delete"), "api-key-delete"),
        ("/webhooks", "webhooks"),
        (&*format!("/webhooks/{id}"), "webhook-deliveries"),
        (&*format!("/webhooks/{id}/delete"), "webhook-delete"),
        ("/webhooks/signing-key", "signing-key"),
        ("/logout", "sign-out"),
        ("/no-such-page", "not-found"),
    ];
    for (path, name) in pages {
        walk.goto(path).await;
        let (scroll, view, cells) = phone_layout(&walk).await;
        walk.screenshot(&format!("phone-{name}")).await;
        fits_a_phone(path, scroll, view, &cells);
        if path == "/shipments" {
            for column in [
                "Code",
                "Status",
                "Courier company",
                "Fee",
                "Created",
                "Last change",
            ] {
                assert!(
                    cells.iter().any(|(c, ..)| c == column),
                    "/shipments shows no {column:?} on a phone: {cells:?}"
                );
            }
        }
    }
    walk.client.close().await.expect("close the browser");
}

/// The left and right edges of each chart's drawing on the page.
async fn chart_edges(walk: &Walk<'_>) -> Vec<(f64, f64)> {
    let got = walk
        .client
        .execute(
            "return Array.from(document.querySelectorAll('svg.chart-drawing'))\
               .map(s => { const r = s.getBoundingClientRect(); return [r.left, r.right]; });",
            vec![],
        )
        .await
        .expect("measure the charts");
    got.as_array()
        .expect("charts")
        .iter()
        .map(|e| (e[0].as_f64().unwrap(), e[1].as_f64().unwrap()))
        .collect()
}

/// A webhook's delivery health (its charts, their tables opened) and the
/// overview's webhooks failing now, in a desktop's window and on a phone:
/// the charts and tables fit the phone's screen, and axe-core finds nothing
/// wrong with either page in either.
async fn delivery_health_reads_on_a_phone_and_to_a_screen_reader(server: &TestApp) {
    let Some(driver) = Driver::start() else {
        return;
    };
    let f = server.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = server.login(&email, &password).await;
    let up = WebhookReceiver::start(StatusCode::OK, Duration::ZERO).await;
    let down = WebhookReceiver::start(StatusCode::INTERNAL_SERVER_ERROR, Duration::ZERO).await;
    let mut ids = Vec::new();
    for url in [&up.url, &down.url] {
        let (status, hook) = send(
            server
                .bearer(Method::POST, "/webhooks", &token)
                .json(&json!({ "url": url })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{hook}");
        ids.push(hook["webhook_id"].as_i64().unwrap());
    }
    for _ in 0..3 {
        let code = server.create_default(&f).await["code"]
            .as_str()
            .unwrap()
            .to_owned();
        server.advance(&f, &code, "in_transit").await;
    }
    let deadline = Instant::now() + WAIT;
    while server.store.outbox_backlog().await.unwrap().depth > 0 {
        assert!(Instant::now() < deadline, "the outbox never drained");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(up.received().len(), 9, "three changes of three shipments");

    for (client, prefix) in [
        (driver.browser().await, ""),
        (driver.phone().await, "phone-"),
    ] {
        // No screenshots while signing in: the other tests take those.
        let mut walk = Walk {
            client,
            server,
            screenshots: false,
        };
        walk.sign_in(&f).await;
        walk.screenshots = server.db == Db::Sqlite;
        for (id, name) in [(ids[0], "webhook-health"), (ids[1], "webhook-failing")] {
            let path = format!("/webhooks/{id}");
            walk.goto(&path).await;
            let page = walk.wait_for_text("Delivery health").await;
            assert_eq!(page.contains("Failing now."), id == ids[1], "{path}");
            assert!(
                page.contains("9 deliveries in the last 24 hours: "),
                "{path}"
            );
            for chart in ["chart-hours", "chart-days"] {
                walk.click(&format!("#{chart} summary")).await;
            }
            let (scroll, view, cells) = phone_layout(&walk).await;
            if !prefix.is_empty() {
                fits_a_phone(&path, scroll, view, &cells);
                // 24 rows of the hourly table and 7 of the daily, opened.
                let delivered = cells.iter().filter(|(c, ..)| c == "Delivered").count();
                assert!(
                    delivered >= 31,
                    "{path}: the tables are not shown: {cells:?}"
                );
            }
            let charts = chart_edges(&walk).await;
            assert_eq!(charts.len(), 2, "{path}");
            for (left, right) in charts {
                assert!(
                    left >= 0.0 && right <= view && right - left > 200.0,
                    "{path}: a chart at {left}..{right} of {view}"
                );
            }
            walk.check_page(&format!("{prefix}{name}")).await;
        }
        walk.goto("/").await;
        let overview = walk.wait_for_text("Webhooks failing now").await;
        assert!(overview.contains(&down.url) && !overview.contains(&up.url));
        assert!(overview.contains("Shipments by status"));
        let (scroll, view, cells) = phone_layout(&walk).await;
        if !prefix.is_empty() {
            fits_a_phone("/", scroll, view, &cells);
        }
        walk.check_page(&format!("{prefix}overview-health")).await;
        // The check can fail: a button without a name is found.
        walk.client
            .execute(
                "document.querySelector('main').append(document.createElement('button'));",
                vec![],
            )
            .await
            .expect("add a button");
        let found = walk.axe_violations("a nameless button").await;
        assert!(
            found.as_array().is_some_and(|v| v
                .iter()
                .any(|v| v.as_str().is_some_and(|v| v.starts_with("button-name")))),
            "axe-core missed a button without a name: {found}"
        );
        walk.client.close().await.expect("close the browser");
    }
}
