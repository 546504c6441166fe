//! Finding and reading the shared test vectors.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

/// Where the vectors live, relative to the folder that holds `shared/`.
const RELATIVE: &str = "shared/test-vectors/webhook-signatures.json";

/// The file of shared test vectors: `SHIPMENT_TEST_VECTORS` if set (the file,
/// or the folder holding it), else the first `shared/test-vectors/...` found
/// in this crate's folder or any folder above it. Checking every ancestor
/// covers both layouts: `shared/` inside the checkout, and CI's clone at `X/`
/// with `shared/` beside it (`X/../shared`, found at `X`'s parent). Panics,
/// naming every place it looked, when there is none: a missing file must fail
/// the run, never skip it.
pub fn vectors_path() -> PathBuf {
    if let Some(set) = std::env::var_os("SHIPMENT_TEST_VECTORS") {
        let set = PathBuf::from(set);
        let file = if set.is_dir() {
            set.join("webhook-signatures.json")
        } else {
            set
        };
        assert!(
            file.is_file(),
            "SHIPMENT_TEST_VECTORS is set, but {} is not a file",
            file.display()
        );
        return file;
    }
    let mut tried = Vec::new();
    for dir in Path::new(env!("CARGO_MANIFEST_DIR")).ancestors() {
        let candidate = dir.join(RELATIVE);
        if candidate.is_file() {
            return candidate;
        }
        tried.push(candidate);
    }
    panic!(
        "webhook signature test vectors not found; set SHIPMENT_TEST_VECTORS or put shared/ \
         beside the checkout. Tried:\n{}",
        tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The vectors file.
#[derive(Deserialize)]
pub struct Vectors {
    pub cases: Vec<Case>,
}

/// One test vector.
#[derive(Deserialize)]
pub struct Case {
    pub name: String,
    pub signing_key: String,
    pub body_base64: String,
    pub header: String,
    pub valid: bool,
    pub why: String,
}

impl Case {
    pub fn body(&self) -> Vec<u8> {
        STANDARD
            .decode(&self.body_base64)
            .unwrap_or_else(|e| panic!("case {}: body_base64: {e}", self.name))
    }
}

/// Every case in the shared vectors file.
pub fn cases() -> Vec<Case> {
    let path = vectors_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let vectors: Vectors =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    assert!(!vectors.cases.is_empty(), "{} has no cases", path.display());
    vectors.cases
}

/// The key most tests sign with (the vectors' main key).
pub const KEY: &str = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";

/// A delivery-shaped body.
pub const BODY: &[u8] = br#"{"code":"SHP-7K3M-Q9ZX","version":3,"status":"in_transit"}"#;
