//! Repairing half-remembered tool names: only when exactly one tool fits.
//!
//! Rules, tried in order; the first that yields exactly one tool wins, an ambiguous rule
//! repairs nothing:
//! 1. exact name;
//! 2. same name ignoring case and separators (`Gmail_Send-Message` → `gmail-send_message`);
//! 3. the name without its `server-` prefix (`send_message` → `gmail-send_message`);
//! 4. one typo (insertion, deletion, substitution or transposition) in a name of at least 5
//!    characters, against the full name or the name without prefix.

use super::snapshot::Snapshot;
use crate::model::name_prefix;
use crate::search::names::within_one_edit;

/// How a name was resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    Exact(usize),
    Repaired { index: usize, rule: &'static str },
    Unknown,
}

pub fn resolve(snap: &Snapshot, name: &str) -> Resolution {
    if let Some(&i) = snap.by_name.get(name) {
        return Resolution::Exact(i);
    }
    let wanted = normalize(name);
    if wanted.is_empty() {
        return Resolution::Unknown;
    }
    let unique = |pred: &dyn Fn(&str, &str) -> bool| -> Option<usize> {
        let mut found = None;
        for (i, t) in snap.tools.iter().enumerate() {
            let full = normalize(&t.tool.name);
            let bare = name_prefix(&t.tool.name)
                .map(|p| normalize(&t.tool.name[p.len() + 1..]))
                .unwrap_or_default();
            if pred(&full, &bare) {
                if found.is_some() {
                    return None;
                }
                found = Some(i);
            }
        }
        found
    };
    type Rule<'a> = (&'static str, &'a dyn Fn(&str, &str) -> bool);
    let rules: [Rule; 3] = [
        ("case and separators", &|full, _| full == wanted),
        ("without server prefix", &|_, bare| !bare.is_empty() && bare == wanted),
        ("one typo", &|full, bare| {
            wanted.chars().count() >= 5
                && (within_one_edit(&wanted, full) || (!bare.is_empty() && within_one_edit(&wanted, bare)))
        }),
    ];
    for (rule, pred) in rules {
        if let Some(index) = unique(pred) {
            return Resolution::Repaired { index, rule };
        }
    }
    Resolution::Unknown
}

/// Lower-case, with every run of separators (`-`, `_`, `.`, `/`, `:`, space) made one `_`.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut sep = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.' | '/' | ':' | ' ') {
            sep = !out.is_empty();
        } else {
            if sep {
                out.push('_');
                sep = false;
            }
            out.extend(c.to_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::UpstreamState;
    use crate::mcp::types::Tool;
    use serde_json::json;

    fn snap(names: &[&str]) -> Snapshot {
        let tools: Vec<Tool> = names
            .iter()
            .map(|n| serde_json::from_value(json!({"name": n})).unwrap())
            .collect();
        Snapshot::build(
            vec![UpstreamState {
                label: "u".into(),
                url: "x".into(),
                tools: tools.into_iter().map(std::sync::Arc::new).collect(),
                ..Default::default()
            }],
            1,
            &Default::default(),
        )
    }

    fn name_of(s: &Snapshot, r: Resolution) -> Option<(String, &'static str)> {
        match r {
            Resolution::Exact(i) => Some((s.tools[i].tool.name.clone(), "exact")),
            Resolution::Repaired { index, rule } => Some((s.tools[index].tool.name.clone(), rule)),
            Resolution::Unknown => None,
        }
    }

    #[test]
    fn repairs_only_unambiguous_names() {
        let s = snap(&[
            "gmail-send_message",
            "gmail-list_messages",
            "slack-send_message",
            "browser_navigate",
            "github-create_issue",
        ]);
        let r = |n: &str| name_of(&s, resolve(&s, n));
        assert_eq!(r("browser_navigate"), Some(("browser_navigate".into(), "exact")));
        assert_eq!(
            r("Gmail_Send-Message"),
            Some(("gmail-send_message".into(), "case and separators"))
        );
        assert_eq!(
            r("create_issue"),
            Some(("github-create_issue".into(), "without server prefix"))
        );
        assert_eq!(r("send_message"), None, "two servers have send_message");
        assert_eq!(r("browser_navgate"), Some(("browser_navigate".into(), "one typo")));
        assert_eq!(r("list_mesages"), Some(("gmail-list_messages".into(), "one typo")));
        assert_eq!(r("totally_else"), None);
        assert_eq!(r(""), None);
    }

    #[test]
    fn normalize_folds_case_and_separators() {
        assert_eq!(normalize("  A--b__c "), "a_b_c");
    }

    #[test]
    fn one_edit_means_one_insertion_deletion_substitution_or_swap() {
        assert!(within_one_edit("abcd", "abcd"));
        assert!(within_one_edit("abcd", "abxd"));
        assert!(within_one_edit("abcd", "abd"));
        assert!(within_one_edit("abd", "abcd"));
        assert!(within_one_edit("abcd", "bacd"));
        assert!(within_one_edit("abcd", "abdc"));
        assert!(!within_one_edit("abcd", "badc"));
        assert!(!within_one_edit("abcd", "ab"));
    }
}
