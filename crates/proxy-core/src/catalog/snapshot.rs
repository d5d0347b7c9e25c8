//! The immutable catalog snapshot and the pure merge that builds it.
//!
//! A refresh never edits a snapshot: it builds a new one from the per-upstream listings and
//! the actor swaps it in whole, so searches running on the old `Arc<Snapshot>` are never torn.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::policy::Policy;
use mcp_wire::types::Tool;
use tool_search::model::{assign_sources, CatalogTool};
use tool_search::Index;

/// What the catalog knows about one upstream: its last good listing and how fresh it is.
#[derive(Debug, Clone, Default)]
pub struct UpstreamState {
    pub label: String,
    pub url: String,
    /// The last successful listing (kept, served stale, while the upstream fails); the
    /// snapshot's `CatalogTool`s share these definitions.
    pub tools: Vec<Arc<Tool>>,
    /// Unix ms of the last successful listing; `None` if it never answered.
    pub listed_at_ms: Option<u64>,
    /// The error of the most recent listing attempt, if it failed.
    pub last_error: Option<String>,
    /// The upstream's initialize `instructions`.
    pub instructions: Option<String>,
    /// The protocol era it spoke at its last listing.
    pub era: Option<mcp_wire::Era>,
    pub protocol_version: Option<String>,
    /// A modern upstream's `ttlMs` hint for its tool list.
    pub ttl_ms: Option<u64>,
    /// The last listing was empty after a non-empty one and was not believed (the previous
    /// tools are kept); a second empty listing in a row is believed.
    pub suspect_empty: bool,
    /// Tools of the last listing that admission refused ([`super::ingest`]).
    pub dropped: super::ingest::Dropped,
}

/// A tool name offered by more than one upstream: the first in configuration order wins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Collision {
    pub name: String,
    pub kept: String,
    pub dropped: String,
}

/// One tool source (a `server-` prefix group or an upstream) with its tool count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceSummary {
    pub source: String,
    pub tools: usize,
    /// First sentence describing the source, for the tier-1 listing.
    #[serde(skip)]
    pub summary: String,
}

/// Gives the persisted index for an [`Snapshot::index_key`], if there is one.
pub type IndexLoader<'a> = dyn Fn(&str) -> Option<Index> + 'a;

/// A merged, indexed catalog.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub tools: Vec<CatalogTool>,
    pub by_name: HashMap<String, usize>,
    /// The search index over `tools` (shared with the previous snapshot when a refresh left
    /// every tool as it was, in the same order: see [`Snapshot::rebuild`]).
    pub index: Arc<Index>,
    /// Stable hash of the merged catalog (tool definitions and routing).
    pub fingerprint: String,
    /// Hash of what the index is built from: the tools in index order with their upstreams,
    /// sources and definitions (a persisted index is valid for the same key and build; see
    /// `catalog::index_file`).
    pub index_key: String,
    /// The index was built for this snapshot (not shared with the previous one, nor loaded):
    /// the one to persist.
    pub index_built: bool,
    pub sources: Vec<SourceSummary>,
    pub collisions: Vec<Collision>,
    pub upstreams: Vec<UpstreamState>,
    /// Increments on every swap; lets callers tell whether a refresh happened since they looked.
    pub generation: u64,
    /// Positions (in `tools`) of the tools pinned into `tools/list`, in name order.
    pub pinned: Vec<usize>,
    /// Tools the policy withheld (for logs only; they are nowhere else).
    pub withheld: usize,
    /// Normalized full and bare names of the withheld tools ([`tool_search::names::keys`]): a
    /// name that could mean one of them is never repaired into another tool.
    pub withheld_keys: std::collections::HashSet<String>,
    /// Compiled input-schema validators, aligned with `tools`, compiled on first use (shared
    /// like `index`).
    pub validators: Arc<[crate::args::CachedValidator]>,
}

/// The names of a snapshot's pinned tools (`PINNED_TOOLS`: called by their own names), as
/// data a tool call is parsed against (see `tools::ToolRequest::parse`).
#[derive(Debug, Clone, Copy)]
pub struct PinnedNames<'a> {
    tools: &'a [CatalogTool],
    at: &'a [usize],
}

impl PinnedNames<'_> {
    /// No pinned tools.
    pub const NONE: PinnedNames<'static> = PinnedNames { tools: &[], at: &[] };

    /// Whether `name` is a pinned tool's.
    pub fn contains(&self, name: &str) -> bool {
        self.at.iter().any(|&i| self.tools[i].tool.name == name)
    }
}

impl Snapshot {
    /// The names of its pinned tools.
    pub fn pinned_names(&self) -> PinnedNames<'_> {
        PinnedNames {
            tools: &self.tools,
            at: &self.pinned,
        }
    }

    /// Merges upstream states (in configuration order) into a snapshot, keeping only the
    /// tools the policy allows.
    pub fn build(upstreams: Vec<UpstreamState>, generation: u64, policy: &Policy) -> Snapshot {
        Snapshot::build_on(upstreams, generation, policy, None, None)
    }

    /// [`Snapshot::build`] with the index taken from `load` when it has one for the snapshot's
    /// [`Snapshot::index_key`] (a start from the manifest and its persisted index builds none).
    pub fn build_loading(
        upstreams: Vec<UpstreamState>,
        generation: u64,
        policy: &Policy,
        load: &IndexLoader,
    ) -> Snapshot {
        Snapshot::build_on(upstreams, generation, policy, None, Some(load))
    }

    /// [`Snapshot::build`] after `previous`: when the merged catalog has the same tools as
    /// `previous` in the same order (a refresh that changed nothing, the common case), the
    /// index and the compiled validators are `previous`'s, shared, not built again; so a
    /// refresh that changes nothing holds no second index, even for a moment.
    pub fn rebuild(upstreams: Vec<UpstreamState>, generation: u64, policy: &Policy, previous: &Snapshot) -> Snapshot {
        Snapshot::build_on(upstreams, generation, policy, Some(previous), None)
    }

    fn build_on(
        upstreams: Vec<UpstreamState>,
        generation: u64,
        policy: &Policy,
        previous: Option<&Snapshot>,
        load: Option<&IndexLoader>,
    ) -> Snapshot {
        let mut tools: Vec<CatalogTool> = Vec::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        let mut collisions = Vec::new();
        let mut withheld = 0;
        let mut withheld_keys = std::collections::HashSet::new();
        for up in &upstreams {
            for ct in assign_sources(&up.label, up.tools.clone()) {
                if !policy.allows(&ct) {
                    withheld += 1;
                    let (full, bare) = tool_search::names::keys(&ct.tool.name);
                    withheld_keys.insert(full);
                    if !bare.is_empty() {
                        withheld_keys.insert(bare);
                    }
                    continue;
                }
                if let Some(&i) = by_name.get(&ct.tool.name) {
                    collisions.push(Collision {
                        name: ct.tool.name.clone(),
                        kept: tools[i].upstream.clone(),
                        dropped: ct.upstream.clone(),
                    });
                    continue;
                }
                by_name.insert(ct.tool.name.clone(), tools.len());
                tools.push(ct);
            }
        }
        let fingerprint = fingerprint(&tools);
        let index_key = index_key(&tools);
        let sources = summarize_sources(&tools, &upstreams);
        let mut index_built = false;
        let (index, validators) = match previous.filter(|p| same_tools(&p.tools, &tools)) {
            Some(p) => (p.index.clone(), p.validators.clone()),
            None => {
                let index = load.and_then(|load| load(&index_key)).unwrap_or_else(|| {
                    index_built = true;
                    Index::build(&tools)
                });
                (Arc::new(index), (0..tools.len()).map(|_| Default::default()).collect())
            }
        };
        let mut pinned: Vec<usize> = (0..tools.len()).filter(|&i| policy.pins(&tools[i])).collect();
        pinned.sort_by(|&a, &b| tools[a].tool.name.cmp(&tools[b].tool.name));
        Snapshot {
            tools,
            by_name,
            index,
            fingerprint,
            index_key,
            index_built,
            sources,
            collisions,
            upstreams,
            generation,
            validators,
            pinned,
            withheld,
            withheld_keys,
        }
    }

    /// The definition hash of the tool named `name` ([`tool_hash`]).
    pub fn hash_of(&self, name: &str) -> Option<u64> {
        self.get(name).map(|t| tool_hash_u64(&t.tool))
    }

    pub fn get(&self, name: &str) -> Option<&CatalogTool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// Tool count per source, sorted by source.
    pub fn counts_by_source(&self) -> BTreeMap<String, usize> {
        self.sources.iter().map(|s| (s.source.clone(), s.tools)).collect()
    }

    /// The tier-1 listing for `instructions`: tools grouped by source (sorted, byte-stable).
    ///
    /// In full it has one line per tool. When that exceeds `max_chars`, sources degrade one
    /// at a time, largest first: first to their names only, then (if still too long) to one
    /// `source: first sentence (N tools)` line; if even that is too long, the last sources are
    /// cut and counted.
    pub fn listing(&self, max_chars: usize) -> String {
        let groups = self.groups();
        let mut levels = vec![Detail::Tools; groups.len()];
        let render = |i: usize, level: Detail| render_source(&self.sources[i], &groups[i], level);
        let mut sizes: Vec<usize> = (0..groups.len()).map(|i| render(i, Detail::Tools).len()).collect();
        let mut total: usize = sizes.iter().sum();
        let mut by_size: Vec<usize> = (0..groups.len()).collect();
        by_size.sort_by(|&a, &b| self.sources[b].tools.cmp(&self.sources[a].tools).then(a.cmp(&b)));
        for next in [Detail::Names, Detail::Summary] {
            for &i in &by_size {
                if total <= max_chars {
                    break;
                }
                let size = render(i, next).len();
                total = total - sizes[i] + size;
                sizes[i] = size;
                levels[i] = next;
            }
        }
        let mut out = String::new();
        for (i, &level) in levels.iter().enumerate() {
            let text = render(i, level);
            if out.len() + text.len() > max_chars {
                let rest = groups.len() - i;
                out.push_str(&format!(
                    "… and {rest} more sources (find them with the search tool, mcp_search)\n"
                ));
                break;
            }
            out.push_str(&text);
        }
        out
    }

    /// Tools of each source (aligned with `sources`), sorted by name.
    fn groups(&self) -> Vec<Vec<&CatalogTool>> {
        let mut pos: HashMap<&str, usize> = HashMap::new();
        for (i, s) in self.sources.iter().enumerate() {
            pos.insert(s.source.as_str(), i);
        }
        let mut groups: Vec<Vec<&CatalogTool>> = vec![Vec::new(); self.sources.len()];
        for t in &self.tools {
            if let Some(&i) = pos.get(t.source.as_str()) {
                groups[i].push(t);
            }
        }
        for g in &mut groups {
            g.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
        }
        groups
    }
}

/// How much of a source the listing shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    Tools,
    Names,
    Summary,
}

fn render_source(s: &SourceSummary, tools: &[&CatalogTool], level: Detail) -> String {
    let noun = if s.tools == 1 { "tool" } else { "tools" };
    match level {
        Detail::Tools => {
            let mut out = format!("{} ({} {noun}):\n", s.source, s.tools);
            for t in tools {
                let first = first_sentence(t.tool.description_str());
                if first.is_empty() {
                    out.push_str(&format!("- {}\n", t.tool.name));
                } else {
                    out.push_str(&format!("- {}: {first}\n", t.tool.name));
                }
            }
            out
        }
        Detail::Names => {
            let names: Vec<&str> = tools.iter().map(|t| t.tool.name.as_str()).collect();
            format!("{} ({} {noun}): {}\n", s.source, s.tools, names.join(", "))
        }
        Detail::Summary if s.summary.is_empty() => format!("{} ({} {noun})\n", s.source, s.tools),
        Detail::Summary => format!("{}: {} ({} {noun})\n", s.source, s.summary, s.tools),
    }
}

/// Hash of a tool definition in canonical form (object keys sorted), so a mere key reorder
/// by the upstream is not reported as a change.
///
/// The bytes hashed are those of the serialized tool with every object's keys sorted, streamed
/// into the hasher from the tool itself: no copy of the definition is built.
pub fn tool_hash(tool: &Tool) -> String {
    format!("{:016x}", tool_hash_u64(tool))
}

/// [`tool_hash`] as a number (its first 8 bytes, big-endian), cached in the tool.
pub fn tool_hash_u64(tool: &Tool) -> u64 {
    tool.hash_with(compute_tool_hash)
}

fn compute_tool_hash(tool: &Tool) -> u64 {
    enum Member<'a> {
        Str(&'a str),
        Val(Value),
    }
    let rest = tool.rest();
    let mut members: Vec<(Cow<'_, str>, Member<'_>)> = Vec::with_capacity(8);
    members.push(("name".into(), Member::Str(&tool.name)));
    if let Some(t) = &tool.title {
        members.push(("title".into(), Member::Str(t)));
    }
    if let Some(d) = &tool.description {
        members.push(("description".into(), Member::Str(d)));
    }
    for (k, v) in rest.members() {
        members.push((k, Member::Val(serde_json::from_str(v.get()).unwrap_or(Value::Null))));
    }
    members.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = HashWriter(Sha256::new());
    out.0.update(b"{");
    for (i, (k, m)) in members.iter().enumerate() {
        if i > 0 {
            out.0.update(b",");
        }
        let _ = serde_json::to_writer(&mut out, k);
        out.0.update(b":");
        match m {
            Member::Str(s) => {
                let _ = serde_json::to_writer(&mut out, s);
            }
            Member::Val(v) => write_canonical(v, &mut out),
        }
    }
    out.0.update(b"}");
    let digest = out.0.finalize();
    u64::from_be_bytes(digest[..8].try_into().expect("a SHA-256 digest has 32 bytes"))
}

/// Feeds what is written into a SHA-256.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether two merged catalogs hold the same definitions, sources and routes in the same
/// order (what the index and the validators are built from). Unchanged definitions are the
/// same `Arc` (the listing reuses them), so this is a pointer comparison for each tool; a
/// definition that came again as a copy must be equal byte for byte (not only by its
/// canonical hash: members in another order could index differently).
fn same_tools(a: &[CatalogTool], b: &[CatalogTool]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.upstream == y.upstream && x.source == y.source && (Arc::ptr_eq(&x.tool, &y.tool) || *x.tool == *y.tool)
        })
}

fn fingerprint(tools: &[CatalogTool]) -> String {
    let mut entries: Vec<(&str, &str, String)> = tools
        .iter()
        .map(|t| (t.tool.name.as_str(), t.upstream.as_str(), tool_hash(&t.tool)))
        .collect();
    entries.sort_unstable();
    let mut hasher = Sha256::new();
    for (name, upstream, h) in entries {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(upstream.as_bytes());
        hasher.update([0]);
        hasher.update(h.as_bytes());
        hasher.update([b'\n']);
    }
    hex16(&hasher.finalize())
}

/// [`Snapshot::index_key`]: the tools in order (the index's tool ids are their positions).
fn index_key(tools: &[CatalogTool]) -> String {
    let mut hasher = Sha256::new();
    for t in tools {
        for part in [t.tool.name.as_str(), t.upstream.as_str(), t.source.as_str()] {
            hasher.update(part.as_bytes());
            hasher.update([0]);
        }
        hasher.update(tool_hash_u64(&t.tool).to_le_bytes());
    }
    hex16(&hasher.finalize())
}

fn hex16(bytes: &[u8]) -> String {
    bytes.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn write_canonical(v: &Value, out: &mut HashWriter) {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.0.update(b"{");
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.0.update(b",");
                }
                let _ = serde_json::to_writer(&mut *out, k);
                out.0.update(b":");
                write_canonical(v, out);
            }
            out.0.update(b"}");
        }
        Value::Array(a) => {
            out.0.update(b"[");
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.0.update(b",");
                }
                write_canonical(x, out);
            }
            out.0.update(b"]");
        }
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

fn summarize_sources(tools: &[CatalogTool], upstreams: &[UpstreamState]) -> Vec<SourceSummary> {
    let mut groups: BTreeMap<&str, Vec<&CatalogTool>> = BTreeMap::new();
    for t in tools {
        groups.entry(t.source.as_str()).or_default().push(t);
    }
    groups
        .into_iter()
        .map(|(source, members)| {
            // An upstream's own instructions describe it best; otherwise the description of
            // the source's first tool by name.
            let from_upstream = upstreams
                .iter()
                .find(|u| u.label == source)
                .and_then(|u| u.instructions.as_deref())
                .map(first_sentence)
                .filter(|s| !s.is_empty());
            let summary = from_upstream.unwrap_or_else(|| {
                members
                    .iter()
                    .min_by(|a, b| a.tool.name.cmp(&b.tool.name))
                    .map(|t| first_sentence(t.tool.description_str()))
                    .unwrap_or_default()
            });
            SourceSummary {
                source: source.to_string(),
                tools: members.len(),
                summary,
            }
        })
        .collect()
}

/// The first sentence of a text, on one line, clipped to 120 characters.
pub fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if c == '\n' {
            end = i;
            break;
        }
        if matches!(c, '.' | '!' | '?') {
            let next = text[i + c.len_utf8()..].chars().next();
            if next.is_none_or(char::is_whitespace) {
                end = i + c.len_utf8();
                break;
            }
        }
    }
    clip(text[..end].trim(), 120)
}

/// Clips to `max` characters, marking the cut with an ellipsis.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s = s.trim_end().to_string();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, desc: &str) -> Tool {
        serde_json::from_value(json!({"name": name, "description": desc, "inputSchema": {"type": "object"}})).unwrap()
    }

    fn state(label: &str, tools: Vec<Tool>) -> UpstreamState {
        UpstreamState {
            label: label.into(),
            url: format!("http://{label}/mcp"),
            tools: tools.into_iter().map(Arc::new).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn first_upstream_wins_collisions_and_they_are_reported() {
        let a = state("a", vec![tool("x-one", "A one."), tool("x-two", "A two.")]);
        let b = state("b", vec![tool("x-one", "B one."), tool("y", "B y.")]);
        let s = Snapshot::build(vec![a, b], 1, &Policy::default());
        assert_eq!(s.tools.len(), 3);
        assert_eq!(s.get("x-one").unwrap().upstream, "a");
        assert_eq!(
            s.collisions,
            vec![Collision {
                name: "x-one".into(),
                kept: "a".into(),
                dropped: "b".into()
            }]
        );
    }

    #[test]
    fn a_rebuild_with_the_same_tools_in_the_same_order_shares_the_index_and_validators() {
        let (a, b) = (Arc::new(tool("x-a", "Send mail.")), Arc::new(tool("x-b", "Read mail.")));
        let st = |tools: Vec<Arc<Tool>>| {
            vec![UpstreamState {
                tools,
                ..state("u", vec![])
            }]
        };
        let first = Snapshot::build(st(vec![a.clone(), b.clone()]), 1, &Policy::default());
        // the same definitions (shared, or equal copies): the index is the previous one
        let same = Snapshot::rebuild(st(vec![a.clone(), b.clone()]), 2, &Policy::default(), &first);
        assert!(Arc::ptr_eq(&first.index, &same.index));
        assert!(Arc::ptr_eq(&first.validators, &same.validators));
        let copies = vec![Arc::new(tool("x-a", "Send mail.")), Arc::new(tool("x-b", "Read mail."))];
        assert!(Arc::ptr_eq(
            &first.index,
            &Snapshot::rebuild(st(copies), 2, &Policy::default(), &first).index
        ));
        // another order, a changed definition, or one tool more: a new index
        for tools in [
            vec![b.clone(), a.clone()],
            vec![a.clone(), Arc::new(tool("x-b", "Read mail, changed."))],
            vec![a.clone(), b.clone(), Arc::new(tool("x-c", "Delete mail."))],
        ] {
            let next = Snapshot::rebuild(st(tools), 2, &Policy::default(), &first);
            assert!(!Arc::ptr_eq(&first.index, &next.index));
            assert_eq!(next.validators.len(), next.tools.len());
            assert_eq!(
                next.index.search("mail", 5).len(),
                next.tools.len(),
                "the new index covers every tool"
            );
        }
    }

    #[test]
    fn fingerprint_ignores_order_and_key_order_but_sees_changes() {
        let t1 = tool("x-a", "A.");
        let t2 = tool("x-b", "B.");
        let s1 = Snapshot::build(vec![state("u", vec![t1.clone(), t2.clone()])], 1, &Policy::default());
        let s2 = Snapshot::build(vec![state("u", vec![t2.clone(), t1.clone()])], 2, &Policy::default());
        assert_eq!(s1.fingerprint, s2.fingerprint);
        let reordered: Tool =
            serde_json::from_value(json!({"inputSchema": {"type": "object"}, "description": "A.", "name": "x-a"}))
                .unwrap();
        assert_eq!(tool_hash(&reordered), tool_hash(&t1));
        let s3 = Snapshot::build(
            vec![state("u", vec![tool("x-a", "A changed."), t2])],
            3,
            &Policy::default(),
        );
        assert_ne!(s1.fingerprint, s3.fingerprint);
    }

    #[test]
    fn listing_is_sorted_stable_and_degrades_largest_first() {
        let tools = vec![
            tool("mail-send", "Send an email. More text."),
            tool("mail-list", "List emails."),
            tool("mail-get", "Get an email."),
            tool("cal-x", "Cal x."),
            tool("cal-y", "Cal y."),
        ];
        let s = Snapshot::build(vec![state("agg", tools.clone())], 1, &Policy::default());
        let full = s.listing(10_000);
        assert_eq!(
            full,
            "cal (2 tools):\n- cal-x: Cal x.\n- cal-y: Cal y.\nmail (3 tools):\n- mail-get: Get an email.\n- mail-list: List emails.\n- mail-send: Send an email.\n"
        );
        assert_eq!(
            Snapshot::build(vec![state("agg", tools)], 2, &Policy::default()).listing(10_000),
            full
        );
        // The largest source (mail) degrades to names first.
        let names = s.listing(full.len() - 1);
        assert_eq!(
            names,
            "cal (2 tools):\n- cal-x: Cal x.\n- cal-y: Cal y.\nmail (3 tools): mail-get, mail-list, mail-send\n"
        );
        // Then every source to names, then summaries.
        assert_eq!(
            s.listing(names.len() - 1),
            "cal (2 tools): cal-x, cal-y\nmail (3 tools): mail-get, mail-list, mail-send\n"
        );
        assert_eq!(
            s.listing(60),
            "cal (2 tools): cal-x, cal-y\nmail: Get an email. (3 tools)\n"
        );
        assert_eq!(s.listing(52), "cal: Cal x. (2 tools)\nmail: Get an email. (3 tools)\n");
        // Below even that, sources are cut and counted.
        assert_eq!(
            s.listing(30),
            "cal: Cal x. (2 tools)\n… and 1 more sources (find them with the search tool, mcp_search)\n"
        );
    }

    #[test]
    fn first_sentence_rules() {
        assert_eq!(first_sentence("Send mail. Then more."), "Send mail.");
        assert_eq!(first_sentence("Version 1.2 is here"), "Version 1.2 is here");
        assert_eq!(first_sentence("Line one\nline two"), "Line one");
        assert_eq!(first_sentence(""), "");
        assert_eq!(first_sentence(&"x".repeat(300)).chars().count(), 120);
    }
}
