//! W3C Trace Context (`traceparent`, `tracestate`) for one relayed call, as data.
//!
//! A client may send a `traceparent` as an HTTP header or, per the OpenTelemetry semantic
//! conventions for MCP, in the request's `params._meta.traceparent` (the `_meta` value wins: it
//! belongs to the MCP request itself, the header to whatever HTTP layer carried it). The proxy
//! is one hop of that trace: it keeps the client's trace id and flags and names its own span as
//! the parent of the upstream call ([`TraceParent::child`]); a client that sent none (or an
//! invalid one, which the spec says to ignore) gets a trace started by the proxy
//! ([`TraceParent::root`], sampled). `tracestate` is passed on unchanged when it is valid
//! enough to be a header value and within [`MAX_TRACESTATE_CHARS`].
//!
//! Random ids are the caller's (this crate has no random source): it passes the bytes in.

use serde_json::{Map, Value};

/// The header (and `_meta` key) names.
pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// The spec's limit for `tracestate` (32 members of at most 256 characters each would be far
/// more; vendors are told to keep it within 512).
pub const MAX_TRACESTATE_CHARS: usize = 512;

/// A parsed `traceparent` (version 00 layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    /// The span of whoever sent this header: the parent of the receiver's span.
    pub parent_id: [u8; 8],
    pub flags: u8,
}

/// The sampled flag of `trace-flags`.
pub const FLAG_SAMPLED: u8 = 0x01;

impl TraceParent {
    /// Parses a `traceparent` value. `None` for anything the spec says to ignore: wrong
    /// length or separators, upper-case or non-hex digits, version `ff`, an all-zero trace or
    /// parent id. A version above 00 is read by its 00 prefix when followed by `-` or the end
    /// (the spec's forward compatibility rule); version 00 must be exactly 55 characters.
    pub fn parse(value: &str) -> Option<TraceParent> {
        let v = value.trim_matches([' ', '\t']);
        let b = v.as_bytes();
        if b.len() < 55 {
            return None;
        }
        let version = hex_byte(&b[0..2])?;
        if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
            return None;
        }
        if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let mut trace_id = [0u8; 16];
        for (i, out) in trace_id.iter_mut().enumerate() {
            *out = hex_byte(&b[3 + 2 * i..5 + 2 * i])?;
        }
        let mut parent_id = [0u8; 8];
        for (i, out) in parent_id.iter_mut().enumerate() {
            *out = hex_byte(&b[36 + 2 * i..38 + 2 * i])?;
        }
        let flags = hex_byte(&b[53..55])?;
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceParent {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// The same trace, with `span_id` (the proxy's span) as the parent of the next hop. An
    /// all-zero `span_id` (invalid) is made valid by setting its last bit.
    pub fn child(&self, span_id: [u8; 8]) -> TraceParent {
        TraceParent {
            trace_id: self.trace_id,
            parent_id: nonzero(span_id),
            flags: self.flags,
        }
    }

    /// A new trace started by the proxy: trace id and span id from `random`, sampled.
    pub fn root(random: [u8; 24]) -> TraceParent {
        let mut trace_id = [0u8; 16];
        trace_id.copy_from_slice(&random[..16]);
        if trace_id == [0; 16] {
            trace_id[15] = 1;
        }
        let mut span_id = [0u8; 8];
        span_id.copy_from_slice(&random[16..]);
        TraceParent {
            trace_id,
            parent_id: nonzero(span_id),
            flags: FLAG_SAMPLED,
        }
    }

    /// The trace id as 32 lower-case hex digits (as logged).
    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The header value, version 00.
    pub fn header_value(&self) -> String {
        let mut out = String::with_capacity(55);
        out.push_str("00-");
        push_hex(&mut out, &self.trace_id);
        out.push('-');
        push_hex(&mut out, &self.parent_id);
        out.push('-');
        push_hex(&mut out, &[self.flags]);
        out
    }
}

/// `tracestate` if it can be passed on: at most [`MAX_TRACESTATE_CHARS`], printable ASCII
/// (a valid header value), not blank. Its members are not interpreted.
pub fn tracestate(value: &str) -> Option<&str> {
    let v = value.trim_matches([' ', '\t']);
    (!v.is_empty() && v.len() <= MAX_TRACESTATE_CHARS && v.bytes().all(|c| (0x20..=0x7e).contains(&c))).then_some(v)
}

/// What a relayed call sends upstream of its trace: the `traceparent` header and `_meta` key
/// (the proxy's span as parent), and the client's `tracestate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceHeaders {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

impl TraceHeaders {
    /// The trace id (32 hex digits) of the `traceparent` sent.
    pub fn trace_id(&self) -> Option<&str> {
        self.traceparent.get(3..35)
    }

    /// Puts the trace into a request's `_meta` (replacing what the client put there).
    pub fn stamp(&self, meta: &mut Map<String, Value>) {
        meta.insert(TRACEPARENT.into(), Value::from(self.traceparent.as_str()));
        match &self.tracestate {
            Some(s) => meta.insert(TRACESTATE.into(), Value::from(s.as_str())),
            None => meta.remove(TRACESTATE),
        };
    }
}

/// The trace of one call through the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTrace {
    /// The trace id (the client's, or a new one), 32 hex digits: the log field `trace_id`.
    pub trace_id: String,
    /// Whether the client sent a valid `traceparent` (else the proxy started the trace).
    pub from_client: bool,
    /// What goes upstream.
    pub upstream: TraceHeaders,
}

/// The trace of a call from what the client sent: `meta` (`params._meta`) first, then the
/// headers. `random`: 24 fresh random bytes (the proxy's span id, and the trace id if a new
/// trace is started).
pub fn call_trace(
    meta: Option<&Value>,
    header_traceparent: Option<&str>,
    header_tracestate: Option<&str>,
    random: [u8; 24],
) -> CallTrace {
    let meta_str = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str);
    // The tracestate goes with the traceparent it came with.
    let (incoming, state) = match meta_str(TRACEPARENT).and_then(TraceParent::parse) {
        Some(tp) => (Some(tp), meta_str(TRACESTATE)),
        None => match header_traceparent.and_then(TraceParent::parse) {
            Some(tp) => (Some(tp), header_tracestate),
            None => (None, None),
        },
    };
    let mut span = [0u8; 8];
    span.copy_from_slice(&random[16..]);
    let outgoing = match incoming {
        Some(tp) => tp.child(span),
        None => TraceParent::root(random),
    };
    CallTrace {
        trace_id: outgoing.trace_id_hex(),
        from_client: incoming.is_some(),
        upstream: TraceHeaders {
            traceparent: outgoing.header_value(),
            tracestate: incoming.and(state.and_then(tracestate)).map(str::to_string),
        },
    }
}

fn nonzero(mut id: [u8; 8]) -> [u8; 8] {
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

/// Two lower-case hex digits (the spec allows no upper case).
fn hex_byte(pair: &[u8]) -> Option<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    Some(digit(pair[0])? << 4 | digit(pair[1])?)
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 * bytes.len());
    push_hex(&mut out, bytes);
    out
}

/// Appends `bytes` as lower-case hex digits (no allocation per byte: this runs on every call).
fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_spec_example_parses_and_formats_back() {
        let tp = TraceParent::parse(TP).unwrap();
        assert_eq!(tp.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(tp.parent_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert_eq!(tp.flags, 1);
        assert_eq!(tp.header_value(), TP);
        assert_eq!(TraceParent::parse(&format!(" {TP}\t")), Some(tp), "optional whitespace");
    }

    #[test]
    fn invalid_values_are_ignored() {
        let bad = [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0z",
            "é0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
        ];
        for b in bad {
            assert_eq!(TraceParent::parse(b), None, "{b:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_00_prefix() {
        let v = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra";
        assert_eq!(
            TraceParent::parse(v).map(|t| t.trace_id_hex()).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert!(TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x").is_none());
    }

    #[test]
    fn the_proxy_span_keeps_the_trace_and_flags() {
        let tp = TraceParent::parse(TP).unwrap();
        let c = tp.child([1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            c.header_value(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-01"
        );
        assert_eq!(tp.child([0; 8]).parent_id, [0, 0, 0, 0, 0, 0, 0, 1], "never all zero");
        let r = TraceParent::root([0; 24]);
        assert!(
            TraceParent::parse(&r.header_value()).is_some(),
            "a root is always valid"
        );
        assert_eq!(r.flags, FLAG_SAMPLED);
    }

    #[test]
    fn tracestate_is_bounded_and_printable() {
        assert_eq!(tracestate(" congo=t61rcWkgMzE "), Some("congo=t61rcWkgMzE"));
        assert_eq!(tracestate(""), None);
        assert_eq!(tracestate("a=b\nc=d"), None);
        assert_eq!(tracestate("a=é"), None);
        assert!(tracestate(&"a".repeat(MAX_TRACESTATE_CHARS)).is_some());
        assert_eq!(tracestate(&"a".repeat(MAX_TRACESTATE_CHARS + 1)), None);
    }

    #[test]
    fn a_call_continues_the_client_trace_meta_first() {
        let random = [7u8; 24];
        let meta = json!({"traceparent": TP, "tracestate": "k=v"});
        let other = "00-11111111111111111111111111111111-2222222222222222-00";
        let t = call_trace(Some(&meta), Some(other), Some("h=1"), random);
        assert!(t.from_client);
        assert_eq!(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(
            t.upstream.traceparent,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0707070707070707-01"
        );
        assert_eq!(t.upstream.tracestate.as_deref(), Some("k=v"));
        assert_eq!(t.upstream.trace_id(), Some(t.trace_id.as_str()));

        let t = call_trace(Some(&json!({"traceparent": "junk"})), Some(other), Some("h=1"), random);
        assert_eq!(
            t.trace_id, "11111111111111111111111111111111",
            "the header when _meta has none"
        );
        assert_eq!(t.upstream.tracestate.as_deref(), Some("h=1"));
        assert!(t.upstream.traceparent.ends_with("-0707070707070707-00"));

        let t = call_trace(None, None, Some("orphan=1"), random);
        assert!(!t.from_client);
        assert_eq!(t.trace_id, "07".repeat(16));
        assert_eq!(t.upstream.tracestate, None, "no tracestate without its traceparent");
    }

    #[test]
    fn stamping_replaces_the_client_meta_keys() {
        let mut meta = Map::new();
        meta.insert("traceparent".into(), json!(TP));
        meta.insert("tracestate".into(), json!("old=1"));
        meta.insert("progressToken".into(), json!(3));
        let h = TraceHeaders {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-01".into(),
            tracestate: None,
        };
        h.stamp(&mut meta);
        assert_eq!(
            Value::Object(meta),
            json!({"traceparent": h.traceparent, "progressToken": 3})
        );
    }
}
