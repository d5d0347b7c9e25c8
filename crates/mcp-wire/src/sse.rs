//! Incremental `text/event-stream` decoder (the subset MCP uses).
//!
//! Feed it arbitrary byte chunks as they arrive; it yields complete events. Comment lines and
//! events with empty `data` (the 2025-11-25 priming event) are reported as events with empty
//! data so the caller can skip them; `retry` and `id` are kept for reconnection logic.

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    pub event: Option<String>,
    pub id: Option<String>,
    pub data: String,
    pub retry_ms: Option<u64>,
}

/// Streaming decoder state.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    /// Leading bytes of `buf` already searched for a line break (none there but perhaps a CR
    /// waiting for its LF): a long line arriving in many chunks is scanned once, not once per
    /// chunk (that was quadratic: 256 KiB in 16-byte chunks took 4.6-6.5 s in a debug build).
    scanned: usize,
    current: Event,
    has_data: bool,
    has_fields: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes buffered but not yet terminated by a newline.
    pub fn pending_len(&self) -> usize {
        self.buf.len()
    }

    /// Feeds a chunk; returns the events completed by it.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        // `start`: the current line's first byte; `from`: where the search for its end resumes
        let mut start = 0;
        let mut from = std::mem::take(&mut self.scanned);
        loop {
            let Some(rel) = self.buf[from..].iter().position(|&b| b == b'\n' || b == b'\r') else {
                from = self.buf.len();
                break;
            };
            let end = from + rel;
            let mut next = end + 1;
            // A CR LF pair is one line break; a lone CR at the very end of the buffer may be
            // the first half of a pair split across chunks, so wait for more bytes.
            if self.buf[end] == b'\r' {
                if next == self.buf.len() {
                    from = end;
                    break;
                }
                if self.buf[next] == b'\n' {
                    next += 1;
                }
            }
            let line = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
            start = next;
            from = next;
            if let Some(ev) = self.line(&line) {
                out.push(ev);
            }
        }
        self.buf.drain(..start);
        self.scanned = from - start;
        out
    }

    /// Ends the stream: a final event without its blank line is still dispatched.
    pub fn finish(&mut self) -> Option<Event> {
        if !self.buf.is_empty() {
            // the buffer holds no line break but perhaps a CR that waited for an LF: at the end
            // of the stream, that CR ends the line
            let end = self.buf.len() - usize::from(self.buf.ends_with(b"\r"));
            let line = String::from_utf8_lossy(&self.buf[..end]).into_owned();
            self.buf.clear();
            self.scanned = 0;
            if let Some(ev) = self.line(&line) {
                return Some(ev);
            }
        }
        self.dispatch()
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        self.has_fields = true;
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.current.event = Some(value.to_string()),
            "id" => self.current.id = Some(value.to_string()),
            "retry" => self.current.retry_ms = value.trim().parse().ok(),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<Event> {
        if !self.has_fields {
            return None;
        }
        self.has_data = false;
        self.has_fields = false;
        Some(std::mem::take(&mut self.current))
    }
}

/// Encodes one JSON message as an SSE `message` event.
pub fn encode_event(data: &str, id: Option<&str>) -> String {
    let mut s = String::with_capacity(data.len() + 32);
    if let Some(id) = id {
        s.push_str("id: ");
        s.push_str(id);
        s.push('\n');
    }
    s.push_str("event: message\n");
    for line in data.split('\n') {
        s.push_str("data: ");
        s.push_str(line);
        s.push('\n');
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_events_split_across_arbitrary_chunks() {
        let stream =
            b"id: 0\ndata:\n\n: keepalive\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nretry: 500\ndata: x\n\n";
        for split in 1..stream.len() {
            let mut d = Decoder::new();
            let mut evs = d.feed(&stream[..split]);
            evs.extend(d.feed(&stream[split..]));
            assert_eq!(evs.len(), 3, "split at {split}");
            assert_eq!(evs[0].data, "");
            assert_eq!(evs[0].id.as_deref(), Some("0"));
            assert_eq!(evs[1].data, "{\"a\":\n1}");
            assert_eq!(evs[1].event.as_deref(), Some("message"));
            assert_eq!(evs[2].retry_ms, Some(500));
        }
    }

    #[test]
    fn a_long_line_in_small_chunks_is_scanned_once() {
        // 256 KiB of one `data:` line in 16-byte chunks: rescanning the buffered line on every
        // chunk was 16,384 scans of up to 256 KiB (4.6-6.5 s in a debug build)
        let stream = format!("data: {}\r\n\r\n", "x".repeat(256 << 10));
        let mut d = Decoder::new();
        let start = std::time::Instant::now();
        let mut evs = Vec::new();
        for chunk in stream.as_bytes().chunks(16) {
            evs.extend(d.feed(chunk));
        }
        let took = start.elapsed();
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].data.len(), 256 << 10);
        assert_eq!(d.pending_len(), 0);
        assert!(took < std::time::Duration::from_secs(2), "took {took:?}");
    }

    #[test]
    fn a_cr_split_from_its_lf_is_one_line_break() {
        let mut d = Decoder::new();
        assert!(d.feed(b"data: a\r").is_empty());
        assert!(d.feed(b"\ndata: b\r").is_empty());
        let evs = d.feed(b"\n\r\n");
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].data, "a\nb");
    }

    #[test]
    fn finish_flushes_an_unterminated_event() {
        let mut d = Decoder::new();
        assert!(d.feed(b"data: {}").is_empty());
        assert_eq!(d.finish().map(|e| e.data), Some("{}".to_string()));
    }

    #[test]
    fn finish_reads_a_last_cr_as_a_line_break() {
        let mut d = Decoder::new();
        assert!(d.feed(b"data: x\r").is_empty());
        assert_eq!(d.finish().map(|e| e.data), Some("x".to_string()));
        let mut d = Decoder::new();
        assert!(d.feed(b"\r").is_empty());
        assert_eq!(d.finish(), None, "a blank line, not an event");
    }

    #[test]
    fn encode_round_trips() {
        let mut d = Decoder::new();
        let evs = d.feed(encode_event("{\"x\":1}", Some("7")).as_bytes());
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].data, "{\"x\":1}");
        assert_eq!(evs[0].id.as_deref(), Some("7"));
    }
}
