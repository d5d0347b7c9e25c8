//! Opening a connection to an upstream: directly or through an egress proxy's `CONNECT`
//! tunnel ([`crate::egress`]), then TLS for `https://` ([`crate::tls`]).
//!
//! Two users, one rule set ([`Network`]):
//! - awc: [`EgressConnector`] is its custom TCP connector (`awc::Connector::connector`). It
//!   yields a plain `TcpStream` either way (a tunnel *is* a TCP stream once the proxy said
//!   200), and awc runs its rustls connector over it, with the upstream's host name for SNI
//!   and verification. Errors travel inside `std::io::Error` (awc's `ConnectError::Io`) and
//!   are recovered by [`classify_io`]; the connector never returns actix-tls'
//!   `InvalidInput` (awc panics on it).
//! - `raw.rs` (close-delimited replies): [`open`] does the same and adds TLS itself with
//!   `tokio-rustls` and the same client configuration.

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix_service::Service;
use actix_tls::connect::{ConnectError, ConnectInfo, Connection, ConnectorService};
use awc::http::Uri;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::egress::{self, Egress, EgressError, ProxyUrl};
use crate::error::WireError;
use crate::tls::{self, CaFile, Trust};

/// How every upstream connection is made: the TLS trust and the egress proxies. Cheap to
/// clone (shared).
#[derive(Clone)]
pub struct Network {
    pub trust: Trust,
    pub egress: Arc<Egress>,
}

/// The counts of roots and the proxies (redacted), not rustls' whole configuration (every root
/// certificate).
impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("platform_roots", &self.trust.platform_roots)
            .field("ca_file_roots", &self.trust.ca_file_roots)
            .field("egress", &self.egress)
            .finish()
    }
}

impl Network {
    /// The platform's roots plus `ca_file`'s, and `egress`.
    pub fn new(ca_file: Option<&CaFile>, egress: Egress) -> Result<Network, NetworkError> {
        Ok(Network {
            trust: tls::client_config(ca_file)?,
            egress: Arc::new(egress),
        })
    }

    /// The platform's roots, no proxy (tests, the demo).
    pub fn direct() -> Result<Network, NetworkError> {
        Network::new(None, Egress::default())
    }
}

/// Why the TLS client configuration every upstream connection uses could not be built.
#[derive(Debug)]
pub enum NetworkError {
    /// rustls refused a certificate of `UPSTREAM_CA_FILE` as a root.
    CaFile { path: PathBuf, source: rustls::Error },
    /// rustls could not build the configuration (no protocol version the provider supports).
    Tls(rustls::Error),
}

impl std::fmt::Display for NetworkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::CaFile { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Tls(e) => write!(f, "the TLS configuration could not be built: {e}"),
        }
    }
}

impl std::error::Error for NetworkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::CaFile { source, .. } | Self::Tls(source) => Some(source),
        }
    }
}

/// awc's TCP connector: direct, or through the egress proxy the [`Egress`] rules pick.
#[derive(Clone)]
pub struct EgressConnector {
    egress: Arc<Egress>,
    direct: ConnectorService,
    /// Bounds the connection to the proxy and its `CONNECT` together, so a proxy that never
    /// answers is named in the error (awc's own connect timeout must be longer than this, or
    /// it fires first with a generic message).
    timeout: Duration,
}

impl EgressConnector {
    pub fn new(egress: Arc<Egress>, timeout: Duration) -> Self {
        EgressConnector {
            egress,
            direct: ConnectorService::default(),
            timeout,
        }
    }
}

impl Service<ConnectInfo<Uri>> for EgressConnector {
    type Response = Connection<Uri, TcpStream>;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>>>>;

    actix_service::always_ready!();

    fn call(&self, req: ConnectInfo<Uri>) -> Self::Future {
        let https = req.request().scheme_str() == Some("https");
        let Some(proxy) = self.egress.proxy_for(https, req.hostname(), req.port()).cloned() else {
            return Box::pin(self.direct.call(req));
        };
        let uri = req.request().clone();
        let host = req.hostname().to_string();
        let port = req.port();
        let timeout = self.timeout;
        Box::pin(async move {
            let stream = through_proxy(&proxy, &host, port, timeout)
                .await
                .map_err(|e| ConnectError::Io(io::Error::other(e)))?;
            Ok(Connection::new(uri, stream))
        })
    }
}

/// A TCP stream to `proxy`, tunnelled to `host:port`, within `timeout`.
async fn through_proxy(proxy: &ProxyUrl, host: &str, port: u16, timeout: Duration) -> Result<TcpStream, EgressError> {
    let work = async {
        let mut stream = TcpStream::connect((proxy.host.as_str(), proxy.port))
            .await
            .map_err(|e| EgressError::Unreachable {
                proxy: proxy.authority(),
                detail: e.to_string(),
            })?;
        let _ = stream.set_nodelay(true);
        log::debug!(proxy = proxy.authority().as_str(), target = host, port = port; "egress tunnel");
        egress::tunnel(&mut stream, host, port, proxy).await?;
        Ok(stream)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(EgressError::Unreachable {
            proxy: proxy.authority(),
            detail: format!(
                "no tunnel within {} ms (connecting to it and its answer to CONNECT)",
                timeout.as_millis()
            ),
        }),
    }
}

/// The precise error an awc connection failure carries, if it is one of ours (egress) or a
/// TLS handshake failure; `None` for anything else (refused, DNS, reset).
pub fn classify_io(e: &io::Error, host: &str) -> Option<WireError> {
    let inner = e.get_ref()?;
    if let Some(egress) = inner.downcast_ref::<EgressError>() {
        return Some(WireError::Proxy(egress.clone()));
    }
    inner.downcast_ref::<rustls::Error>().map(|t| tls::classify(t, host))
}

/// A byte stream to an upstream (plain TCP or TLS).
pub trait Io: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Io for T {}

/// Opens a connection to the upstream at `uri` for the direct reader: proxy tunnel when the
/// rules say so, TLS for `https://`; `timeout` bounds each step (TCP or the tunnel, then the
/// TLS handshake), as awc's connect and handshake timeouts do.
pub async fn open(network: &Network, uri: &Uri, timeout: Duration) -> Result<Box<dyn Io>, WireError> {
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => {
            return Err(WireError::Connect(
                "the upstream URL is neither http:// nor https://".into(),
            ))
        }
    };
    let host = uri
        .host()
        .ok_or_else(|| WireError::Connect("the upstream URL has no host".into()))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let stream = match network.egress.proxy_for(https, host, port) {
        Some(proxy) => through_proxy(proxy, host, port, timeout)
            .await
            .map_err(WireError::Proxy)?,
        None => match tokio::time::timeout(timeout, TcpStream::connect((host, port))).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(WireError::Connect(e.to_string())),
            Err(_) => return Err(WireError::Connect("timed out while connecting".into())),
        },
    };
    let _ = stream.set_nodelay(true);
    if !https {
        return Ok(Box::new(stream));
    }
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|_| WireError::Connect(format!("{host} is not a valid TLS server name")))?;
    let handshake = tokio_rustls::TlsConnector::from(network.trust.config.clone()).connect(name, stream);
    match tokio::time::timeout(timeout, handshake).await {
        Ok(Ok(tls)) => Ok(Box::new(tls)),
        Ok(Err(e)) => Err(classify_io(&e, host).unwrap_or_else(|| WireError::Connect(e.to_string()))),
        Err(_) => Err(WireError::Connect("timed out during the TLS handshake".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_silent_proxy_is_named_within_the_timeout() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts, reads the CONNECT, never answers.
        let silent = async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            use tokio::io::AsyncReadExt as _;
            while sock.read(&mut buf).await.is_ok_and(|n| n > 0) {}
        };
        let proxy = ProxyUrl::parse(&format!("http://u:pw@127.0.0.1:{port}")).unwrap();
        let started = std::time::Instant::now();
        let attempt = through_proxy(&proxy, "mcp.example", 443, Duration::from_millis(300));
        let e = tokio::select! {
            e = attempt => e.unwrap_err(),
            _ = silent => unreachable!("the silent proxy never returns first"),
        };
        assert!(started.elapsed() < Duration::from_secs(2));
        let text = WireError::Proxy(e).to_string();
        assert!(text.contains(&format!("egress proxy 127.0.0.1:{port}")), "{text}");
        assert!(text.contains("no tunnel within 300 ms"), "{text}");
        assert!(!text.contains("pw"), "{text}");
    }

    /// A listener that answers every connection with `reply` at once; its `host:port`.
    async fn answering(reply: &'static [u8]) -> String {
        use tokio::io::AsyncWriteExt as _;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let _ = sock.write_all(reply).await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        addr
    }

    #[tokio::test]
    async fn the_direct_reader_reports_tls_and_proxy_failures_precisely() {
        let net = Network::direct().unwrap();
        // An https:// URL whose port speaks plain HTTP.
        let plain = answering(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        let uri: Uri = format!("https://{plain}/mcp").parse().unwrap();
        let e = open(&net, &uri, Duration::from_secs(2)).await.err().unwrap();
        assert!(matches!(e, WireError::Tls { .. }), "{e}");
        assert!(e.to_string().starts_with("TLS with upstream 127.0.0.1 failed"), "{e}");
        // A proxy that refuses the tunnel.
        let proxy = answering(b"HTTP/1.1 403 Forbidden\r\n\r\n").await;
        let egress = Egress {
            https: Some(ProxyUrl::parse(&proxy).unwrap()),
            ..Egress::default()
        };
        let net = Network::new(None, egress).unwrap();
        let uri: Uri = "https://mcp.example/mcp".parse().unwrap();
        let e = open(&net, &uri, Duration::from_secs(2)).await.err().unwrap();
        assert_eq!(
            e.to_string(),
            format!("egress proxy {proxy} refused the CONNECT with HTTP 403 Forbidden")
        );
    }

    #[tokio::test]
    async fn io_errors_keep_their_precise_kind() {
        let refused = EgressError::Refused {
            proxy: "p:1".into(),
            status: 403,
            reason: "Forbidden".into(),
        };
        let e = classify_io(&io::Error::other(refused.clone()), "h");
        assert_eq!(e, Some(WireError::Proxy(refused)));
        let tls = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        assert!(matches!(
            classify_io(&tls, "h"),
            Some(WireError::CertificateNotTrusted { .. })
        ));
        assert_eq!(
            classify_io(&io::Error::from(io::ErrorKind::ConnectionRefused), "h"),
            None
        );
    }
}
