//! One HTTP/1.1 exchange on a connection of its own (`Connection: close`), for upstreams whose
//! replies are close-delimited.
//!
//! Why this exists: an HTTP/1.1 response with neither `Content-Length` nor
//! `Transfer-Encoding: chunked` has a body that ends when the server closes the connection
//! (RFC 9112 §6.3, rule 8). actix-http 3 (under awc) decodes such a response head as having
//! *no* body (`MessageDecoder<ResponseHead>::decode` yields `PayloadType::None` unless the
//! status line says HTTP/1.0), so awc hands back an empty body and the bytes are lost. The
//! only hook below that decision is the connector's IO (`connector.rs` supplies one, for
//! egress proxies), and fixing the framing there would mean rewriting the reply's head in the
//! byte stream. So the transport notices
//! such a reply (see `transport::Client::exchange`) and reads that upstream's replies here:
//! over a connection `connector::open` makes with the same rules as awc's (egress proxy
//! tunnel, TLS with the same trust for `https://`), one request per connection, every framing
//! (length, chunked, close) understood.
//! Bounds: the head at most [`MAX_HEAD_BYTES`] (and [`MAX_HEADERS`] lines), a chunk-size or
//! trailer line at most [`MAX_LINE_BYTES`]; the body's size and the time are bounded by the
//! caller, as for awc's bodies.

use std::io;
use std::pin::Pin;
use std::time::Duration;

use awc::error::PayloadError;
use awc::http::header::{HeaderMap, HeaderName, HeaderValue};
use awc::http::{Method, Uri};
use bytes::{Buf, Bytes, BytesMut};
use futures_util::Stream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::connector::{self, Io, Network};
use crate::error::WireError;

/// A response body, chunk by chunk.
pub type Body = Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>>;

/// A response head larger than this is refused.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// A response head with more header lines than this is refused.
pub const MAX_HEADERS: usize = 128;
/// A chunk-size line or a trailer line longer than this is refused.
pub const MAX_LINE_BYTES: usize = 4096;
const READ_SIZE: usize = 16 * 1024;

/// Sends one request and reads the reply head; the body follows as a stream.
pub async fn exchange(
    method: &Method,
    url: &str,
    headers: &[(std::borrow::Cow<'static, str>, String)],
    body: Option<&Bytes>,
    connect_timeout: Duration,
    network: &Network,
) -> Result<(u16, HeaderMap, Body), WireError> {
    let uri: Uri = url
        .parse()
        .map_err(|e| WireError::Connect(format!("invalid upstream URL: {e}")))?;
    let host = uri
        .host()
        .ok_or_else(|| WireError::Connect("the upstream URL has no host".into()))?;
    let host_header = match uri.port_u16() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    };
    let mut sock = connector::open(network, &uri, connect_timeout).await?;
    let head = request_head(method, &uri, &host_header, headers, body)?;
    send(&mut sock, &head, body)
        .await
        .map_err(|e| WireError::Connect(format!("sending the request failed: {e}")))?;
    let mut buf = BytesMut::with_capacity(READ_SIZE);
    let (status, headers) = read_head(&mut sock, &mut buf).await?;
    let reader = Reader {
        sock,
        buf,
        framing: framing(method, status, &headers)?,
        done: false,
    };
    let stream = futures_util::stream::unfold(reader, |mut r| async move {
        let item = r.next().await?;
        Some((item, r))
    });
    Ok((status, headers, Box::pin(stream)))
}

/// The request's head: request line, `Host`, `Connection: close`, `headers` (refused if awc
/// would refuse them) and the body's length.
fn request_head(
    method: &Method,
    uri: &Uri,
    host_header: &str,
    headers: &[(std::borrow::Cow<'static, str>, String)],
    body: Option<&Bytes>,
) -> Result<String, WireError> {
    let target = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {host_header}\r\nConnection: close\r\n");
    for (name, value) in headers {
        // The same validity rule as awc's: no control characters (no header injection).
        if HeaderName::from_bytes(name.as_bytes()).is_err() || HeaderValue::from_str(value).is_err() {
            return Err(WireError::Connect(format!("invalid header {name}")));
        }
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    match body {
        Some(b) => head.push_str(&format!("Content-Length: {}\r\n", b.len())),
        None if method == Method::POST => head.push_str("Content-Length: 0\r\n"),
        None => {}
    }
    head.push_str("\r\n");
    Ok(head)
}

/// Writes the head and the body, and flushes.
async fn send(sock: &mut Box<dyn Io>, head: &str, body: Option<&Bytes>) -> io::Result<()> {
    sock.write_all(head.as_bytes()).await?;
    if let Some(b) = body {
        sock.write_all(b).await?;
    }
    sock.flush().await
}

/// Reads until the final reply head (interim 1xx replies skipped): its status and headers,
/// with `buf` left holding what followed it.
async fn read_head(sock: &mut Box<dyn Io>, buf: &mut BytesMut) -> Result<(u16, HeaderMap), WireError> {
    loop {
        let (status, headers, used) = loop {
            let parsed = parse_head(buf)?;
            if parsed.as_ref().map_or(buf.len(), |p| p.2) > MAX_HEAD_BYTES {
                return Err(WireError::InvalidReply(format!(
                    "the reply's head exceeds {MAX_HEAD_BYTES} bytes"
                )));
            }
            if let Some(parsed) = parsed {
                break parsed;
            }
            buf.reserve(READ_SIZE);
            match sock.read_buf(buf).await {
                Ok(0) => {
                    return Err(WireError::InvalidReply(
                        "the connection closed before the reply's head".into(),
                    ))
                }
                Ok(_) => {}
                Err(e) => return Err(WireError::Connect(format!("reading the reply failed: {e}"))),
            }
        };
        buf.advance(used);
        // Interim replies (100 Continue, 103 Early Hints) precede the real one.
        if (100..200).contains(&status) && status != 101 {
            continue;
        }
        return Ok((status, headers));
    }
}

/// How the body of a reply to `method` with `status` and `headers` ends.
fn framing(method: &Method, status: u16, headers: &HeaderMap) -> Result<Framing, WireError> {
    let chunked = headers
        .get_all(awc::http::header::TRANSFER_ENCODING)
        .any(|v| v.to_str().is_ok_and(|s| s.to_ascii_lowercase().contains("chunked")));
    Ok(
        if method == Method::HEAD || status == 204 || status == 304 || status == 101 {
            Framing::Length(0)
        } else if chunked {
            Framing::Chunked(ChunkState::Size)
        } else if let Some(len) = content_length(headers)? {
            Framing::Length(len)
        } else {
            Framing::UntilClose
        },
    )
}

/// Parses a complete response head at the start of `buf`: status, headers and its length.
/// `None` while the head is incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<(u16, HeaderMap, usize)>, WireError> {
    let bad = |what: &str| WireError::InvalidReply(format!("malformed reply head: {what}"));
    let mut lines = Vec::new();
    let mut start = 0;
    let mut end = None;
    for (i, b) in buf.iter().enumerate() {
        if *b != b'\n' {
            continue;
        }
        let line = &buf[start..i];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        start = i + 1;
        if line.is_empty() {
            end = Some(start);
            break;
        }
        if lines.len() > MAX_HEADERS {
            return Err(WireError::InvalidReply(format!(
                "the reply has more than {MAX_HEADERS} header lines"
            )));
        }
        lines.push(line);
    }
    let Some(end) = end else { return Ok(None) };
    let Some((status_line, header_lines)) = lines.split_first() else {
        return Err(bad("no status line"));
    };
    let status_line = std::str::from_utf8(status_line).map_err(|_| bad("status line"))?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(bad("not an HTTP/1 status line"));
    }
    let status: u16 = parts
        .next()
        .filter(|c| c.len() == 3)
        .and_then(|c| c.parse().ok())
        .filter(|c| (100..600).contains(c))
        .ok_or_else(|| bad("status code"))?;
    let mut headers = HeaderMap::new();
    for line in header_lines {
        let colon = line.iter().position(|b| *b == b':').ok_or_else(|| bad("header line"))?;
        let name = HeaderName::from_bytes(&line[..colon]).map_err(|_| bad("header name"))?;
        let value = line[colon + 1..].trim_ascii();
        let value = HeaderValue::from_bytes(value).map_err(|_| bad("header value"))?;
        headers.append(name, value);
    }
    Ok(Some((status, headers, end)))
}

/// The `Content-Length`, if any; several different values are an error.
fn content_length(headers: &HeaderMap) -> Result<Option<u64>, WireError> {
    let mut out: Option<u64> = None;
    for v in headers.get_all(awc::http::header::CONTENT_LENGTH) {
        let n: u64 = v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| WireError::InvalidReply("malformed reply head: Content-Length".into()))?;
        if out.is_some_and(|o| o != n) {
            return Err(WireError::InvalidReply(
                "malformed reply head: conflicting Content-Length values".into(),
            ));
        }
        out = Some(n);
    }
    Ok(out)
}

#[derive(Clone, Copy)]
enum Framing {
    Length(u64),
    Chunked(ChunkState),
    UntilClose,
}

#[derive(Clone, Copy)]
enum ChunkState {
    Size,
    Data(u64),
    DataEnd,
    Trailers(usize),
}

struct Reader {
    sock: Box<dyn Io>,
    buf: BytesMut,
    framing: Framing,
    done: bool,
}

fn invalid(what: &str) -> PayloadError {
    PayloadError::Io(io::Error::new(io::ErrorKind::InvalidData, what.to_string()))
}

impl Reader {
    /// Reads more bytes; `Ok(false)` at the end of the connection.
    async fn fill(&mut self) -> Result<bool, PayloadError> {
        self.buf.reserve(READ_SIZE);
        match self.sock.read_buf(&mut self.buf).await {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) => Err(PayloadError::Io(e)),
        }
    }

    /// One line (without its line break) from the buffer, reading as needed.
    async fn line(&mut self) -> Result<Bytes, PayloadError> {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let mut line = self.buf.split_to(i + 1).freeze();
                line.truncate(i);
                if line.ends_with(b"\r") {
                    line.truncate(i - 1);
                }
                return Ok(line);
            }
            if self.buf.len() > MAX_LINE_BYTES {
                return Err(invalid("a chunk-size or trailer line is too long"));
            }
            if !self.fill().await? {
                return Err(PayloadError::Incomplete(None));
            }
        }
    }

    async fn next(&mut self) -> Option<Result<Bytes, PayloadError>> {
        if self.done {
            return None;
        }
        let out = self.step().await;
        match &out {
            Some(Ok(_)) => {}
            _ => self.done = true,
        }
        out
    }

    /// Reads more when nothing is buffered; the error when the body ended early or failed.
    async fn need_bytes(&mut self) -> Option<PayloadError> {
        if !self.buf.is_empty() {
            return None;
        }
        match self.fill().await {
            Ok(true) => None,
            Ok(false) => Some(PayloadError::Incomplete(None)),
            Err(e) => Some(e),
        }
    }

    async fn step(&mut self) -> Option<Result<Bytes, PayloadError>> {
        loop {
            match self.framing {
                Framing::Length(0) => return None,
                Framing::Length(left) => {
                    if let Some(e) = self.need_bytes().await {
                        return Some(Err(e));
                    }
                    let n = (self.buf.len() as u64).min(left) as usize;
                    self.framing = Framing::Length(left - n as u64);
                    return Some(Ok(self.buf.split_to(n).freeze()));
                }
                Framing::UntilClose => {
                    if self.buf.is_empty() {
                        match self.fill().await {
                            Ok(true) => {}
                            Ok(false) => return None,
                            Err(e) => return Some(Err(e)),
                        }
                    }
                    return Some(Ok(self.buf.split().freeze()));
                }
                Framing::Chunked(ChunkState::Size) => {
                    let line = match self.line().await {
                        Ok(l) => l,
                        Err(e) => return Some(Err(e)),
                    };
                    let digits = line.split(|b| *b == b';').next().unwrap_or(&[]).trim_ascii();
                    let size = std::str::from_utf8(digits)
                        .ok()
                        .filter(|d| !d.is_empty() && d.len() <= 15)
                        .and_then(|d| u64::from_str_radix(d, 16).ok());
                    self.framing = match size {
                        Some(0) => Framing::Chunked(ChunkState::Trailers(0)),
                        Some(n) => Framing::Chunked(ChunkState::Data(n)),
                        None => return Some(Err(invalid("malformed chunk size"))),
                    };
                }
                Framing::Chunked(ChunkState::Data(left)) => {
                    if let Some(e) = self.need_bytes().await {
                        return Some(Err(e));
                    }
                    let n = (self.buf.len() as u64).min(left) as usize;
                    let rest = left - n as u64;
                    self.framing = Framing::Chunked(if rest == 0 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(rest)
                    });
                    return Some(Ok(self.buf.split_to(n).freeze()));
                }
                Framing::Chunked(ChunkState::DataEnd) => match self.line().await {
                    Ok(l) if l.is_empty() => self.framing = Framing::Chunked(ChunkState::Size),
                    Ok(_) => return Some(Err(invalid("chunk data longer than its size"))),
                    Err(e) => return Some(Err(e)),
                },
                Framing::Chunked(ChunkState::Trailers(seen)) => match self.line().await {
                    Ok(l) if l.is_empty() => return None,
                    Ok(l) if seen + l.len() > MAX_HEAD_BYTES => {
                        return Some(Err(invalid("the chunked trailers are too long")))
                    }
                    Ok(l) => self.framing = Framing::Chunked(ChunkState::Trailers(seen + l.len())),
                    Err(e) => return Some(Err(e)),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_parsed_once_complete() {
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Type: a").unwrap().is_none());
        let (status, headers, used) = parse_head(b"HTTP/1.1 200 OK\r\nContent-Type:  a/b \r\nX: 1\r\n\r\nbody")
            .unwrap()
            .unwrap();
        assert_eq!(status, 200);
        assert_eq!(headers.get("content-type").unwrap(), "a/b");
        assert_eq!(used, 46);
        let (status, _, used) = parse_head(b"HTTP/1.0 404 Not Found\n\nx").unwrap().unwrap();
        assert_eq!((status, used), (404, 24));
        assert!(parse_head(b"SPDY 200 OK\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 2000 OK\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n").is_err());
        let many = format!("HTTP/1.1 200 OK\r\n{}\r\n", "X: 1\r\n".repeat(MAX_HEADERS + 1));
        assert!(parse_head(many.as_bytes()).is_err());
    }

    #[test]
    fn conflicting_lengths_are_refused() {
        let mut h = HeaderMap::new();
        h.append(awc::http::header::CONTENT_LENGTH, HeaderValue::from_static("3"));
        assert_eq!(content_length(&h).unwrap(), Some(3));
        h.append(awc::http::header::CONTENT_LENGTH, HeaderValue::from_static("4"));
        assert!(content_length(&h).is_err());
    }
}
