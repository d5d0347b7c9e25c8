//! Tool names a client sent: checked before any work is done for them, and the closest
//! catalog names for one that does not exist.

use crate::catalog::ingest::{self, MAX_TOOL_NAME_CHARS};
use crate::catalog::resolve::{resolve, suggest, Resolution};
use crate::catalog::Snapshot;

/// A tool name a client sent, checked before any work is done for it: not longer than any
/// admitted name, and free of control and invisible characters (admitted names have none, so
/// such a name can only be a mistake or an attempt to smuggle text into logs and replies).
pub fn check_name(name: &str) -> Result<(), BadName> {
    if name.len() > MAX_TOOL_NAME_CHARS && name.chars().nth(MAX_TOOL_NAME_CHARS).is_some() {
        return Err(BadName::TooLong {
            chars: name.chars().count(),
        });
    }
    if name.chars().any(ingest::is_hidden) {
        return Err(BadName::Hidden);
    }
    Ok(())
}

/// Why a client's tool name was refused; its text tells the model what to send instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadName {
    /// Longer than any admitted name (its length in characters).
    TooLong { chars: usize },
    /// Holds control or invisible characters.
    Hidden,
}

impl std::fmt::Display for BadName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadName::TooLong { chars } => write!(
                f,
                "tool name is {chars} characters long; no tool name is longer than {MAX_TOOL_NAME_CHARS}. Use a name the search tool (mcp_search) gave"
            ),
            BadName::Hidden => f.write_str(
                "tool name contains control or invisible characters; use a name exactly as the search tool (mcp_search) returned it",
            ),
        }
    }
}

impl std::error::Error for BadName {}

/// Up to three catalog names close to a name that does not exist: one typo away, then what
/// a search for the name finds. Suggested, never run.
pub fn closest_names(snap: &Snapshot, name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if let Resolution::Repaired { index, .. } = resolve(snap, name) {
        out.push(snap.tools[index].tool.name.clone());
    }
    for i in suggest(snap, name, 3) {
        let n = &snap.tools[i].tool.name;
        if out.len() < 3 && !out.contains(n) {
            out.push(n.clone());
        }
    }
    for h in snap.index.search(name, 3) {
        if let Some(t) = snap.tools.get(h.doc) {
            if out.len() < 3 && !out.contains(&t.tool.name) {
                out.push(t.tool.name.clone());
            }
        }
    }
    out
}
