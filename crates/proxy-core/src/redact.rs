//! Credentials never leave the process: URLs as logs, reports and the manifest show them.
//!
//! An upstream URL may carry a secret in its user-info (`http://user:secret@host/mcp`) or in
//! its query (`?api_key=…`). [`url`] keeps the scheme, host, port and path, and replaces the
//! user-info and every query value with `***` (which query parameters are secret cannot be
//! known, so none is shown).

/// `url` with its user-info and query values replaced by `***`.
pub fn url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let host = match authority.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => authority.to_string(),
    };
    let (path, fragment) = match tail.split_once('#') {
        Some((p, _)) => (p, "#***"),
        None => (tail, ""),
    };
    let path = match path.split_once('?') {
        Some((p, query)) => {
            let params: Vec<String> = query
                .split('&')
                .filter(|kv| !kv.is_empty())
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) => format!("{k}=***"),
                    None => "***".to_string(),
                })
                .collect();
            format!("{p}?{}", params.join("&"))
        }
        None => path.to_string(),
    };
    match scheme {
        Some(s) => format!("{s}://{host}{path}{fragment}"),
        None => format!("{host}{path}{fragment}"),
    }
}

/// The host (with port) of a URL, without user-info: what may be named in an error.
pub fn host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |x| x.1);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    authority.rsplit_once('@').map_or(authority, |x| x.1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn user_info_and_query_values_are_hidden() {
        assert_eq!(super::url("http://litellm:4000/mcp"), "http://litellm:4000/mcp");
        assert_eq!(super::url("http://u:secret@h:1/mcp"), "http://***@h:1/mcp");
        assert_eq!(
            super::url("https://h/mcp?api_key=sk-1&x=2&flag"),
            "https://h/mcp?api_key=***&x=***&***"
        );
        assert_eq!(super::url("http://h/p#tok"), "http://h/p#***");
        assert_eq!(super::url("http://a@b@h/x?k=v"), "http://***@h/x?k=***");
    }

    #[test]
    fn host_has_no_user_info() {
        assert_eq!(super::host("http://u:p@h.example:8080/mcp?k=v"), "h.example:8080");
        assert_eq!(super::host("https://h"), "h");
    }
}
