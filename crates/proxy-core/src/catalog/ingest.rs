//! Admission of upstream tool definitions into the catalog: an upstream is trusted no more
//! than a client.
//!
//! Every listing (and every manifest loaded at start) passes through [`admit`] before it can
//! reach the index, the listing in `instructions`, search hits or routing:
//! - **Names** must be 1 to [`MAX_TOOL_NAME_CHARS`] characters of printable ASCII without
//!   whitespace (`0x21..=0x7E`). The MCP specification asks for `[A-Za-z0-9_.-]`, 1–128
//!   characters; this is wider (LiteLLM prefixes names, some servers use `/` or `&`) but
//!   refuses what can deceive or break: control characters, whitespace, and every non-ASCII
//!   character, so no look-alike (a Cyrillic `е` in `dеlete_all`) or right-to-left override
//!   can stand beside a real name, and the policy and the router see the same bytes. Of
//!   23,942 real tools in the benchmark catalogs none has a name outside this set (the longest
//!   is 128 characters).
//! - **Texts**: a title over [`MAX_TITLE_CHARS`] or a description over
//!   [`MAX_DESCRIPTION_CHARS`] characters drops the tool (the longest real description is
//!   14,020 characters). Control and invisible formatting characters (C0/C1 controls other
//!   than newline and tab, bidirectional overrides and isolates, zero-width characters) are
//!   removed from titles, descriptions and the upstream's `instructions` (whose length the
//!   upstream actor caps when it reads them).
//!
//! A dropped tool is logged (WARN, with the reason and the upstream, never the offending text)
//! and counted per reason in the refresh report. The size of a whole definition is bounded
//! earlier, by the reply size cap of the listing page.

use std::sync::Arc;

use serde::Serialize;

use mcp_wire::types::Tool;

/// Longest tool name admitted, in characters.
pub const MAX_TOOL_NAME_CHARS: usize = 256;
/// Longest tool title admitted, in characters.
pub const MAX_TITLE_CHARS: usize = 1024;
/// Longest tool description admitted, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 65_536;

/// Tools of one listing that were not admitted, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// Empty, or with a control, whitespace or non-ASCII character.
    #[serde(skip_serializing_if = "is_zero")]
    pub invalid_name: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub name_too_long: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub title_too_long: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub description_too_long: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Dropped {
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    pub fn total(&self) -> usize {
        self.invalid_name + self.name_too_long + self.title_too_long + self.description_too_long
    }
}

/// Why a name is refused, if it is.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() || !name.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Some("invalid_name");
    }
    if name.len() > MAX_TOOL_NAME_CHARS {
        return Some("name_too_long");
    }
    None
}

/// Keeps the tools that may enter the catalog, with their texts cleaned; counts the others.
/// Definitions that need no cleaning are kept as the very same `Arc`.
pub fn admit(upstream: &str, tools: Vec<Arc<Tool>>) -> (Vec<Arc<Tool>>, Dropped) {
    let mut dropped = Dropped::default();
    let mut kept = Vec::with_capacity(tools.len());
    for tool in tools {
        let reason = name_problem(&tool.name).or_else(|| {
            if tool.title.as_deref().is_some_and(|t| longer_than(t, MAX_TITLE_CHARS)) {
                Some("title_too_long")
            } else if tool
                .description
                .as_deref()
                .is_some_and(|d| longer_than(d, MAX_DESCRIPTION_CHARS))
            {
                Some("description_too_long")
            } else {
                None
            }
        });
        if let Some(reason) = reason {
            match reason {
                "invalid_name" => dropped.invalid_name += 1,
                "name_too_long" => dropped.name_too_long += 1,
                "title_too_long" => dropped.title_too_long += 1,
                _ => dropped.description_too_long += 1,
            }
            // Never the name itself: it may be megabytes, or carry terminal escapes.
            log::warn!(upstream = upstream, reason = reason, name_chars = tool.name.chars().count(); "upstream tool dropped");
            continue;
        }
        let dirty = |t: &Option<String>| t.as_deref().is_some_and(|t| t.chars().any(is_hidden));
        if dirty(&tool.title) || dirty(&tool.description) {
            let mut clean = (*tool).clone();
            clean.title = clean.title.as_deref().map(clean_text);
            clean.description = clean.description.as_deref().map(clean_text);
            clean.forget_hash();
            kept.push(Arc::new(clean));
        } else {
            kept.push(tool);
        }
    }
    (kept, dropped)
}

/// An upstream's `instructions`, cleaned (their length is capped where they are read, by the
/// upstream actor's handshake).
pub fn admit_instructions(text: &str) -> String {
    clean_text(text)
}

fn longer_than(s: &str, max_chars: usize) -> bool {
    s.len() > max_chars && s.chars().nth(max_chars).is_some()
}

/// Characters that are removed from texts shown to models: controls other than newline and
/// tab, and invisible formatting characters that can reorder or hide text.
pub fn is_hidden(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c if c.is_control() => true,
        '\u{200B}'..='\u{200F}' // zero-width space/joiners, LRM, RLM
        | '\u{202A}'..='\u{202E}' // bidirectional embeddings and overrides
        | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
        | '\u{2066}'..='\u{2069}' // bidirectional isolates
        | '\u{061C}' // Arabic letter mark
        | '\u{FEFF}' => true, // zero-width no-break space
        _ => false,
    }
}

/// `text` without [`is_hidden`] characters.
pub fn clean_text(text: &str) -> String {
    text.chars().filter(|&c| !is_hidden(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(v: serde_json::Value) -> Arc<Tool> {
        Arc::new(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn names_outside_printable_ascii_or_too_long_are_dropped_and_counted() {
        let tools = vec![
            tool(json!({"name": "ok-tool_1.v2"})),
            tool(json!({"name": "PDF&URLTool"})),
            tool(json!({"name": "d\u{435}lete_all"})),
            tool(json!({"name": "bad\u{1b}[31m"})),
            tool(json!({"name": "two words"})),
            tool(json!({"name": "x".repeat(60_000)})),
            tool(json!({"name": "long-desc", "description": "y".repeat(MAX_DESCRIPTION_CHARS + 1)})),
            tool(json!({"name": "long-title", "title": "t".repeat(MAX_TITLE_CHARS + 1)})),
        ];
        let (kept, dropped) = admit("u", tools);
        let names: Vec<&str> = kept.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["ok-tool_1.v2", "PDF&URLTool"]);
        assert_eq!(
            dropped,
            Dropped {
                invalid_name: 3,
                name_too_long: 1,
                title_too_long: 1,
                description_too_long: 1
            }
        );
        assert_eq!(dropped.total(), 6);
    }

    #[test]
    fn hidden_characters_are_removed_from_texts_and_clean_tools_are_shared() {
        let clean = tool(json!({"name": "a", "description": "Plain text.\nSecond line.\tTab."}));
        let dirty = tool(
            json!({"name": "b", "title": "T\u{202E}itle", "description": "Evil\u{0}\u{1b}[2J\u{200B} text\u{2066}."}),
        );
        let (kept, _) = admit("u", vec![clean.clone(), dirty]);
        assert!(Arc::ptr_eq(&kept[0], &clean));
        assert_eq!(kept[1].title.as_deref(), Some("Title"));
        assert_eq!(kept[1].description.as_deref(), Some("Evil[2J text."));
    }

    #[test]
    fn instructions_are_cleaned() {
        assert_eq!(admit_instructions("a\u{1b}b\u{202E}c\nd"), "abc\nd");
    }
}
