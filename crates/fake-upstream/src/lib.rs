//! fake-upstream: a scriptable raw HTTP/1.1 upstream for tests that need every byte on the
//! wire to be their choice (status line, framing, when the connection closes, what comes
//! when): [`fake`] answers each request with the handler's [`Part`]s and records what it
//! received. Test support only (`publish = false`): a dev-dependency of the proxy's
//! integration tests and of `proxy-actors` (the upstream connection's tests).
//!
//! # Layout
//!
//! - `lib.rs`: the server ([`fake`], [`Fake`], [`Seen`], [`Part`]) and helpers that write
//!   replies ([`http`], [`json_reply`], [`event`], [`chunk`], …) and a well-behaved stateless
//!   legacy upstream ([`legacy`]).
//!
//! It must run on a tokio local set (the actix test runtime is one): its tasks are
//! `spawn_local`ed.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// ---------------------------------------------------------------------------------------------
// A scriptable raw HTTP/1.1 upstream
// ---------------------------------------------------------------------------------------------

/// One request as the fake upstream received it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// HTTP method.
    pub verb: String,
    pub headers: Vec<(String, String)>,
    /// JSON-RPC body (`Null` when none or not JSON).
    pub body: Value,
}

impl Seen {
    /// The JSON-RPC method, or `GET`/`DELETE` for body-less requests.
    pub fn rpc(&self) -> String {
        match self.body.get("method").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => self.verb.clone(),
        }
    }

    pub fn id(&self) -> Value {
        self.body.get("id").cloned().unwrap_or(Value::Null)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the fake does with the connection after it read a request.
pub enum Part {
    Send(Vec<u8>),
    Sleep(Duration),
    /// Never answer; keep the connection open.
    Hang,
    /// Close the connection (the end of a close-delimited body).
    Close,
    /// Read until the proxy closes the connection, then count it in `closed_by_proxy`.
    AwaitProxyClose,
}

pub type Handler = dyn Fn(&Seen, usize) -> Vec<Part>;

pub struct Fake {
    pub url: String,
    pub port: u16,
    pub seen: Rc<RefCell<Vec<Seen>>>,
    pub closed_by_proxy: Rc<Cell<usize>>,
}

impl Fake {
    /// How many requests of this JSON-RPC method (or HTTP verb) arrived.
    pub fn count(&self, rpc: &str) -> usize {
        self.seen.borrow().iter().filter(|s| s.rpc() == rpc).count()
    }

    pub fn total(&self) -> usize {
        self.seen.borrow().len()
    }
}

/// Starts a fake upstream; `handler` gets each request and how many earlier requests had the
/// same JSON-RPC method, and returns what to do.
pub async fn fake(handler: impl Fn(&Seen, usize) -> Vec<Part> + 'static) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let closed_by_proxy = Rc::new(Cell::new(0));
    let handler: Rc<Handler> = Rc::new(handler);
    {
        let seen = seen.clone();
        let closed = closed_by_proxy.clone();
        tokio::task::spawn_local(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::task::spawn_local(serve(sock, handler.clone(), seen.clone(), closed.clone()));
            }
        });
    }
    Fake {
        url: format!("http://127.0.0.1:{port}/mcp"),
        port,
        seen,
        closed_by_proxy,
    }
}

pub async fn serve(mut sock: TcpStream, handler: Rc<Handler>, seen: Rc<RefCell<Vec<Seen>>>, closed: Rc<Cell<usize>>) {
    let mut buf = Vec::new();
    loop {
        // Head.
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 8192];
            match sock.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        buf.drain(..head_end);
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or("").split(' ');
        let verb = first.next().unwrap_or("").to_string();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < len {
            let mut chunk = [0u8; 8192];
            match sock.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body: Value = serde_json::from_slice(&buf[..len]).unwrap_or(Value::Null);
        buf.drain(..len);
        let req = Seen { verb, headers, body };
        let nth = seen.borrow().iter().filter(|s| s.rpc() == req.rpc()).count();
        seen.borrow_mut().push(req.clone());
        for part in handler(&req, nth) {
            match part {
                Part::Send(bytes) => {
                    if sock.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                Part::Sleep(d) => tokio::time::sleep(d).await,
                Part::Hang => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    return;
                }
                Part::Close => {
                    let _ = sock.shutdown().await;
                    return;
                }
                Part::AwaitProxyClose => {
                    let mut chunk = [0u8; 1024];
                    loop {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => break,
                            Ok(_) => {}
                        }
                    }
                    closed.set(closed.get() + 1);
                    return;
                }
            }
        }
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        302 => "Found",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        405 => "Method Not Allowed",
        _ => "Whatever",
    }
}

/// A complete response with a `Content-Length`.
pub fn http(status: u16, content_type: &str, extra: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\n",
        reason(status),
        body.len()
    );
    if !content_type.is_empty() {
        out.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    for (k, v) in extra {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

pub fn json_reply(v: &Value) -> Vec<Part> {
    vec![Part::Send(http(200, "application/json", &[], v.to_string().as_bytes()))]
}

pub fn result_of(req: &Seen, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": req.id(), "result": result})
}

pub fn redirect(status: u16, location: &str) -> Vec<Part> {
    vec![Part::Send(http(status, "", &[("Location", location)], b""))]
}

/// SSE event carrying one JSON-RPC message.
pub fn event(v: &Value) -> String {
    format!("event: message\ndata: {v}\n\n")
}

/// One chunk of a chunked body.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

pub fn sse_head_chunked() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec()
}

pub fn init_result(list_changed: bool) -> Value {
    json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": list_changed}},
        "serverInfo": {"name": "hostile", "version": "0"},
    })
}

/// A legacy `initialize` answered with a session (`Mcp-Session-Id: session`).
pub fn initialized_in(req: &Seen, session: &str) -> Vec<Part> {
    let body = result_of(req, init_result(false)).to_string();
    vec![Part::Send(http(
        200,
        "application/json",
        &[("Mcp-Session-Id", session)],
        body.as_bytes(),
    ))]
}

/// A well-behaved stateless legacy upstream with these tools (answers `tools/call` with
/// `called <name>`).
pub fn legacy(req: &Seen, tools: &[Value]) -> Vec<Part> {
    match req.rpc().as_str() {
        "server/discover" => json_reply(
            &json!({"jsonrpc": "2.0", "id": req.id(), "error": {"code": -32601, "message": "Method not found"}}),
        ),
        "initialize" => json_reply(&result_of(req, init_result(false))),
        "tools/list" => json_reply(&result_of(req, json!({"tools": tools}))),
        "tools/call" => {
            let name = req.body["params"]["name"].as_str().unwrap_or("").to_string();
            json_reply(&result_of(
                req,
                json!({"content": [{"type": "text", "text": format!("called {name}")}]}),
            ))
        }
        "GET" | "DELETE" => vec![Part::Send(http(405, "", &[], b""))],
        // Notifications.
        _ => vec![Part::Send(http(202, "", &[], b""))],
    }
}

pub fn t(name: &str) -> Value {
    json!({"name": name, "description": format!("Tool {name}."), "inputSchema": {"type": "object"}})
}
