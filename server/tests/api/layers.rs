//! The front ends see only `app`: no file under `src/http` or
//! `src/dashboard` names the store or sqlx (DESIGN: the layers). A use-case
//! the front ends need goes in `app/`, and `app::Error` says what a store
//! error means to them.

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
