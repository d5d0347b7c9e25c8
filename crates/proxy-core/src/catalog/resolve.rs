//! Repairing half-remembered tool names: only spellings that cannot name another tool.
//!
//! `mcp_call` runs the tool its name resolves to, so a repair must never turn one tool's name
//! into another's. Rules, tried in order; the first that yields exactly one tool wins, an
//! ambiguous rule repairs nothing:
//! 1. exact name;
//! 2. same name ignoring ASCII case and separators (`Gmail_Send-Message` →
//!    `gmail-send_message`), compared in the search's compact form (`names::compact`: the one
//!    normalisation of names, for ranking and for routing alike);
//! 3. the name without its `server-` prefix (`send_message` → `gmail-send_message`).
//!
//! A name within one typo of a tool (`wipe_disk` for `wipe_disks`) is a different name: it is
//! *suggested* (see [`suggest`]), never run. Case folding is ASCII only, so no Unicode case
//! mapping (the Kelvin sign `K` lower-cases to `k`) can make a look-alike meet a real name.
//!
//! The policy withholds tools from the snapshot; a name that would reach a withheld tool by
//! any of the rules above resolves to nothing, exactly like a name no upstream offers, so a
//! denied `fk_tool_1` neither runs nor reveals itself, and its spelling variants are refused
//! too (they could have meant it).

use super::snapshot::Snapshot;
use tool_search::names::{compact, keys, within_one_edit};

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
    let wanted = compact(name);
    if wanted.is_empty() || snap.withheld_keys.contains(&wanted) {
        return Resolution::Unknown;
    }
    let unique = |pred: &dyn Fn(&str, &str) -> bool| -> Option<usize> {
        let mut found = None;
        for (i, t) in snap.tools.iter().enumerate() {
            let (full, bare) = keys(&t.tool.name);
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
    let rules: [Rule; 2] = [
        ("case and separators", &|full, _| full == wanted),
        ("without server prefix", &|_, bare| !bare.is_empty() && bare == wanted),
    ];
    for (rule, pred) in rules {
        if let Some(index) = unique(pred) {
            return Resolution::Repaired { index, rule };
        }
    }
    Resolution::Unknown
}

/// Served tools whose name is one typo (insertion, deletion, substitution or transposition)
/// away from `name`, against the full name or the name without prefix; names of at least 5
/// characters only. For "did you mean" lists; at most `limit`, in catalog order.
pub fn suggest(snap: &Snapshot, name: &str, limit: usize) -> Vec<usize> {
    let wanted = compact(name);
    if wanted.chars().count() < 5 || wanted.len() > MAX_SUGGEST_CHARS {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, t) in snap.tools.iter().enumerate() {
        let (full, bare) = keys(&t.tool.name);
        if within_one_edit(&wanted, &full) || (!bare.is_empty() && within_one_edit(&wanted, &bare)) {
            out.push(i);
            if out.len() == limit {
                break;
            }
        }
    }
    out
}

/// Longer names get no typo suggestions: no admitted tool name is longer.
const MAX_SUGGEST_CHARS: usize = super::ingest::MAX_TOOL_NAME_CHARS;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::UpstreamState;
    use mcp_wire::types::Tool;
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
        assert_eq!(r("totally_else"), None);
        assert_eq!(r(""), None);
    }

    #[test]
    fn a_typo_is_suggested_never_resolved() {
        let s = snap(&[
            "wipe_disks",
            "browser_navigate",
            "gmail-list_messages",
            "d\u{435}lete_all",
        ]);
        let r = |n: &str| name_of(&s, resolve(&s, n));
        assert_eq!(r("wipe_disk"), None);
        assert_eq!(r("browser_navgate"), None);
        assert_eq!(r("list_mesages"), None);
        assert_eq!(r("delete_all"), None, "a Cyrillic look-alike is another name");
        let names = |n: &str| -> Vec<String> {
            suggest(&s, n, 3)
                .into_iter()
                .map(|i| s.tools[i].tool.name.clone())
                .collect()
        };
        assert_eq!(names("wipe_disk"), ["wipe_disks"]);
        assert_eq!(names("list_mesages"), ["gmail-list_messages"]);
        assert!(suggest(&s, &"x".repeat(60_000), 3).is_empty());
    }

    #[test]
    fn unicode_case_folding_does_not_repair() {
        // U+212A KELVIN SIGN lower-cases to `k` under Unicode rules.
        let s = snap(&["kill_process"]);
        assert_eq!(resolve(&s, "\u{212A}ill_process"), Resolution::Unknown);
        assert!(matches!(resolve(&s, "KILL-PROCESS"), Resolution::Repaired { .. }));
    }

    #[test]
    fn names_that_could_mean_a_withheld_tool_resolve_to_nothing() {
        let tools: Vec<Tool> = ["fk_tool_1", "fk-tool-2", "fk_Tool-3", "srv-fk_tool_3"]
            .iter()
            .map(|n| serde_json::from_value(json!({"name": n})).unwrap())
            .collect();
        let policy = crate::policy::Policy {
            deny: vec!["fk_tool_1".into(), "fk_tool-3".into()],
            ..Default::default()
        };
        let s = Snapshot::build(
            vec![UpstreamState {
                label: "u".into(),
                url: "x".into(),
                tools: tools.into_iter().map(std::sync::Arc::new).collect(),
                ..Default::default()
            }],
            1,
            &policy,
        );
        assert_eq!(resolve(&s, "fk_tool_1"), Resolution::Unknown, "denied");
        assert_eq!(
            resolve(&s, "FK-TOOL-1"),
            Resolution::Unknown,
            "a spelling of the denied name"
        );
        assert!(suggest(&s, "fk_tool_1", 3)
            .iter()
            .all(|&i| s.tools[i].tool.name != "fk_tool_1"));
        assert_eq!(
            resolve(&s, "fk_tool_2"),
            Resolution::Repaired {
                index: s.by_name["fk-tool-2"],
                rule: "case and separators"
            }
        );
        // `fk_tool_3` could mean the withheld `fk_Tool-3`, though it is also srv-fk_tool_3's bare name.
        assert_eq!(resolve(&s, "fk_tool_3"), Resolution::Unknown);
        assert!(matches!(resolve(&s, "srv-fk_tool_3"), Resolution::Exact(_)));
    }

    #[test]
    fn keys_fold_ascii_case_and_drop_separators() {
        assert_eq!(
            keys("Gmail-Send_Message"),
            ("gmailsendmessage".into(), "sendmessage".into())
        );
        assert_eq!(keys("plain"), ("plain".into(), String::new()));
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
