//! The semantic arm's data: the text a tool is embedded as, the tools' vectors aligned with
//! an [`Index`](crate::Index)'s tools, and cosine ranking. Pure: the vectors are computed
//! elsewhere (the `embed` crate runs the model; the service's embedding actor and the `eval`
//! command feed it), so this crate stays free of the model and its dependencies.

use crate::model::CatalogTool;

/// Tokens of a tool's text the model reads (special tokens included): 98% of real tools fit,
/// and the rest embed ~1.7x faster than at 256 (see the `embed` crate's measurements). The
/// service's embedding actor and the `eval` command cut at the same length, so their vectors
/// are the same.
pub const TOOL_MAX_TOKENS: usize = 128;

/// Tokens of a query the model reads (the model's own length; a query is clipped at
/// [`MAX_QUERY_CHARS`](crate::MAX_QUERY_CHARS) characters first).
pub const QUERY_MAX_TOKENS: usize = 256;

/// Characters of a description that can matter: the model reads 128 tokens (~500 characters
/// of English) of a tool's text; the cut keeps a megabyte-long description from costing a
/// megabyte-long tokenisation.
pub const MAX_TEXT_CHARS: usize = 1200;

/// The text a tool is embedded as: its name as words (`github-create_issue` → `github create
/// issue`), its title when it says more than the name, and its description, cut at
/// [`MAX_TEXT_CHARS`], without its web addresses ([`crate::analyzer::without_web_addresses`]:
/// a link's words stay). A name that repeats its server's name after the server prefix is read
/// once, as the lexical arm's name field reads it (`own_name` in `lib.rs`):
/// `hubspot-hubspot-batch-update-objects` → `hubspot batch update objects`,
/// `smithery.Bright_Data-brightdata-mcp_web_data_linkedin_person_profile` → `smithery Bright
/// Data web data linkedin person profile`; the model pools every token alike, so the repeat
/// only dilutes the words that tell the server's tools apart. The vector store keys vectors by
/// this text, so a tool whose text did not change keeps its vector.
pub fn embedding_text(t: &CatalogTool) -> String {
    let tool = &t.tool;
    let mut text = if crate::tool_part(&tool.name, &t.source) == tool.name {
        name_words(&tool.name)
    } else {
        format!(
            "{} {}",
            name_words(&t.source),
            name_words(crate::own_name(&tool.name, &t.source))
        )
    };
    let title = tool
        .title
        .clone()
        .or_else(|| tool.annotation_title())
        .filter(|s| !s.trim().is_empty());
    if let Some(title) = title {
        if name_words(&title).to_lowercase() != text.to_lowercase() {
            text.push_str(" (");
            text.push_str(title.trim());
            text.push(')');
        }
    }
    let description = tool.description.as_deref().unwrap_or("");
    // (the cut bounds the work on a megabyte-long description; the text is cut again below)
    let description = match description.char_indices().nth(4 * MAX_TEXT_CHARS) {
        Some((end, _)) => &description[..end],
        None => description,
    };
    let description = crate::analyzer::without_web_addresses(description);
    let description = description.trim();
    if !description.is_empty() {
        text.push_str(": ");
        text.push_str(description);
    }
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((end, _)) => text[..end].to_owned(),
        None => text,
    }
}

/// The text a query is embedded as: its first [`crate::MAX_QUERY_CHARS`] characters without
/// literal values ([`crate::analyzer::without_literals`]), and, when it reads as another
/// language, with the words the alias table knows in English
/// (`aliases::AliasTable::in_english`: the model knows only English). Callers embed
/// this, not the raw query.
pub fn query_text(query: &str) -> String {
    let text = crate::analyzer::without_literals(crate::clip_query(query));
    crate::aliases::table().in_english(&text)
}

/// `github-create_issue` → `github create issue`; `getPullRequest` → `get Pull Request`.
fn name_words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c.is_whitespace() {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            if c.is_uppercase() && p.is_lowercase() && !out.ends_with(' ') {
                out.push(' ');
            }
        }
        out.push(c);
        prev = Some(c);
    }
    out.trim_end().to_owned()
}

/// The tools' vectors, one row per tool of the index they were built for (same order), each
/// L2-normalised; a tool not embedded yet has none and is simply not reached by the arm.
#[derive(Debug, Clone, Default)]
pub struct Vectors {
    dim: usize,
    data: Vec<f32>,
    present: Vec<bool>,
    count: usize,
}

impl Vectors {
    /// Rows for `n` tools of `dim` numbers; `row(i)` gives tool `i`'s vector if it has one
    /// (a vector of another length counts as none).
    pub fn build<'a>(n: usize, dim: usize, mut row: impl FnMut(usize) -> Option<&'a [f32]>) -> Self {
        let mut data = vec![0.0f32; n * dim];
        let mut present = vec![false; n];
        let mut count = 0;
        for (i, p) in present.iter_mut().enumerate() {
            if let Some(v) = row(i).filter(|v| v.len() == dim) {
                data[i * dim..(i + 1) * dim].copy_from_slice(v);
                *p = true;
                count += 1;
            }
        }
        Self {
            dim,
            data,
            present,
            count,
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Tools with a vector.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Tools the rows were built for.
    pub fn len(&self) -> usize {
        self.present.len()
    }

    pub fn is_empty(&self) -> bool {
        self.present.is_empty()
    }

    pub fn has(&self, doc: usize) -> bool {
        self.present.get(doc).copied().unwrap_or(false)
    }

    /// Cosine similarity of tool `doc` with `query` (both unit length), if it has a vector.
    pub fn similarity(&self, doc: usize, query: &[f32]) -> Option<f32> {
        if !self.has(doc) || query.len() != self.dim {
            return None;
        }
        Some(dot(&self.data[doc * self.dim..(doc + 1) * self.dim], query))
    }

    /// The `depth` tools most similar to `query`, best first (ties by position).
    pub fn nearest(&self, query: &[f32], depth: usize) -> Vec<(usize, f32)> {
        if query.len() != self.dim || self.dim == 0 || depth == 0 {
            return Vec::new();
        }
        let mut all: Vec<(usize, f32)> = self
            .data
            .chunks_exact(self.dim)
            .enumerate()
            .filter(|(i, _)| self.present[*i])
            .map(|(i, row)| (i, dot(row, query)))
            .collect();
        let by = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if all.len() > depth {
            all.select_nth_unstable_by(depth - 1, by);
            all.truncate(depth);
        }
        all.sort_by(by);
        all
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // four accumulators: lets the compiler vectorise without reassociating one sum
    let mut acc = [0.0f32; 4];
    let (ca, ra) = a.split_at(a.len() / 4 * 4);
    let (cb, rb) = b.split_at(ca.len());
    for (x, y) in ca.chunks_exact(4).zip(cb.chunks_exact(4)) {
        for k in 0..4 {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc[0] + acc[1] + acc[2] + acc[3] + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_wire::types::Tool;
    use std::sync::Arc;

    fn tool(name: &str, title: Option<&str>, description: &str) -> CatalogTool {
        let mut v = serde_json::json!({"name": name, "description": description, "inputSchema": {"type": "object"}});
        if let Some(t) = title {
            v["title"] = t.into();
        }
        CatalogTool {
            tool: Arc::new(serde_json::from_value::<Tool>(v).unwrap()),
            source: "s".into(),
            upstream: "u".into(),
        }
    }

    #[test]
    fn the_text_reads_the_name_as_words_then_title_and_description() {
        assert_eq!(
            embedding_text(&tool("github-create_issue", None, "Create a new issue.")),
            "github create issue: Create a new issue."
        );
        assert_eq!(
            embedding_text(&tool("getPullRequest", Some("Get pull request"), "Fetch one.")),
            "get Pull Request: Fetch one.",
            "a title that only repeats the name adds nothing"
        );
        assert_eq!(
            embedding_text(&tool("pr_get", Some("Read a PR"), "")),
            "pr get (Read a PR)"
        );
        let long = "x".repeat(10_000);
        assert_eq!(embedding_text(&tool("t", None, &long)).chars().count(), MAX_TEXT_CHARS);
        assert_eq!(
            embedding_text(&tool(
                "org_access",
                None,
                "Org access. [See the docs](https://docs.x.com/a)"
            )),
            "org access: Org access. [See the docs",
            "a link's words stay, its address goes"
        );
        assert_eq!(
            embedding_text(&tool("t", None, "https://x.com/a")),
            "t",
            "a description of nothing but an address adds nothing"
        );
    }

    #[test]
    fn the_text_reads_a_name_that_repeats_its_server_once() {
        let in_source = |name: &str, source: &str| {
            let mut t = tool(name, None, "");
            t.source = source.into();
            embedding_text(&t)
        };
        assert_eq!(
            in_source("hubspot-hubspot-batch-update-objects", "hubspot"),
            "hubspot batch update objects"
        );
        assert_eq!(
            in_source(
                "smithery.Bright_Data-brightdata-mcp_web_data_linkedin_person_profile",
                "smithery.Bright_Data"
            ),
            "smithery Bright Data web data linkedin person profile"
        );
        // no repeat, or no server prefix: the name as it is
        assert_eq!(in_source("github-create_issue", "github"), "github create issue");
        assert_eq!(in_source("github_create_issue", "github"), "github create issue");
        assert_eq!(in_source("slack-slack", "slack"), "slack slack");
    }

    #[test]
    fn nearest_ranks_by_cosine_and_skips_tools_without_vectors() {
        let rows: Vec<Option<Vec<f32>>> = vec![Some(vec![1.0, 0.0]), None, Some(vec![0.6, 0.8]), Some(vec![0.0, 1.0])];
        let v = Vectors::build(4, 2, |i| rows[i].as_deref());
        assert_eq!(v.count(), 3);
        let got = v.nearest(&[0.0, 1.0], 2);
        assert_eq!(got.iter().map(|h| h.0).collect::<Vec<_>>(), vec![3, 2]);
        assert_eq!(v.similarity(1, &[0.0, 1.0]), None);
        assert!(
            v.nearest(&[1.0], 2).is_empty(),
            "a query of another length reaches nothing"
        );
    }

    #[test]
    fn dot_matches_the_plain_sum_for_every_length() {
        for n in 0..11 {
            let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
            let b: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-4);
        }
    }
}
