//! The header rules: reading a header as text, the `Accept` and `Content-Type` checks, the
//! `Origin` check (DNS-rebinding protection), and the header snapshot of a `tools/call`.

use std::collections::BTreeMap;

use actix_web::http::header::HeaderMap;

/// A header as text; absent and non-ASCII values are treated alike.
pub(super) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

pub(super) fn header_snapshot(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut snapshot: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers.iter() {
        let value = String::from_utf8_lossy(value.as_bytes());
        snapshot
            .entry(name.as_str().to_string())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    snapshot
}

/// Whether an `Accept` value admits both reply types (wildcards count).
pub(super) fn accepts_json_and_sse(accept: &str) -> bool {
    let types: Vec<String> = accept
        .split(',')
        .map(|part| part.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .collect();
    let admits = |exact: &str, family: &str| types.iter().any(|t| t == exact || t == family || t == "*/*");
    admits("application/json", "application/*") && admits("text/event-stream", "text/*")
}

/// Whether a `Content-Type` value names `media_type`, ignoring parameters and case.
pub(super) fn media_type_is(content_type: &str, media_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(media_type))
}

/// DNS-rebinding protection (spec: servers MUST validate `Origin`): this server is local, so
/// only loopback origins are allowed.
pub(super) fn origin_is_loopback(origin: &str) -> bool {
    let Some((_, rest)) = origin.split_once("://") else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => rest.split([':', '/']).next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "::1"
}
