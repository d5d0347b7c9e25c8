//! Logging: one JSON object per line on stdout (`ts`, `level`, `target`, `msg`, then the
//! record's key-value fields), or plain text for humans with `LOG_FORMAT=text`.
//!
//! Messages are constant strings; variable data goes into fields (`upstream`, `tool`,
//! `latency_ms`, ...). Tokens, session ids and tool arguments are never logged anywhere in
//! the code base: there is no field for them.

use std::io::Write;

use mcp_wire::jsonrpc::write_json;
use serde_json::Value;

use crate::config::LogFormat;

/// Installs the global logger. Idempotent enough for tests (a second call is ignored).
pub fn init(level: log::LevelFilter, format: LogFormat) {
    let mut b = env_logger::Builder::new();
    b.filter_level(level)
        // Dependency chatter stays at warn unless asked for explicitly.
        .filter_module("actix_server", log::LevelFilter::Warn.min(level))
        .filter_module("actix_http", log::LevelFilter::Warn.min(level))
        .filter_module("awc", log::LevelFilter::Warn.min(level))
        .filter_module("mio", log::LevelFilter::Warn.min(level))
        .target(env_logger::Target::Stdout);
    match format {
        LogFormat::Json => {
            b.format(|buf, record| {
                let line = json_line(&buf.timestamp_millis().to_string(), record);
                writeln!(buf, "{line}")
            });
        }
        LogFormat::Text => {
            b.format(|buf, record| {
                let mut fields = String::new();
                let _ = record.key_values().visit(&mut TextFields(&mut fields));
                writeln!(
                    buf,
                    "{} {:<5} {} {}{}",
                    buf.timestamp_millis(),
                    record.level(),
                    record.target(),
                    record.args(),
                    fields
                )
            });
        }
    }
    let _ = b.try_init();
}

/// Renders one record as a JSON object (pure: unit-tested below). Written straight into one
/// buffer: a constant message is copied, not formatted, and no map of the fields is built
/// (a line per call is on the relay's path; `docs/performance.md` has its cost). A field
/// repeated in one record would be written twice; no log call repeats one.
pub fn json_line(ts: &str, record: &log::Record<'_>) -> String {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"ts\":");
    write_json(&mut out, ts);
    out.extend_from_slice(b",\"level\":");
    write_json(&mut out, level_name(record.level()));
    out.extend_from_slice(b",\"target\":");
    write_json(&mut out, record.target());
    out.extend_from_slice(b",\"msg\":");
    match record.args().as_str() {
        Some(constant) => write_json(&mut out, constant),
        None => write_json(&mut out, &record.args().to_string()),
    }
    let _ = record.key_values().visit(&mut JsonFields(&mut out));
    out.push(b'}');
    // serde_json writes UTF-8 only.
    String::from_utf8(out).unwrap_or_default()
}

fn level_name(level: log::Level) -> &'static str {
    match level {
        log::Level::Error => "error",
        log::Level::Warn => "warn",
        log::Level::Info => "info",
        log::Level::Debug => "debug",
        log::Level::Trace => "trace",
    }
}

struct JsonFields<'a>(&'a mut Vec<u8>);

impl<'kvs> log::kv::VisitSource<'kvs> for JsonFields<'_> {
    fn visit_pair(&mut self, key: log::kv::Key<'kvs>, value: log::kv::Value<'kvs>) -> Result<(), log::kv::Error> {
        let out = &mut *self.0;
        out.push(b',');
        // Reserved keys keep their meaning; a clashing field is renamed.
        let k = key.as_str();
        if matches!(k, "ts" | "level" | "target" | "msg") {
            write_json(out, &format!("field_{k}"));
        } else {
            write_json(out, k);
        }
        out.push(b':');
        if let Some(b) = value.to_bool() {
            write_json(out, &b);
        } else if let Some(n) = value.to_u64() {
            write_json(out, &n);
        } else if let Some(n) = value.to_i64() {
            write_json(out, &n);
        } else if let Some(f) = value.to_f64() {
            write_json(out, &f);
        } else if let Some(s) = value.to_borrowed_str() {
            write_text_field(out, s);
        } else {
            write_text_field(out, &value.to_string());
        }
        Ok(())
    }
}

/// A text field: as a string, or embedded as JSON when it is JSON text (e.g. per-source
/// counts), re-written compact so that the line stays one line.
fn write_text_field(out: &mut Vec<u8>, s: &str) {
    if (s.starts_with('{') && s.ends_with('}')) || (s.starts_with('[') && s.ends_with(']')) {
        if let Ok(v) = serde_json::from_str::<Value>(s) {
            write_json(out, &v);
            return;
        }
    }
    write_json(out, s);
}

struct TextFields<'a>(&'a mut String);

impl<'kvs> log::kv::VisitSource<'kvs> for TextFields<'_> {
    fn visit_pair(&mut self, key: log::kv::Key<'kvs>, value: log::kv::Value<'kvs>) -> Result<(), log::kv::Error> {
        self.0.push_str(&format!(" {key}={value}"));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_line_has_fixed_keys_and_typed_fields() {
        let kvs: &[(&str, log::kv::Value)] = &[
            ("upstream", log::kv::Value::from("agg")),
            ("latency_ms", log::kv::Value::from(12u64)),
            ("changed", log::kv::Value::from(true)),
            ("sources", log::kv::Value::from("{\"a\":1}")),
            ("msg", log::kv::Value::from("clash")),
        ];
        let record = log::Record::builder()
            .args(format_args!("catalog refreshed"))
            .level(log::Level::Info)
            .target("proxy")
            .key_values(&kvs)
            .build();
        let line = json_line("2026-01-01T00:00:00.000Z", &record);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["msg"], "catalog refreshed");
        assert_eq!(v["level"], "info");
        assert_eq!(v["upstream"], "agg");
        assert_eq!(v["latency_ms"], 12);
        assert_eq!(v["changed"], true);
        assert_eq!(v["sources"]["a"], 1);
        assert_eq!(v["field_msg"], "clash");
        assert!(!line.contains('\n'));
        assert!(
            line.starts_with(r#"{"ts":"2026-01-01T00:00:00.000Z","level":"info","target":"proxy","msg":"catalog refreshed","upstream":"agg","#),
            "{line}"
        );
    }

    #[test]
    fn json_line_escapes_text_and_keeps_one_line() {
        let kvs: &[(&str, log::kv::Value)] = &[
            ("error", log::kv::Value::from("bad \"reply\"\nnext line")),
            ("nested", log::kv::Value::from("{\n  \"a\": [1,\n 2]\n}")),
            ("not_json", log::kv::Value::from("{oops}")),
            ("ratio", log::kv::Value::from(0.5f64)),
            ("delta", log::kv::Value::from(-3i64)),
        ];
        let n = 7;
        let line = json_line(
            "x",
            &log::Record::builder()
                .args(format_args!("computed {n}"))
                .level(log::Level::Warn)
                .target("t")
                .key_values(&kvs)
                .build(),
        );
        assert!(!line.contains('\n'), "{line}");
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["msg"], "computed 7");
        assert_eq!(v["level"], "warn");
        assert_eq!(v["error"], "bad \"reply\"\nnext line");
        assert_eq!(v["nested"]["a"][1], 2);
        assert_eq!(v["not_json"], "{oops}");
        assert_eq!(v["ratio"], 0.5);
        assert_eq!(v["delta"], -3);
    }
}
