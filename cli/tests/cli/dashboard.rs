//! `shipctl`'s commands for a signed-in merchant (`login`, `keys`,
//! `webhooks`, `whoami`, `logout`) against the real reference server, on
//! SQLite and (with `TEST_DATABASE_URL`) PostgreSQL.

use std::time::Duration;

use serde_json::Value;

use shipment_testkit::{TestApp, db_tests};

use crate::helpers::Shipctl;
use crate::snapshot;

db_tests!(
    login_keys_and_logout,
    webhooks_are_registered_paused_and_deleted,
);

async fn login_keys_and_logout(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let shipctl = Shipctl::new().env("SHIPCTL_BASE_URL", &server.base);
    let password = f.password.clone().unwrap();

    let run = shipctl
        .run_with_stdin_async(
            &["login", "--email", &f.email, "--password-stdin"],
            b"wrong\n",
        )
        .await
        .expect_code(3);
    assert!(
        run.stderr.contains("hint: check the e-mail and password"),
        "{run}"
    );
    let run = shipctl
        .run_with_stdin_async(
            &["login", "--email", &f.email, "--password-stdin"],
            format!("{password}\n").as_bytes(),
        )
        .await
        .ok();
    assert!(
        run.stderr.starts_with("signed in to http://127.0.0.1:"),
        "{run}"
    );
    let session = shipctl.config_dir().join("sessions/default.toml");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&session).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }

    let run = shipctl.run_async(&["keys", "list"]).await.ok();
    snapshot!("keys_list", run);

    // A new key, saved in the profile, works on the API at once.
    let run = shipctl
        .run_async(&["keys", "create", "--name", "deploy", "--save"])
        .await
        .ok();
    snapshot!("keys_create_saved", run);
    let run = shipctl
        .run_async(&["couriers", "list", "-o", "json"])
        .await
        .ok();
    assert_eq!(run.json()[0]["id"], f.courier_id);

    let run = shipctl.run_async(&["whoami"]).await.ok();
    snapshot!("whoami", run);
    assert!(!run.stdout.contains(&f.key), "{run}");

    let created = shipctl
        .run_async(&["keys", "create", "-o", "json"])
        .await
        .ok()
        .json();
    let key = created["key"].as_str().unwrap().to_owned();
    let id = created["id"].to_string();
    let verdict = shipctl
        .run_with_stdin_async(
            &["keys", "verify", "-o", "json"],
            format!("{key}\n").as_bytes(),
        )
        .await
        .ok()
        .json();
    assert_eq!(verdict["valid"], true);
    assert_eq!(verdict["id"].to_string(), id);
    shipctl.run_async(&["keys", "delete", &id]).await.ok();
    let run = shipctl
        .run_async(&["keys", "verify", &key])
        .await
        .expect_code(1);
    snapshot!("keys_verify_deleted", run);
    shipctl
        .run_async(&["keys", "delete", "999999"])
        .await
        .expect_code(4);

    let run = shipctl.run_async(&["logout"]).await.ok();
    assert!(run.stderr.starts_with("signed out "), "{run}");
    assert!(!session.exists());
    let run = shipctl.run_async(&["keys", "list"]).await.expect_code(3);
    assert_eq!(
        run.stderr,
        "error: not signed in\nhint: run `shipctl login`\n"
    );
}

async fn webhooks_are_registered_paused_and_deleted(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let shipctl = Shipctl::new()
        .env("SHIPCTL_BASE_URL", &server.base)
        .env("SHIPCTL_EMAIL", &f.email);
    shipctl
        .run_with_stdin_async(
            &["login", "--password-stdin"],
            f.password.clone().unwrap().as_bytes(),
        )
        .await
        .ok();

    let url = "https://127.0.0.1:9/hooks/shipments";
    let run = shipctl.run_async(&["webhooks", "register", url]).await.ok();
    snapshot!("webhooks_register", run);
    let run = shipctl
        .run_async(&["webhooks", "register", url])
        .await
        .expect_code(5);
    snapshot!("webhooks_register_twice", run);
    // Refused before sending: a usage error.
    shipctl
        .run_async(&["webhooks", "register", "http://127.0.0.1:9/plain"])
        .await
        .expect_code(2);

    let listed = shipctl
        .run_async(&["webhooks", "list", "-o", "json"])
        .await
        .ok()
        .json();
    let id = listed[0]["webhook_id"].to_string();
    let run = shipctl.run_async(&["webhooks", "disable", &id]).await.ok();
    snapshot!("webhooks_disable", run);
    let enabled = shipctl
        .run_async(&["webhooks", "enable", &id, "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(enabled["active"], true);
    let run = shipctl.run_async(&["webhooks", "list"]).await.ok();
    snapshot!("webhooks_list", run);
    // A change is delivered (and fails: nothing listens on port 9) and logged.
    let created = shipctl
        .clone()
        .env("SHIPCTL_API_KEY", &f.key)
        .run_async(&[
            "shipments",
            "create",
            "--courier",
            &f.courier_id.to_string(),
            "--weight",
            "1",
            "-o",
            "json",
        ])
        .await
        .ok()
        .json();
    let mut logged = Value::Null;
    for _ in 0..100 {
        logged = shipctl
            .run_async(&["webhooks", "deliveries", &id, "-o", "json"])
            .await
            .ok()
            .json();
        if logged.as_array().is_some_and(|rows| !rows.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(logged[0]["shipment_code"], created["code"], "{logged}");
    let run = shipctl
        .run_async(&["webhooks", "deliveries", &id])
        .await
        .ok();
    snapshot!("webhooks_deliveries", run);

    let rotated = shipctl
        .run_async(&["webhooks", "rotate-shipment-key", "-o", "json"])
        .await
        .ok()
        .json();
    assert!(
        rotated["signing_key"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    let run = shipctl
        .run_async(&["webhooks", "rotate-shipment-key"])
        .await
        .ok();
    snapshot!("webhooks_rotate_shipment_key", run);

    let run = shipctl.run_async(&["webhooks", "delete", &id]).await.ok();
    assert_eq!(
        run.stderr,
        format!("deleted webhook {id}: deliveries to it stop\n")
    );
    shipctl
        .run_async(&["webhooks", "delete", &id])
        .await
        .expect_code(4);
}
