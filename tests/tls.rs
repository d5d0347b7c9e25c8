//! TLS towards upstreams and egress proxies, end to end: a CA made by the test (rcgen), an
//! `https://` fake MCP upstream (the demo upstream behind a TLS front that the test runs with
//! tokio-rustls), and a small `CONNECT` proxy that records what it was asked. The proxy under
//! test runs in-process (its `Network` given), and once as a subprocess to read its logs.

mod common;

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use upstream_http::egress::{Egress, NoProxy, ProxyUrl};
use upstream_http::tls::CaFile;
use upstream_http::Network;

// ---------------------------------------------------------------------------------------------
// Certificates
// ---------------------------------------------------------------------------------------------

/// A CA of the test's own.
struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    /// The CA's certificate as a PEM file in `dir`.
    fn pem_file(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, self.cert.pem()).unwrap();
        path
    }

    /// A server certificate for `san` (an IP address or a DNS name), signed by this CA.
    fn issue(&self, san: &str) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![match san.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(san.try_into().unwrap()),
        }];
        params.distinguished_name.push(DnType::CommonName, san);
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (
            cert.der().clone(),
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    }
}

fn network(ca: Option<&std::path::Path>, egress: Egress) -> Network {
    let ca = ca.map(|p| CaFile::load(p).unwrap());
    Network::new(ca.as_ref(), egress).unwrap()
}

// ---------------------------------------------------------------------------------------------
// An https upstream: a TLS front for a plain backend
// ---------------------------------------------------------------------------------------------

/// Serves TLS with `cert` on 127.0.0.1 and relays each connection to `backend`; returns the
/// front's port.
async fn tls_front(cert: (CertificateDer<'static>, PrivateKeyDer<'static>), backend: SocketAddr) -> u16 {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.0], cert.1)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    actix_web::rt::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            actix_web::rt::spawn(async move {
                // A refused handshake just ends the connection (the client reports it).
                let Ok(mut tls) = acceptor.accept(sock).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    port
}

/// A demo upstream with one `echo` tool, served over https with `cert`; returns its URL.
async fn https_upstream(
    cert: (CertificateDer<'static>, PrivateKeyDer<'static>),
) -> (String, demo_upstream::RunningUpstream) {
    let backend = upstream(vec![tool("sec-echo", "Echo the text back.", &["text"])], true, false).await;
    let port = tls_front(cert, backend.addr).await;
    (format!("https://127.0.0.1:{port}/mcp"), backend)
}

// ---------------------------------------------------------------------------------------------
// A CONNECT proxy
// ---------------------------------------------------------------------------------------------

/// What the proxy was asked: each request head, verbatim.
#[derive(Clone, Default)]
struct ProxyLog(Rc<RefCell<Vec<String>>>);

impl ProxyLog {
    fn connects(&self) -> Vec<String> {
        self.0.borrow().clone()
    }
}

/// A CONNECT proxy on 127.0.0.1; with `credentials` (`user:password`) it wants them
/// (407 otherwise). Returns its port and its log.
async fn connect_proxy(credentials: Option<&str>) -> (u16, ProxyLog) {
    use base64::Engine as _;
    let want = credentials
        .map(|c| format!("basic {}", base64::engine::general_purpose::STANDARD.encode(c)).to_ascii_lowercase());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = ProxyLog::default();
    let seen = log.clone();
    actix_web::rt::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let seen = seen.clone();
            let want = want.clone();
            actix_web::rt::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
                    match sock.read(&mut byte).await {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                seen.0.borrow_mut().push(head.clone());
                let mut lines = head.lines();
                let target = lines
                    .next()
                    .and_then(|l| l.strip_prefix("CONNECT "))
                    .and_then(|l| l.split(' ').next())
                    .unwrap_or("")
                    .to_string();
                let auth = lines
                    .filter_map(|l| l.split_once(':'))
                    .find(|(k, _)| k.eq_ignore_ascii_case("proxy-authorization"))
                    .map(|(_, v)| v.trim().to_ascii_lowercase());
                if want.is_some() && auth != want {
                    let _ = sock
                        .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"t\"\r\nContent-Length: 0\r\n\r\n")
                        .await;
                    return;
                }
                let Ok(mut upstream) = TcpStream::connect(target.as_str()).await else {
                    let _ = sock
                        .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                        .await;
                    return;
                };
                if sock
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .is_err()
                {
                    return;
                }
                let _ = tokio::io::copy_bidirectional(&mut sock, &mut upstream).await;
            });
        }
    });
    (port, log)
}

fn egress_via(port: u16, credentials: Option<&str>, no_proxy: &str) -> Egress {
    let creds = credentials.map(|c| format!("{c}@")).unwrap_or_default();
    let proxy = ProxyUrl::parse(&format!("http://{creds}127.0.0.1:{port}")).unwrap();
    Egress {
        https: Some(proxy.clone()),
        http: Some(proxy),
        no_proxy: NoProxy::parse(no_proxy).unwrap(),
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers on the proxy's answers
// ---------------------------------------------------------------------------------------------

async fn start(url: &str, network: &Network, manifest: Option<std::path::PathBuf>) -> TestProxy {
    start_proxy_on(
        vec![upstream_config("sec", url)],
        catalog_config(manifest),
        settings(),
        mcp_search_proxy::server::ServerLimits::default(),
        network,
    )
    .await
}

async fn echo_works(p: &TestProxy) {
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let sec = report_of(&r, "sec");
    assert_eq!(sec["ok"], true, "{r}");
    assert_eq!(sec["tools"], 1, "{r}");
    let r = mcp_call(&p.url, "sec-echo", json!({"text": "over tls"})).await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(r["content"][0]["text"], "over tls", "{r}");
}

// ---------------------------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn an_https_upstream_signed_by_the_ca_file_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test CA");
    let (url, _backend) = https_upstream(ca.issue("127.0.0.1")).await;
    let p = start(&url, &network(Some(&ca.pem_file(dir.path())), Egress::default()), None).await;
    echo_works(&p).await;
    p.stop().await;
}

#[actix_web::test]
async fn an_unknown_ca_is_a_clear_error_on_refresh_and_on_call() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("manifest.json");
    let ca = Ca::new("test CA");
    let (url, backend) = https_upstream(ca.issue("127.0.0.1")).await;
    // First with the CA: the catalog (and its manifest) learn the tool ...
    let p = start(
        &url,
        &network(Some(&ca.pem_file(dir.path())), Egress::default()),
        Some(manifest.clone()),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !manifest.exists() && Instant::now() < deadline {
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    p.stop().await;
    // ... then without it: the platform's roots do not know the test CA.
    let p = start(&url, &network(None, Egress::default()), Some(manifest)).await;
    let started = Instant::now();
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let sec = report_of(&r, "sec");
    assert_eq!(sec["ok"], false, "{r}");
    let error = sec["error"].as_str().unwrap_or_default();
    assert!(error.contains("certificate not trusted"), "{r}");
    assert!(error.contains("UPSTREAM_CA_FILE"), "{r}");
    let r = mcp_call(&p.url, "sec-echo", json!({"text": "x"})).await;
    assert_eq!(r["isError"], true, "{r}");
    let msg = error_message(&r);
    assert!(msg.contains("certificate not trusted"), "{msg}");
    assert!(msg.contains("UPSTREAM_CA_FILE"), "{msg}");
    assert_eq!(r["structuredContent"]["error"]["retryable"], false, "{r}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(
        backend.control.stats().last_call.is_none(),
        "nothing reached the upstream"
    );
    p.stop().await;
}

#[actix_web::test]
async fn a_certificate_for_another_host_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test CA");
    let (url, _backend) = https_upstream(ca.issue("other.example")).await;
    let p = start(&url, &network(Some(&ca.pem_file(dir.path())), Egress::default()), None).await;
    let started = Instant::now();
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let sec = report_of(&r, "sec");
    assert_eq!(sec["ok"], false, "{r}");
    let error = sec["error"].as_str().unwrap_or_default();
    assert!(error.contains("not valid for the host name 127.0.0.1"), "{r}");
    assert!(started.elapsed() < Duration::from_secs(5));
    p.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Egress proxies
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn https_upstreams_are_reached_through_the_connect_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test CA");
    let (url, _backend) = https_upstream(ca.issue("127.0.0.1")).await;
    let upstream_port = url.split(':').nth(2).unwrap().split('/').next().unwrap().to_string();
    let (proxy_port, log) = connect_proxy(None).await;
    let net = network(Some(&ca.pem_file(dir.path())), egress_via(proxy_port, None, ""));
    let p = start(&url, &net, None).await;
    echo_works(&p).await;
    let connects = log.connects();
    assert!(!connects.is_empty());
    for c in &connects {
        assert!(
            c.starts_with(&format!("CONNECT 127.0.0.1:{upstream_port} HTTP/1.1\r\n")),
            "{c}"
        );
        assert!(!c.to_ascii_lowercase().contains("proxy-authorization"), "{c}");
    }
    p.stop().await;
}

#[actix_web::test]
async fn no_proxy_bypasses_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test CA");
    let (url, _backend) = https_upstream(ca.issue("127.0.0.1")).await;
    let (proxy_port, log) = connect_proxy(None).await;
    for no_proxy in ["127.0.0.1", "127.0.0.0/8", "*"] {
        let net = network(Some(&ca.pem_file(dir.path())), egress_via(proxy_port, None, no_proxy));
        let p = start(&url, &net, None).await;
        echo_works(&p).await;
        p.stop().await;
    }
    assert!(log.connects().is_empty(), "{:?}", log.connects());
}

#[actix_web::test]
async fn http_upstreams_are_tunnelled_too() {
    let backend = upstream(vec![tool("sec-echo", "Echo.", &["text"])], false, true).await;
    let (proxy_port, log) = connect_proxy(None).await;
    let p = start(&backend.url, &network(None, egress_via(proxy_port, None, "")), None).await;
    echo_works(&p).await;
    let target = format!("CONNECT {} HTTP/1.1", backend.addr);
    assert!(
        log.connects().iter().all(|c| c.starts_with(&target)),
        "{:?}",
        log.connects()
    );
    assert!(!log.connects().is_empty());
    p.stop().await;
}

#[actix_web::test]
async fn proxy_credentials_are_sent_and_a_refusal_names_the_proxy_status() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test CA");
    let (url, _backend) = https_upstream(ca.issue("127.0.0.1")).await;
    let (proxy_port, log) = connect_proxy(Some("alice:pa ss")).await;
    let pem = ca.pem_file(dir.path());
    // With the credentials (the space percent-encoded in the URL): through.
    let p = start(
        &url,
        &network(Some(&pem), egress_via(proxy_port, Some("alice:pa%20ss"), "")),
        None,
    )
    .await;
    echo_works(&p).await;
    assert!(log.connects()[0].contains("Proxy-Authorization: Basic YWxpY2U6cGEgc3M=\r\n"));
    p.stop().await;
    // Without: the proxy's 407, named, quickly.
    let p = start(&url, &network(Some(&pem), egress_via(proxy_port, None, "")), None).await;
    let started = Instant::now();
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let sec = report_of(&r, "sec");
    assert_eq!(sec["ok"], false, "{r}");
    let error = sec["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!(
            "egress proxy 127.0.0.1:{proxy_port} refused the CONNECT with HTTP 407"
        )),
        "{r}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    p.stop().await;
}

/// Free port for a subprocess (bound and released; racy only against other binds).
fn free_port() -> u16 {
    std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[actix_web::test]
async fn the_proxy_process_never_logs_proxy_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test CA");
    let (url, _backend) = https_upstream(ca.issue("127.0.0.1")).await;
    let (proxy_port, log) = connect_proxy(Some("bob:hunter2-SECRET")).await;
    let port = free_port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-search-proxy"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("EMBED_MODEL", "") // lexical only, even with the model installed
        .env("UPSTREAMS", format!("sec={url}"))
        .env("UPSTREAM_CA_FILE", ca.pem_file(dir.path()))
        .env(
            "HTTPS_PROXY",
            format!("http://bob:hunter2-SECRET@127.0.0.1:{proxy_port}"),
        )
        .env("PORT", port.to_string())
        .env("LOG_LEVEL", "debug")
        .env("UPSTREAM_TIMEOUT_SEC", "5")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The startup refresh goes through the proxy; then a call does too.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut called = None;
    while Instant::now() < deadline {
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
        if log.connects().is_empty() {
            continue;
        }
        let (status, body) = rpc(
            &format!("http://127.0.0.1:{port}/mcp"),
            "tools/call",
            json!({"name": "mcp_call", "arguments": {"name": "sec-echo", "arguments": {"text": "hi"}}}),
        )
        .await;
        if status == 200 && body["result"]["content"][0]["text"] == "hi" {
            called = Some(body);
            break;
        }
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(called.is_some(), "no call went through: {text}");
    assert!(log.connects()[0].contains("Proxy-Authorization: Basic "));
    assert!(text.contains("upstream egress proxies"), "{text}");
    assert!(text.contains(&format!("http://***@127.0.0.1:{proxy_port}")), "{text}");
    // Neither the password nor the header value (base64 of "bob:hunter2-SECRET").
    assert!(!text.contains("SECRET") && !text.contains("hunter2"), "{text}");
    assert!(!text.contains("Ym9iOmh1bnRlcjItU0VDUkVU"), "{text}");
}

#[test]
fn a_bad_ca_file_or_proxy_url_stops_the_start_with_exit_64() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate").unwrap();
    let missing = dir.path().join("missing.pem");
    for (var, value, want) in [
        ("UPSTREAM_CA_FILE", junk.to_str().unwrap(), "UPSTREAM_CA_FILE"),
        ("UPSTREAM_CA_FILE", missing.to_str().unwrap(), "UPSTREAM_CA_FILE"),
        ("HTTPS_PROXY", "socks5://u:pw-SECRET@p:1080", "HTTPS_PROXY"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-search-proxy"))
            .env_clear()
            .env("UPSTREAMS", "https://mcp.example/mcp")
            .env("PORT", "0")
            .env(var, value)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(64), "{var}={value} was accepted");
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains(want), "{text}");
        assert!(!text.contains("SECRET"), "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// Close-delimited replies (the direct reader) over TLS, through the proxy
// ---------------------------------------------------------------------------------------------

/// A legacy MCP upstream whose every reply is close-delimited (HTTP/1.1, no `Content-Length`,
/// not chunked): one request per connection. Returns its address and its `tools/call` count.
async fn close_delimited_backend() -> (SocketAddr, Rc<std::cell::Cell<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let calls = Rc::new(std::cell::Cell::new(0));
    let counted = calls.clone();
    actix_web::rt::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let counted = counted.clone();
            actix_web::rt::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let head_end = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                let len: usize = head
                    .split("content-length:")
                    .nth(1)
                    .and_then(|r| r.split("\r\n").next())
                    .and_then(|n| n.trim().parse().ok())
                    .unwrap_or(0);
                while buf.len() < head_end + len {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let req: Value = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null);
                let id = req["id"].clone();
                let message = match req["method"].as_str().unwrap_or("") {
                    "server/discover" => Some(
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
                    ),
                    "initialize" => Some(json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "close-delimited", "version": "0"},
                    }})),
                    "tools/list" => {
                        Some(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [tool("cd-echo", "Echo.", &[])]}}))
                    }
                    "tools/call" => {
                        counted.set(counted.get() + 1);
                        Some(
                            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "close-delimited over tls"}]}}),
                        )
                    }
                    _ => None,
                };
                let reply = match (head.starts_with("post"), message) {
                    (true, Some(m)) => format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{m}"),
                    (true, None) => "HTTP/1.1 202 Accepted\r\n\r\n".to_string(),
                    (false, _) => "HTTP/1.1 405 Method Not Allowed\r\n\r\n".to_string(),
                };
                let _ = sock.write_all(reply.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (addr, calls)
}

#[actix_web::test]
async fn close_delimited_replies_are_read_over_tls_through_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test CA");
    let (backend, calls) = close_delimited_backend().await;
    let port = tls_front(ca.issue("127.0.0.1"), backend).await;
    let url = format!("https://127.0.0.1:{port}/mcp");
    let (proxy_port, log) = connect_proxy(Some("u:p")).await;
    let pem = ca.pem_file(dir.path());
    let p = start(
        &url,
        &network(Some(&pem), egress_via(proxy_port, Some("u:p"), "")),
        None,
    )
    .await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(report_of(&r, "sec")["ok"], true, "{r}");
    let r = mcp_call(&p.url, "cd-echo", json!({})).await;
    assert_eq!(r["content"][0]["text"], "close-delimited over tls", "{r}");
    assert_eq!(calls.get(), 1, "a call is sent once");
    // The bodies were read (awc alone reads them as empty), each request over its own tunnel.
    let connects = log.connects();
    assert!(connects.len() >= 4, "{connects:?}");
    assert!(connects
        .iter()
        .all(|c| c.starts_with(&format!("CONNECT 127.0.0.1:{port} "))));
    p.stop().await;
    // Without the CA: refused at the first handshake, clearly.
    let p = start(&url, &network(None, egress_via(proxy_port, Some("u:p"), "")), None).await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let error = report_of(&r, "sec")["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("certificate not trusted"), "{r}");
    p.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Measurement (not a check): cargo test --test tls -- --ignored --nocapture
// ---------------------------------------------------------------------------------------------

/// Mean `mcp_call` latency over plain http, https, and https through the CONNECT proxy
/// (pooled connections), and the cost of a fresh connection (TCP, TCP+TLS, tunnel+TLS).
#[actix_web::test]
#[ignore]
async fn measure_tls_and_proxy_overhead() {
    const CALLS: u32 = 300;
    const OPENS: u32 = 100;
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test CA");
    let pem = ca.pem_file(dir.path());
    let (https_url, backend) = https_upstream(ca.issue("127.0.0.1")).await;
    let (proxy_port, _log) = connect_proxy(None).await;
    let rows = [
        ("http", backend.url.clone(), network(None, Egress::default())),
        ("https", https_url.clone(), network(Some(&pem), Egress::default())),
        (
            "https via CONNECT proxy",
            https_url.clone(),
            network(Some(&pem), egress_via(proxy_port, None, "")),
        ),
    ];
    for (name, url, net) in rows {
        let p = start(&url, &net, None).await;
        let _ = mcp_call(&p.url, "sec-echo", json!({"text": "warm"})).await;
        let started = Instant::now();
        for _ in 0..CALLS {
            let r = mcp_call(&p.url, "sec-echo", json!({"text": "x"})).await;
            assert_eq!(r["content"][0]["text"], "x");
        }
        let call_us = started.elapsed().as_micros() / u128::from(CALLS);
        let uri: awc::http::Uri = url.parse().unwrap();
        let started = Instant::now();
        for _ in 0..OPENS {
            upstream_http::connector::open(&net, &uri, Duration::from_secs(5))
                .await
                .unwrap();
        }
        let open_us = started.elapsed().as_micros() / u128::from(OPENS);
        println!("{name:<24} mcp_call {call_us:>6} µs/call   fresh connection {open_us:>6} µs");
        p.stop().await;
    }
}
