//! A local certificate authority made at test time, which every
//! [`TestApp`](crate::TestApp) trusts for webhook targets (through
//! `--webhook-ca-file`), so tests can deliver to real HTTPS receivers.

use std::path::PathBuf;
use std::sync::OnceLock;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};

/// The test CA: its certificate as a PEM file, and what signs leaf
/// certificates for receivers.
pub struct LocalCa {
    /// The CA certificate (PEM), for `Config::webhooks.webhook_ca_file`.
    pub pem_file: PathBuf,
    issuer: Issuer<'static, KeyPair>,
    _dir: tempfile::TempDir,
}

/// The CA of this test process (made on first use).
///
/// Making it also installs the server's rustls provider
/// ([`install_tls_provider`](shipment_server::harness::install_tls_provider)),
/// before any receiver's TLS: where the server is built with ring next to
/// the SDK's aws-lc-rs (this workspace's own tests), rustls cannot pick
/// one by itself.
pub fn ca() -> &'static LocalCa {
    static CA: OnceLock<LocalCa> = OnceLock::new();
    CA.get_or_init(|| {
        shipment_server::harness::install_tls_provider();
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "shipment tests local CA");
        let cert = params.self_signed(&key).expect("a self-signed CA");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let pem_file = dir.path().join("ca.pem");
        std::fs::write(&pem_file, cert.pem()).expect("write the CA file");
        LocalCa {
            pem_file,
            issuer: Issuer::new(params, key),
            _dir: dir,
        }
    })
}

impl LocalCa {
    /// A new certificate and its key (both PEM) for `localhost`,
    /// 127.0.0.1 and `host.docker.internal` (what a container started with
    /// `--add-host host.docker.internal:host-gateway` calls this machine),
    /// signed by this CA: what an HTTPS receiver serves.
    pub fn leaf(&self) -> (String, String) {
        let key = KeyPair::generate().expect("a leaf key");
        let names = vec!["localhost".to_owned(), "host.docker.internal".to_owned()];
        let mut params = CertificateParams::new(names).expect("leaf params");
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("a leaf certificate");
        (cert.pem(), key.serialize_pem())
    }
}
