//! Access policy at the proxy (defence in depth; the upstream stays the primary boundary).
//!
//! A tool that the policy does not allow is removed when the catalog snapshot is built, so it
//! is absent from search, describe, the listing and the refresh counts, and `mcp_call` cannot
//! reach it even by its exact name: there is one gate, not one check per path.
//!
//! Patterns are globs (`*` any run, `?` one character), case-insensitive, matched against the
//! whole tool name; a pattern `source:GLOB` matches the tool's sources instead: its name's
//! `server-` prefix (whether or not other tools share it) and the label of the upstream that
//! lists it. The display source (`CatalogTool::source`) depends on how many tools share a
//! prefix, so matching it alone would let a deny pattern stop matching when a server is down
//! to one tool; matching both stable candidates does not.

use tool_search::model::{name_prefix, CatalogTool};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// When non-empty, only tools matching one of these are served.
    pub allow: Vec<String>,
    /// Tools matching one of these are never served (deny wins over allow).
    pub deny: Vec<String>,
    /// Serve only tools annotated `readOnlyHint: true` and not `destructiveHint: true`.
    pub read_only: bool,
    /// Tools exposed directly in `tools/list` next to the four bridges.
    pub pinned: Vec<String>,
}

impl Policy {
    /// Whether the tool may be served at all.
    pub fn allows(&self, t: &CatalogTool) -> bool {
        if !self.allow.is_empty() && !self.allow.iter().any(|p| matches(p, t)) {
            return false;
        }
        if self.deny.iter().any(|p| matches(p, t)) {
            return false;
        }
        if self.read_only {
            let hint = |k: &str| t.tool.annotation_bool(k);
            return hint("readOnlyHint") == Some(true) && hint("destructiveHint") != Some(true);
        }
        true
    }

    /// Whether an (allowed) tool is pinned into `tools/list`.
    pub fn pins(&self, t: &CatalogTool) -> bool {
        self.pinned.iter().any(|p| matches(p, t))
    }

    pub fn is_open(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty() && !self.read_only
    }
}

fn matches(pattern: &str, t: &CatalogTool) -> bool {
    match pattern.strip_prefix("source:") {
        Some(p) => {
            name_prefix(&t.tool.name).is_some_and(|prefix| glob(p, prefix))
                || glob(p, &t.upstream)
                || glob(p, &t.source)
        }
        None => glob(pattern, &t.tool.name),
    }
}

/// Case-insensitive glob match of the whole text (`*` and `?`), iterative with backtracking
/// to the last `*` (linear in practice, no recursion).
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().flat_map(char::to_lowercase).collect();
    let t: Vec<char> = text.chars().flat_map(char::to_lowercase).collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ct(name: &str, source: &str, annotations: Option<serde_json::Value>) -> CatalogTool {
        let mut tool: mcp_wire::types::Tool = serde_json::from_value(json!({"name": name})).unwrap();
        if let Some(a) = annotations {
            tool.set_member("annotations", &a);
        }
        CatalogTool {
            tool: tool.into(),
            source: source.into(),
            upstream: "u".into(),
        }
    }

    #[test]
    fn globs() {
        assert!(glob("*", ""));
        assert!(glob("gmail-*", "GMAIL-send"));
        assert!(glob("*delete*", "github-delete_repo"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(!glob("gmail-*", "xgmail-send"));
        assert!(glob("*a*b*c", "xxaxxbxxc"));
        assert!(!glob("*a*b*c", "xxaxxcxxb"));
    }

    #[test]
    fn allow_deny_and_sources() {
        let p = Policy {
            allow: vec!["source:gmail".into(), "browser_*".into()],
            deny: vec!["*delete*".into()],
            ..Default::default()
        };
        assert!(p.allows(&ct("gmail-send", "gmail", None)));
        assert!(!p.allows(&ct("gmail-delete_message", "gmail", None)));
        assert!(p.allows(&ct("browser_click", "web", None)));
        assert!(!p.allows(&ct("github-list", "github", None)));
        assert!(Policy::default().allows(&ct("x", "y", None)));
    }

    #[test]
    fn source_patterns_do_not_depend_on_how_many_tools_share_a_prefix() {
        use tool_search::model::assign_sources;
        let deny = Policy {
            deny: vec!["source:github".into()],
            ..Default::default()
        };
        let tool =
            |n: &str| std::sync::Arc::new(serde_json::from_value::<mcp_wire::types::Tool>(json!({"name": n})).unwrap());
        // The only github- tool left: its display source falls back to the upstream label.
        let lonely = assign_sources("agg", vec![tool("github-delete_repo"), tool("gmail-send")]);
        assert_eq!(lonely[0].source, "agg");
        assert!(!deny.allows(&lonely[0]), "a singleton github- tool is still denied");
        assert!(deny.allows(&lonely[1]));
        let many = assign_sources("agg", vec![tool("github-delete_repo"), tool("github-list")]);
        assert!(many.iter().all(|t| !deny.allows(t)));
        // The upstream label is a source too.
        let by_label = Policy {
            deny: vec!["source:browser".into()],
            ..Default::default()
        };
        assert!(!by_label.allows(&ct("browser_click", "browser", None)));
        let mut other = ct("x-y", "x", None);
        other.upstream = "browser".into();
        assert!(!by_label.allows(&other));
    }

    #[test]
    fn read_only_needs_the_hint_and_no_destructive_hint() {
        let p = Policy {
            read_only: true,
            ..Default::default()
        };
        assert!(p.allows(&ct("a", "s", Some(json!({"readOnlyHint": true})))));
        assert!(!p.allows(&ct(
            "b",
            "s",
            Some(json!({"readOnlyHint": true, "destructiveHint": true}))
        )));
        assert!(!p.allows(&ct("c", "s", Some(json!({"readOnlyHint": false})))));
        assert!(!p.allows(&ct("d", "s", None)));
    }
}
