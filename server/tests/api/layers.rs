//! The layers of the server: the front ends see only `app` (no file under
//! `src/http` or `src/dashboard` names the store or sqlx: a use-case the
//! front ends need goes in `app/`, and `app::Error` says what a store error
//! means to them), and no top-level module names one above it or beside it.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder reads") {
            let path = entry.expect("a folder entry reads").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn the_front_ends_do_not_name_the_store_or_sqlx() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offences = Vec::new();
    for front_end in ["http", "dashboard"] {
        let files = sources(&src.join(front_end));
        assert!(!files.is_empty(), "no sources under src/{front_end}");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a source file reads");
            for (n, line) in text.lines().enumerate() {
                if line.contains("crate::store") || line.contains("sqlx") {
                    offences.push(format!(
                        "{}:{}: {}",
                        file.strip_prefix(&src).unwrap_or(&file).display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the front ends name the store or sqlx (call `app` instead):\n{}",
        offences.join("\n")
    );
}

/// The server's top-level modules, bottom first; a module may name only
/// modules of lower levels (`crate::name`), never one of its own level or
/// above. The crate's root (`lib.rs`, above all) and `main.rs` are not
/// listed. Circles between the files of one module are not checked here.
const LEVELS: &[&[&str]] = &[
    &["domain"],
    &["store"],
    &["metrics", "serve"],
    &["webhooks"],
    &["app"],
    &["start_error"],
    &["config"],
    &["admin"],
    &["simulate", "http", "dashboard"],
];

/// The top-level modules `text` names as `crate::name`, outside comments.
fn named_modules(text: &str) -> Vec<(usize, String)> {
    let mut named = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            named.push((n + 1, name));
        }
    }
    named
}

#[test]
fn no_module_names_one_of_its_level_or_above() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let level_of = |name: &str| LEVELS.iter().position(|level| level.contains(&name));
    let mut offences = Vec::new();
    for (level, modules) in LEVELS.iter().enumerate() {
        for module in *modules {
            let folder = src.join(module);
            let file = src.join(format!("{module}.rs"));
            let files = if folder.is_dir() {
                sources(&folder)
            } else {
                vec![file]
            };
            assert!(!files.is_empty(), "no sources for `{module}`");
            for file in files {
                let text = std::fs::read_to_string(&file).expect("a source file reads");
                for (line, name) in named_modules(&text) {
                    if name == *module {
                        continue;
                    }
                    match level_of(&name) {
                        Some(named) if named < level => {}
                        _ => offences.push(format!(
                            "{}:{line}: `{module}` names `crate::{name}`",
                            file.strip_prefix(&src).unwrap_or(&file).display()
                        )),
                    }
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "arrows that run up or sideways (see LEVELS):\n{}",
        offences.join("\n")
    );
}

/// Whether `line` declares an id as a bare integer (`merchant_id: i64`,
/// `webhook_id: Option<i64>`), outside comments.
fn bare_id(line: &str) -> bool {
    let code = line.split("//").next().unwrap_or("");
    code.contains("_id: i64") || code.contains("_id: Option<i64>")
}

/// Ids are types past the edge (`MerchantId`, `WebhookId`, …, and the
/// server's own in `domain::ids`), so a webhook id passed where a merchant
/// id belongs does not compile. Only the store's row structs (what sqlx
/// reads and writes) and its private helpers hold the raw `i64`: outside
/// `src/store` no field or parameter does, and no store function callable
/// from outside the store takes one.
#[test]
fn ids_are_typed_above_the_store_rows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let store = src.join("store");
    // Store functions that may take a raw id: `enqueue` is given a row's
    // ids by the store's own writers, and a key's id in `touch_key` is of
    // either kind (`KeyOwner::key_id`, as the row holds it).
    let allowed = ["fn enqueue(", "fn touch_key("];
    let mut offences = Vec::new();
    for file in sources(&src) {
        let text = std::fs::read_to_string(&file).expect("a source file reads");
        let shown = file
            .strip_prefix(&src)
            .unwrap_or(&file)
            .display()
            .to_string();
        if !file.starts_with(&store) {
            for (n, line) in text.lines().enumerate() {
                if bare_id(line) {
                    offences.push(format!("{shown}:{}: {}", n + 1, line.trim()));
                }
            }
            continue;
        }
        if file.starts_with(store.join("tests")) {
            continue;
        }
        // In the store: the signatures of functions visible outside it.
        let mut signature: Option<&str> = None;
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("").trim();
            if signature.is_none()
                && (code.starts_with("pub fn")
                    || code.starts_with("pub async fn")
                    || code.starts_with("pub(crate) fn")
                    || code.starts_with("pub(crate) async fn"))
            {
                signature = Some(code);
            }
            let Some(start) = signature else { continue };
            if bare_id(line) && !allowed.iter().any(|a| start.contains(a)) {
                offences.push(format!("{shown}:{}: {}", n + 1, line.trim()));
            }
            if code.ends_with('{') || code.ends_with(';') {
                signature = None;
            }
        }
    }
    assert!(
        offences.is_empty(),
        "ids as bare integers above the store's rows (use the id types):\n{}",
        offences.join("\n")
    );
}
