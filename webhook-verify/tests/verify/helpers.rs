//! Finding and reading the shared test vectors.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

/// The vectors file: the repository's copy of
/// `shared/test-vectors/webhook-signatures.json` (`.ci/run` checks that it
/// equals the shared original), through `tests/webhook-signatures.json`, a
/// link that `cargo package` replaces with the file so the published
/// crate's tests have it too; or the file (or folder holding it) that
/// `SHIPMENT_TEST_VECTORS` names. A missing file fails the run, never skips it.
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
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/webhook-signatures.json")
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

/// The Standard Webhooks vectors: `test-vectors/standard-webhooks.json`,
/// through the link `tests/standard-webhooks.json` (a file in the
/// published package, as for the other vectors). This repository's own
/// cases; the specification's published example is the first.
pub fn standard_vectors_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/standard-webhooks.json")
}

/// The Standard Webhooks vectors file.
#[derive(Deserialize)]
pub struct StandardVectors {
    pub cases: Vec<StandardCase>,
}

/// One Standard Webhooks vector.
#[derive(Deserialize)]
pub struct StandardCase {
    pub name: String,
    pub keys: Vec<String>,
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body_base64: String,
    pub now: i64,
    pub tolerance_secs: Option<u64>,
    pub expected: String,
    pub why: String,
}

impl StandardCase {
    pub fn body(&self) -> Vec<u8> {
        STANDARD
            .decode(&self.body_base64)
            .unwrap_or_else(|e| panic!("case {}: body_base64: {e}", self.name))
    }
}

/// Every case of the Standard Webhooks vectors file.
pub fn standard_cases() -> Vec<StandardCase> {
    let path = standard_vectors_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let vectors: StandardVectors =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    vectors.cases
}
