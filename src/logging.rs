//! Logging: one JSON object per line on stdout (`ts`, `level`, `target`, `msg`, then the
//! record's key-value fields), or plain text for humans with `LOG_FORMAT=text`.
//!
//! Messages are constant strings; variable data goes into fields (`upstream`, `tool`,
//! `latency_ms`, ...). Tokens, session ids and tool arguments are never logged anywhere in
//! the code base: there is no field for them.

use std::io::Write;

use serde_json::{Map, Value};

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

/// Renders one record as a JSON object (pure: unit-tested below).
pub fn json_line(ts: &str, record: &log::Record<'_>) -> String {
    let mut m = Map::new();
    m.insert("ts".into(), Value::from(ts));
    m.insert(
        "level".into(),
        Value::from(record.level().as_str().to_ascii_lowercase()),
    );
    m.insert("target".into(), Value::from(record.target()));
    m.insert("msg".into(), Value::from(record.args().to_string()));
    let _ = record.key_values().visit(&mut JsonFields(&mut m));
    Value::Object(m).to_string()
}

struct JsonFields<'a>(&'a mut Map<String, Value>);

impl<'kvs> log::kv::VisitSource<'kvs> for JsonFields<'_> {
    fn visit_pair(&mut self, key: log::kv::Key<'kvs>, value: log::kv::Value<'kvs>) -> Result<(), log::kv::Error> {
        let v = if let Some(b) = value.to_bool() {
            Value::from(b)
        } else if let Some(n) = value.to_u64() {
            Value::from(n)
        } else if let Some(n) = value.to_i64() {
            Value::from(n)
        } else if let Some(f) = value.to_f64() {
            Value::from(f)
        } else {
            let s = value.to_string();
            // Fields that carry JSON text (e.g. per-source counts) are embedded as JSON.
            if (s.starts_with('{') && s.ends_with('}')) || (s.starts_with('[') && s.ends_with(']')) {
                serde_json::from_str(&s).unwrap_or(Value::String(s))
            } else {
                Value::String(s)
            }
        };
        // Reserved keys keep their meaning; a clashing field is renamed.
        let k = key.as_str();
        let k = if matches!(k, "ts" | "level" | "target" | "msg") {
            format!("field_{k}")
        } else {
            k.to_string()
        };
        self.0.insert(k, v);
        Ok(())
    }
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
    }
}
