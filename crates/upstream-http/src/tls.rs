//! TLS towards upstreams: which certificates are trusted, the one rustls client configuration
//! every upstream connection uses, and what a failed handshake is called.
//!
//! # Crates, and why
//! - `rustls` 0.23 through awc's `rustls-0_23` feature (and `tokio-rustls` for the
//!   close-delimited reader, `raw.rs`): TLS in Rust, no OpenSSL to link or patch.
//! - Crypto provider `ring`, chosen explicitly (`client_config` never relies on a process
//!   default): `aws-lc-rs`, rustls' default, builds C code with cmake, a heavier toolchain for
//!   every developer and image for no gain here.
//! - Roots: the platform's, through `rustls-native-certs` (on Linux the system bundle, e.g.
//!   Debian's `/etc/ssl/certs/ca-certificates.crt`, or `SSL_CERT_FILE`/`SSL_CERT_DIR`), so a
//!   corporate CA installed on the host or baked into the image is trusted like by every
//!   other client there. It depends on `openssl-probe`, a few pure-Rust lines that know
//!   where distributions keep the bundle (it does not link OpenSSL). `webpki-roots` (a
//!   Mozilla bundle compiled in) was not taken, not even as a fallback: it ages with the
//!   binary and silently trusts what the operator's platform may not. With no platform roots
//!   the proxy says so at start (WARN) and trusts `UPSTREAM_CA_FILE` only; the image installs
//!   `ca-certificates`.
//! - `UPSTREAM_CA_FILE`: a PEM file of one or more CA certificates, added to the platform's
//!   roots (not replacing them), for upstreams whose certificates a private CA signed. It is
//!   read and checked once at start ([`CaFile::load`]); a missing, unreadable or certificate-
//!   less file is a configuration error (exit 64).
//!
//! ALPN offers `http/1.1` only: the transport speaks HTTP/1.1 (close-delimited detection, the
//! direct reader), and h2 would bring nothing to one request stream per upstream call.
//!
//! # Errors
//! [`classify`] turns a rustls error into an [`WireError`] that says which side failed
//! and what to do: an unknown issuer is [`WireError::CertificateNotTrusted`] (set
//! `UPSTREAM_CA_FILE`), a certificate for another name is
//! [`WireError::CertificateNameMismatch`], anything else [`WireError::Tls`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::{CertificateError, ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;

use crate::connector::NetworkError;
use crate::error::WireError;

/// The CA certificates of `UPSTREAM_CA_FILE`, read and checked at start.
#[derive(Clone, PartialEq, Eq)]
pub struct CaFile {
    pub path: PathBuf,
    certs: Vec<CertificateDer<'static>>,
}

impl std::fmt::Debug for CaFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaFile")
            .field("path", &self.path)
            .field("certificates", &self.certs.len())
            .finish()
    }
}

impl CaFile {
    /// Reads the PEM file at `path`: every `CERTIFICATE` block must be a certificate rustls
    /// accepts as a trust anchor, and there must be at least one.
    pub fn load(path: &Path) -> Result<CaFile, CaFileError> {
        let pem = std::fs::read(path).map_err(|source| CaFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut certs = Vec::new();
        for (i, cert) in CertificateDer::pem_slice_iter(&pem).enumerate() {
            let cert = cert.map_err(|source| CaFileError::NotPem {
                path: path.to_path_buf(),
                number: i + 1,
                source,
            })?;
            RootCertStore::empty()
                .add(cert.clone())
                .map_err(|source| CaFileError::NotCa {
                    path: path.to_path_buf(),
                    number: i + 1,
                    source,
                })?;
            certs.push(cert);
        }
        if certs.is_empty() {
            return Err(CaFileError::NoCertificate {
                path: path.to_path_buf(),
            });
        }
        Ok(CaFile {
            path: path.to_path_buf(),
            certs,
        })
    }

    /// How many certificates the file holds.
    pub fn len(&self) -> usize {
        self.certs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.certs.is_empty()
    }
}

/// Why `UPSTREAM_CA_FILE` was refused (a configuration error: the proxy does not start).
#[derive(Debug)]
pub enum CaFileError {
    /// The file could not be read.
    Io { path: PathBuf, source: std::io::Error },
    /// Certificate `number` (from 1) is not valid PEM.
    NotPem {
        path: PathBuf,
        number: usize,
        source: rustls_pki_types::pem::Error,
    },
    /// Certificate `number` (from 1) is not one rustls accepts as a trust anchor.
    NotCa {
        path: PathBuf,
        number: usize,
        source: rustls::Error,
    },
    /// The file holds no `CERTIFICATE` block.
    NoCertificate { path: PathBuf },
}

impl std::fmt::Display for CaFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::NotPem { path, number, source } => {
                write!(f, "{}: certificate {number} is not valid PEM: {source}", path.display())
            }
            Self::NotCa { path, number, source } => write!(
                f,
                "{}: certificate {number} is not a usable CA certificate: {source}",
                path.display()
            ),
            Self::NoCertificate { path } => write!(
                f,
                "{} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for CaFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::NotPem { source, .. } => Some(source),
            Self::NotCa { source, .. } => Some(source),
            Self::NoCertificate { .. } => None,
        }
    }
}

/// The trust of all upstream connections, with what went into it (for the startup log).
#[derive(Clone)]
pub struct Trust {
    pub config: Arc<ClientConfig>,
    /// Roots found on the platform.
    pub platform_roots: usize,
    /// Roots from `UPSTREAM_CA_FILE`.
    pub ca_file_roots: usize,
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("platform_roots", &self.platform_roots)
            .field("ca_file_roots", &self.ca_file_roots)
            .finish_non_exhaustive()
    }
}

/// The platform's roots plus `ca_file`'s, in a rustls client configuration (ring, HTTP/1.1).
pub(crate) fn client_config(ca_file: Option<&CaFile>) -> Result<Trust, NetworkError> {
    let mut roots = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for e in &native.errors {
        log::debug!(error = e.to_string().as_str(); "a platform root certificate source could not be read");
    }
    let (platform_roots, _ignored) = roots.add_parsable_certificates(native.certs);
    let mut ca_file_roots = 0;
    if let Some(f) = ca_file {
        for cert in &f.certs {
            roots.add(cert.clone()).map_err(|source| NetworkError::CaFile {
                path: f.path.clone(),
                source,
            })?;
            ca_file_roots += 1;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(NetworkError::Tls)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Trust {
        config: Arc::new(config),
        platform_roots,
        ca_file_roots,
    })
}

/// What a failed handshake with the upstream `host` means.
pub fn classify(err: &rustls::Error, host: &str) -> WireError {
    let host = host.to_string();
    let detail = err.to_string();
    match err {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                WireError::CertificateNotTrusted { host, detail }
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                WireError::CertificateNameMismatch { host, detail }
            }
            _ => WireError::Tls { host, detail },
        },
        _ => WireError::Tls { host, detail },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_files_must_hold_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        assert!(CaFile::load(&missing).unwrap_err().to_string().contains("cannot read"));
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = CaFile::load(&empty).unwrap_err();
        assert!(matches!(e, CaFileError::NoCertificate { .. }));
        assert!(e.to_string().contains("holds no PEM certificate"));
        let broken = dir.path().join("broken.pem");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\nMIIBnotbase64!!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        assert!(CaFile::load(&broken).is_err());
    }

    #[test]
    fn handshake_errors_say_what_failed() {
        let e = classify(
            &rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
            "mcp.corp",
        );
        assert!(matches!(e, WireError::CertificateNotTrusted { .. }));
        assert!(e.to_string().contains("not trusted"), "{e}");
        assert!(
            !e.to_string().contains("UPSTREAM_CA_FILE"),
            "the setting is named at the edge: {e}"
        );
        assert!(!e.retryable());
        let e = classify(
            &rustls::Error::InvalidCertificate(CertificateError::NotValidForName),
            "mcp.corp",
        );
        assert!(matches!(e, WireError::CertificateNameMismatch { .. }));
        assert!(e.to_string().contains("mcp.corp"), "{e}");
        let e = classify(&rustls::Error::InvalidCertificate(CertificateError::Expired), "h");
        assert!(matches!(e, WireError::Tls { .. }));
        assert!(client_config(None).is_ok());
    }
}
