//! Run with: cargo run -p examples --example dev_certificate [-- DIR]
//!
//! Makes a certificate for `localhost` (and 127.0.0.1) signed by a local CA
//! made on the spot, for trying a webhook receiver on your own machine: the
//! service only delivers to HTTPS URLs. Writes, in DIR (default `dev-tls`):
//!
//! - `ca.pem`: the CA, for the server (`--webhook-ca-file DIR/ca.pem`);
//! - `localhost.pem` and `localhost-key.pem`: for the receiver
//!   (`TLS_CERT` and `TLS_KEY` of the `webhook_receiver` example).
//!
//! Nothing here is for production: use a certificate from a real CA there.

use std::path::PathBuf;

use anyhow::Context as _;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};

fn main() -> anyhow::Result<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "dev-tls".to_owned()),
    );
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;

    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name
        .push(DnType::CommonName, "shipment webhooks local development CA");
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);

    let key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(vec!["localhost".to_owned()])?;
    leaf.subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    let cert = leaf.signed_by(&key, &issuer)?;

    for (name, pem) in [
        ("ca.pem", ca_cert.pem()),
        ("localhost.pem", cert.pem()),
        ("localhost-key.pem", key.serialize_pem()),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, pem).with_context(|| format!("cannot write {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
