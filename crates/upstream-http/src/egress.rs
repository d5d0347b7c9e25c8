//! Egress proxies: which upstream connection goes through which proxy, and the `CONNECT`
//! handshake that opens the tunnel. Pure parts (environment, `NO_PROXY` matching, the request
//! and the reply head) are plain functions, unit-tested; [`tunnel`] runs the handshake on any
//! byte stream (tested on an in-memory pipe). The connection itself is opened in
//! `connector.rs` (awc's custom TCP connector and the close-delimited reader share it).
//!
//! # The rules, as common HTTP clients apply them
//! - `HTTPS_PROXY` serves `https://` upstreams, `HTTP_PROXY` serves `http://` ones; each also
//!   read in lower case, and the lower-case form wins when both are set (as curl does). The
//!   "httpoxy" reason curl has for ignoring upper-case `HTTP_PROXY` (a CGI request header that
//!   becomes an environment variable) does not apply to a long-running service whose
//!   environment is its operator's. `ALL_PROXY` is not read and SOCKS is not supported
//!   (`docs/configuration.md` says so).
//! - A proxy URL is `http://[user[:password]@]host[:port]` (no scheme means `http://`; port 80
//!   by default, as Go's and Python's clients do). Only plain-HTTP proxies are supported: an
//!   `https://` or `socks5://` proxy is a configuration error, never silently ignored.
//!   `user:password` (percent-decoded) becomes `Proxy-Authorization: Basic …` on the
//!   `CONNECT`; the credentials are kept only in that header value and never appear in a log,
//!   an error or `Debug` ([`ProxyUrl`] prints `http://***@host:port`).
//! - `NO_PROXY`: comma-separated; `*` alone means every host. An entry is a host name
//!   (`example.com`, `.example.com` and `*.example.com` all match `example.com` and every name
//!   under it; matching is case-insensitive and ignores a trailing dot), an IP literal
//!   (`10.1.2.3`, `::1`, `[::1]`), or a CIDR block (`10.0.0.0/8`, matched against IP-literal
//!   upstream hosts only: no DNS lookup is made to decide). Any entry may end in `:port`,
//!   and then matches that port only. Loopback is not bypassed implicitly (as with curl, unlike
//!   Go): list `localhost,127.0.0.1` when a local upstream must not go through the proxy.
//!
//! # Why `CONNECT` for `http://` upstreams too
//! An `http://` upstream behind `HTTP_PROXY` is also reached through a `CONNECT` tunnel, not
//! with absolute-form requests (`POST http://host/mcp`): the tunnel keeps one code path for
//! both schemes, keeps the upstream's bearer token and session headers out of the proxy's
//! request processing (the proxy sees only `host:port`), and works with awc, whose HTTP/1
//! encoder writes origin-form targets only. The cost: a proxy that allows `CONNECT` only to
//! port 443 (squid's default `SSL_ports`) refuses plain-HTTP upstreams on other ports; the
//! refusal is reported with the proxy's status (see [`EgressError`]).
//!
//! # Bounds
//! The proxy's reply head is read byte by byte (nothing of the tunnel's first bytes is
//! consumed by mistake) up to [`MAX_REPLY_HEAD`]; the time is bounded by the caller (the
//! upstream's connect timeout covers the TCP connection and the handshake).

use std::fmt;
use std::net::IpAddr;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Variables read, upper case first; the lower-case form wins when both are set.
pub const HTTPS_PROXY: [&str; 2] = ["HTTPS_PROXY", "https_proxy"];
pub const HTTP_PROXY: [&str; 2] = ["HTTP_PROXY", "http_proxy"];
pub const NO_PROXY: [&str; 2] = ["NO_PROXY", "no_proxy"];

/// A proxy's reply head larger than this is refused.
pub const MAX_REPLY_HEAD: usize = 8 * 1024;

/// One egress proxy. Its credentials live only in `authorization` and never print.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyUrl {
    /// Host name or IP address (an IPv6 address without brackets).
    pub host: String,
    pub port: u16,
    /// `Basic …`, the whole `Proxy-Authorization` value, when the URL carried credentials.
    authorization: Option<String>,
}

impl ProxyUrl {
    /// Parses `http://[user[:password]@]host[:port][/]` (or the same without `http://`). The
    /// error never repeats the URL (it may hold a password).
    pub fn parse(url: &str) -> Result<ProxyUrl, SettingError> {
        let url = url.trim();
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) => return Err(SettingError::Scheme(scheme.chars().take(16).collect())),
            None => url,
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (host, port) = split_host_port(hostport).ok_or(SettingError::NoHostPort)?;
        let port = port.unwrap_or(80);
        if port == 0 {
            return Err(SettingError::PortZero);
        }
        let authorization = match userinfo {
            None => None,
            Some(u) => {
                let (user, pass) = u.split_once(':').unwrap_or((u, ""));
                let user = percent_decode(user).ok_or(SettingError::Encoding("user name"))?;
                let pass = percent_decode(pass).ok_or(SettingError::Encoding("password"))?;
                use base64::Engine as _;
                let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                Some(format!("Basic {token}"))
            }
        };
        Ok(ProxyUrl {
            host,
            port,
            authorization,
        })
    }

    /// Whether the URL carried credentials.
    pub fn has_credentials(&self) -> bool {
        self.authorization.is_some()
    }

    /// `host:port` (IPv6 in brackets), for logs and errors.
    pub fn authority(&self) -> String {
        authority(&self.host, self.port)
    }
}

/// Never shows the credentials: `http://***@host:port` when there are some.
impl std::fmt::Display for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let creds = if self.has_credentials() { "***@" } else { "" };
        write!(f, "http://{creds}{}", self.authority())
    }
}

impl std::fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProxyUrl({self})")
    }
}

/// `host:port`, an IPv6 address in brackets.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`, `v6` → (host without brackets, port).
fn split_host_port(s: &str) -> Option<(String, Option<u16>)> {
    if s.is_empty() {
        return None;
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        host.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse().ok()?),
        };
        return Some((host.to_string(), port));
    }
    if s.parse::<std::net::Ipv6Addr>().is_ok() {
        return Some((s.to_string(), None));
    }
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(p.parse().ok()?)),
        None => (s, None),
    };
    let valid = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    valid.then(|| (host.to_ascii_lowercase(), port))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// One `NO_PROXY` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Bypass {
    /// A name and every name under it (lower case, no leading or trailing dot).
    Domain {
        name: String,
        port: Option<u16>,
    },
    Ip {
        addr: IpAddr,
        port: Option<u16>,
    },
    Cidr {
        net: IpAddr,
        prefix: u8,
    },
}

/// The parsed `NO_PROXY` list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoProxy {
    /// `*`: no upstream goes through a proxy.
    all: bool,
    entries: Vec<Bypass>,
}

impl NoProxy {
    /// Whether the list is empty (no host bypasses the proxies).
    pub fn is_empty(&self) -> bool {
        !self.all && self.entries.is_empty()
    }

    /// Parses the list; entries that are not host names, IPs or CIDR blocks are an error
    /// naming the entry (they hold no secret).
    pub fn parse(list: &str) -> Result<NoProxy, SettingError> {
        let mut out = NoProxy::default();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if entry == "*" {
                out.all = true;
                continue;
            }
            let bad = || SettingError::Bypass(entry.to_string());
            if let Some((net, prefix)) = entry.split_once('/') {
                let net: IpAddr = net.trim_matches(['[', ']']).parse().map_err(|_| bad())?;
                let max = if net.is_ipv4() { 32 } else { 128 };
                let prefix: u8 = prefix.parse().ok().filter(|p| *p <= max).ok_or_else(bad)?;
                out.entries.push(Bypass::Cidr { net, prefix });
                continue;
            }
            let trimmed = entry.trim_start_matches("*.").trim_start_matches('.');
            let (host, port) = split_host_port(trimmed).ok_or_else(bad)?;
            match host.parse::<IpAddr>() {
                Ok(addr) => out.entries.push(Bypass::Ip { addr, port }),
                Err(_) => out.entries.push(Bypass::Domain {
                    name: host.trim_end_matches('.').to_string(),
                    port,
                }),
            }
        }
        Ok(out)
    }

    /// Whether `host:port` bypasses the proxies. `host` as in a URL (an IPv6 address with or
    /// without brackets).
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.all {
            return true;
        }
        let host = host.trim_matches(['[', ']']).trim_end_matches('.').to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        self.entries.iter().any(|e| match e {
            Bypass::Domain { name, port: p } => {
                p.is_none_or(|p| p == port)
                    && (host == *name
                        || (host.len() > name.len()
                            && host.ends_with(name.as_str())
                            && host.as_bytes()[host.len() - name.len() - 1] == b'.'))
            }
            Bypass::Ip { addr, port: p } => p.is_none_or(|p| p == port) && ip == Some(*addr),
            Bypass::Cidr { net, prefix } => ip.is_some_and(|ip| in_cidr(ip, *net, *prefix)),
        })
    }
}

fn in_cidr(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let (ip, net, bits) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u32::from(a) as u128, u32::from(b) as u128, 32u32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128u32),
        _ => return false,
    };
    let shift = bits - u32::from(prefix);
    if shift >= 128 {
        return true;
    }
    (ip >> shift) == (net >> shift)
}

/// The egress settings of every upstream connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Egress {
    /// For `https://` upstreams (`HTTPS_PROXY`).
    pub https: Option<ProxyUrl>,
    /// For `http://` upstreams (`HTTP_PROXY`).
    pub http: Option<ProxyUrl>,
    pub no_proxy: NoProxy,
}

/// What is wrong with a proxy URL or a bypass list. Its text never repeats a proxy URL (it may
/// hold a password); a bypass entry (no secret) is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingError {
    /// A scheme other than `http` (its first 16 characters).
    Scheme(String),
    /// No valid `host[:port]`.
    NoHostPort,
    /// Port 0.
    PortZero,
    /// The user name or the password (named) is not valid percent-encoding.
    Encoding(&'static str),
    /// A bypass entry that is no host name, IP address or CIDR block.
    Bypass(String),
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingError::Scheme(scheme) => write!(
                f,
                "the proxy's scheme {scheme:?} is not supported: only http:// proxies (plain HTTP, CONNECT) are"
            ),
            SettingError::NoHostPort => f.write_str("the proxy URL has no valid host[:port]"),
            SettingError::PortZero => f.write_str("the proxy URL's port is 0"),
            SettingError::Encoding(part) => write!(f, "the proxy URL's {part} is not valid percent-encoding"),
            SettingError::Bypass(entry) => write!(f, "{entry:?} is not a host name, IP address or CIDR block"),
        }
    }
}

impl std::error::Error for SettingError {}

/// A bad egress variable: its name (as set) and what is wrong, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvError {
    pub var: &'static str,
    pub error: SettingError,
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.var, self.error)
    }
}

impl std::error::Error for EnvError {}

impl Egress {
    /// Reads the variables through `get` (empty values count as unset).
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Egress, EnvError> {
        let read = |names: [&'static str; 2]| -> Option<(&'static str, String)> {
            let v = |n: &'static str| {
                get(n)
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                    .map(|v| (n, v))
            };
            v(names[1]).or_else(|| v(names[0]))
        };
        let proxy = |names| -> Result<Option<ProxyUrl>, EnvError> {
            read(names)
                .map(|(var, v)| ProxyUrl::parse(&v).map_err(|error| EnvError { var, error }))
                .transpose()
        };
        let no_proxy = match read(NO_PROXY) {
            None => NoProxy::default(),
            Some((var, v)) => NoProxy::parse(&v).map_err(|error| EnvError { var, error })?,
        };
        Ok(Egress {
            https: proxy(HTTPS_PROXY)?,
            http: proxy(HTTP_PROXY)?,
            no_proxy,
        })
    }

    /// The proxy an upstream at `host:port` is reached through, if any.
    pub fn proxy_for(&self, https: bool, host: &str, port: u16) -> Option<&ProxyUrl> {
        let proxy = if https { self.https.as_ref() } else { self.http.as_ref() }?;
        (!self.no_proxy.matches(host, port)).then_some(proxy)
    }

    /// Whether any proxy is configured.
    pub fn is_direct(&self) -> bool {
        self.https.is_none() && self.http.is_none()
    }
}

/// The `CONNECT` request for `host:port` through `proxy`.
pub fn connect_request(host: &str, port: u16, proxy: &ProxyUrl) -> String {
    let target = authority(host.trim_matches(['[', ']']), port);
    let mut out = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(auth) = &proxy.authorization {
        out.push_str("Proxy-Authorization: ");
        out.push_str(auth);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out
}

/// What went wrong on the way through an egress proxy. `proxy` is `host:port` only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressError {
    /// The proxy itself could not be reached.
    Unreachable { proxy: String, detail: String },
    /// The proxy answered the `CONNECT` with a non-2xx status.
    Refused { proxy: String, status: u16, reason: String },
    /// The proxy's reply was not an HTTP/1 reply head within the bounds.
    BadReply { proxy: String, detail: String },
}

impl std::fmt::Display for EgressError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EgressError::Unreachable { proxy, detail } => write!(f, "egress proxy {proxy} unreachable: {detail}"),
            EgressError::Refused { proxy, status, reason } => {
                write!(f, "egress proxy {proxy} refused the CONNECT with HTTP {status}")?;
                if !reason.is_empty() {
                    write!(f, " {reason}")?;
                }
                Ok(())
            }
            EgressError::BadReply { proxy, detail } => {
                write!(f, "egress proxy {proxy} sent an invalid reply to CONNECT: {detail}")
            }
        }
    }
}

impl std::error::Error for EgressError {}

/// Parses the proxy's reply head at the start of `buf`: `Ok(None)` while incomplete, the
/// status and its reason phrase (at most 100 characters) once complete.
pub(crate) fn parse_reply_head(buf: &[u8]) -> Result<Option<(u16, String)>, String> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n");
    let end = end.or_else(|| buf.windows(2).position(|w| w == b"\n\n"));
    let Some(end) = end else {
        return if buf.len() > MAX_REPLY_HEAD {
            Err(format!("its reply head exceeds {MAX_REPLY_HEAD} bytes"))
        } else {
            Ok(None)
        };
    };
    let status_line = buf[..end].split(|b| *b == b'\n').next().unwrap_or_default();
    let status_line = String::from_utf8_lossy(status_line);
    let mut parts = status_line.trim_end().splitn(3, ' ');
    if !parts.next().unwrap_or("").starts_with("HTTP/1.") {
        return Err("not an HTTP/1 status line".into());
    }
    let status = parts
        .next()
        .filter(|c| c.len() == 3)
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|c| (100..600).contains(c))
        .ok_or("no valid status code")?;
    let reason: String = parts
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(100)
        .collect();
    Ok(Some((status, reason)))
}

/// Asks `proxy` (already connected on `io`) for a tunnel to `host:port` and reads its reply
/// head. On success the stream is the tunnel, with nothing of the far side's bytes consumed.
pub async fn tunnel<IO: AsyncRead + AsyncWrite + Unpin>(
    io: &mut IO,
    host: &str,
    port: u16,
    proxy: &ProxyUrl,
) -> Result<(), EgressError> {
    let name = proxy.authority();
    let io_error = |e: std::io::Error| EgressError::Unreachable {
        proxy: name.clone(),
        detail: e.to_string(),
    };
    io.write_all(connect_request(host, port, proxy).as_bytes())
        .await
        .map_err(io_error)?;
    io.flush().await.map_err(io_error)?;
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    loop {
        match io.read(&mut byte).await {
            Ok(0) => {
                return Err(EgressError::BadReply {
                    proxy: name,
                    detail: "it closed the connection before its reply".into(),
                })
            }
            Ok(_) => head.push(byte[0]),
            Err(e) => return Err(io_error(e)),
        }
        if byte[0] != b'\n' && head.len() <= MAX_REPLY_HEAD {
            continue;
        }
        match parse_reply_head(&head) {
            Ok(None) => {}
            Ok(Some((status, _))) if (200..300).contains(&status) => return Ok(()),
            Ok(Some((status, reason))) => {
                return Err(EgressError::Refused {
                    proxy: name,
                    status,
                    reason,
                })
            }
            Err(detail) => return Err(EgressError::BadReply { proxy: name, detail }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> Result<Egress, EnvError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Egress::from_lookup(&|k| map.get(k).cloned())
    }

    #[test]
    fn proxy_urls_parse_and_never_show_credentials() {
        let p = ProxyUrl::parse("http://alice:s%3Acret@Proxy.corp:3128/").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("proxy.corp", 3128));
        assert!(p.has_credentials());
        assert_eq!(p.to_string(), "http://***@proxy.corp:3128");
        assert!(!format!("{p:?}").contains("alice"));
        // base64("alice:s:cret")
        assert!(connect_request("up", 443, &p).contains("Proxy-Authorization: Basic YWxpY2U6czpjcmV0\r\n"));
        let p = ProxyUrl::parse("proxy:8080").unwrap();
        assert_eq!((p.host.as_str(), p.port, p.has_credentials()), ("proxy", 8080, false));
        assert_eq!(ProxyUrl::parse("http://10.0.0.1").unwrap().port, 80);
        let p = ProxyUrl::parse("http://[::1]:3128").unwrap();
        assert_eq!((p.host.as_str(), p.authority()), ("::1", "[::1]:3128".to_string()));
        for bad in [
            "https://p:443",
            "socks5://u:pw@p:1080",
            "http://",
            "http://u:pw@",
            "http://h:x",
            "http://h:0",
        ] {
            let e = ProxyUrl::parse(bad).unwrap_err();
            assert!(!e.to_string().contains("pw"), "{e}");
        }
    }

    #[test]
    fn lower_case_wins_and_each_scheme_has_its_proxy() {
        let e = env(&[
            ("HTTPS_PROXY", "http://upper:1"),
            ("https_proxy", "http://lower:2"),
            ("HTTP_PROXY", "http://plain:3"),
            ("NO_PROXY", "a.example"),
            ("no_proxy", "b.example"),
        ])
        .unwrap();
        assert_eq!(e.https.as_ref().unwrap().host, "lower");
        assert_eq!(e.http.as_ref().unwrap().host, "plain");
        assert_eq!(e.proxy_for(true, "x.example", 443).unwrap().host, "lower");
        assert_eq!(e.proxy_for(false, "x.example", 80).unwrap().host, "plain");
        assert!(e.proxy_for(true, "b.example", 443).is_none());
        assert!(
            e.proxy_for(true, "a.example", 443).is_some(),
            "upper-case NO_PROXY lost"
        );
        // An empty lower-case value counts as unset.
        let e = env(&[("HTTPS_PROXY", "http://upper:1"), ("https_proxy", " ")]).unwrap();
        assert_eq!(e.https.unwrap().host, "upper");
        assert!(env(&[]).unwrap().is_direct());
        assert!(env(&[("https_proxy", "http://p:1")])
            .unwrap()
            .proxy_for(false, "h", 80)
            .is_none());
        let err = env(&[("http_proxy", "socks5://u:secret@p")]).unwrap_err();
        assert_eq!(err.var, "http_proxy");
        assert!(!err.to_string().contains("secret"));
        assert_eq!(err.error, SettingError::Scheme("socks5".into()));
        assert_eq!(env(&[("NO_PROXY", "not a host")]).unwrap_err().var, "NO_PROXY");
    }

    #[test]
    fn no_proxy_matches_hosts_suffixes_ports_ips_and_cidrs() {
        let n = NoProxy::parse(
            "example.com, .corp.internal,*.svc, localhost:8080, 10.1.2.3, [::1], 192.168.0.0/16, fd00::/8",
        )
        .unwrap();
        let yes = |h: &str, p: u16| assert!(n.matches(h, p), "{h}:{p} should bypass");
        let no = |h: &str, p: u16| assert!(!n.matches(h, p), "{h}:{p} should use the proxy");
        yes("example.com", 443);
        yes("a.example.com", 443);
        yes("A.B.Example.COM.", 443);
        no("badexample.com", 443);
        no("example.com.evil", 443);
        yes("corp.internal", 80);
        yes("mcp.corp.internal", 80);
        yes("db.svc", 80);
        yes("localhost", 8080);
        no("localhost", 8081);
        yes("10.1.2.3", 1);
        no("10.1.2.4", 1);
        yes("[::1]", 8000);
        yes("::1", 8000);
        yes("192.168.7.9", 1);
        no("192.169.0.1", 1);
        yes("[fd12::5]", 1);
        no("fe80::1", 1);
        assert!(NoProxy::parse("*").unwrap().matches("anything", 1));
        assert!(!NoProxy::parse("").unwrap().matches("anything", 1));
        assert!(NoProxy::parse("10.0.0.0/33").is_err());
        assert!(NoProxy::parse("0.0.0.0/0").unwrap().matches("8.8.8.8", 1));
    }

    #[test]
    fn reply_heads_are_bounded_and_name_the_status() {
        assert_eq!(parse_reply_head(b"HTTP/1.1 200 Connection established\r\n"), Ok(None));
        assert_eq!(
            parse_reply_head(b"HTTP/1.1 200 Connection established\r\n\r\n"),
            Ok(Some((200, "Connection established".into())))
        );
        assert_eq!(
            parse_reply_head(b"HTTP/1.0 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n"),
            Ok(Some((407, "Proxy Authentication Required".into())))
        );
        assert!(parse_reply_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_reply_head(b"HTTP/1.1 2000 x\r\n\r\n").is_err());
        assert!(parse_reply_head(&vec![b'x'; MAX_REPLY_HEAD + 1]).is_err());
    }

    /// Reads a request head from `far`, answers `reply` and closes.
    async fn answer(mut far: tokio::io::DuplexStream, reply: &[u8]) {
        let mut buf = [0u8; 1024];
        let mut got = Vec::new();
        while !got.ends_with(b"\r\n\r\n") {
            match far.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        let _ = far.write_all(reply).await;
    }

    #[tokio::test]
    async fn tunnel_sends_connect_and_leaves_the_far_side_unread() {
        let proxy = ProxyUrl::parse("http://u:p@proxy:3128").unwrap();
        let (mut near, mut far) = tokio::io::duplex(64 * 1024);
        let server = async {
            let mut buf = vec![0u8; 1024];
            let mut got = Vec::new();
            while !got.ends_with(b"\r\n\r\n") {
                let n = far.read(&mut buf).await.unwrap();
                got.extend_from_slice(&buf[..n]);
            }
            far.write_all(b"HTTP/1.1 200 OK\r\n\r\nFIRST-TUNNEL-BYTES")
                .await
                .unwrap();
            String::from_utf8(got).unwrap()
        };
        let (request, result) = tokio::join!(server, tunnel(&mut near, "::1", 443, &proxy));
        result.unwrap();
        assert!(
            request.starts_with("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n"),
            "{request}"
        );
        assert!(request.contains("Proxy-Authorization: Basic dTpw\r\n"));
        let mut rest = [0u8; 18];
        near.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"FIRST-TUNNEL-BYTES");

        for (reply, want) in [
            (
                &b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n"[..],
                "HTTP 407 Proxy Authentication Required",
            ),
            (&b"HTTP/1.1 403 Forbidden\r\n\r\n"[..], "HTTP 403"),
            (&b"garbage\r\n\r\n"[..], "invalid reply"),
            (&b"HTTP/1.1 200 OK\r\n"[..], "closed the connection"),
        ] {
            let (mut near, far) = tokio::io::duplex(64 * 1024);
            let (e, _) = tokio::join!(tunnel(&mut near, "up", 443, &proxy), answer(far, reply));
            let e = e.unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
            assert!(e.to_string().contains("proxy:3128"), "{e}");
            assert!(!e.to_string().contains("u:p") && !e.to_string().contains("dTpw"), "{e}");
        }
        let (mut near, mut far) = tokio::io::duplex(64 * 1024);
        far.write_all(&vec![b'x'; MAX_REPLY_HEAD + 10]).await.unwrap();
        let e = tunnel(&mut near, "up", 443, &proxy).await.unwrap_err();
        assert!(e.to_string().contains("exceeds"), "{e}");
    }
}
