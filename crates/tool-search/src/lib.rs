//! Lexical tool search (pure: no actix, no I/O): `Index::build(&[CatalogTool])`, then
//! `search(query, limit)`, `search_many`, and `explain(query, doc)`.
//!
//! # Design
//!
//! Models query a tool catalog in many forms — keywords (`send gmail email`), paraphrases,
//! one word (`mail`), half-remembered names (`create issue`, `browser_navgate`), other
//! languages (`invia email`), whole pasted requests, and requests no tool serves. One scoring
//! path serves them all; each rule below exists for one of those forms. Numbers in brackets are
//! the measured effect when the rule was added (visible sets: mcptoolbench R@1/R@5, toollens
//! R@5/MRR; see `tests/search_eval.rs` for the floors and `eval` for the metrics).
//!
//! - **Analysis** ([`analyzer`]): words split at separators and camelCase, stop words out,
//!   Snowball English stems. Request scaffolding (`interested`, `provide`, `currently`,
//!   `following`) and prepositions that never name an operation (`through`, `within`) are on
//!   the stop list, so a pasted request is ranked by what it asks for [toollens MRR +0.01;
//!   `following` and the prepositions: mcptb R@1 +0.010]. A plural acronym is one word (`URLs`,
//!   not `UR` + `Ls`), and a camelCase query word the catalog knows whole stays whole (`eBay`,
//!   `GitHub`; `searchPapers` still splits) [toollens MRR +0.004].
//! - **BM25F** (k1 1.5) over six fields with weights name 4 > title = description =
//!   parameter names 2 > parameter descriptions 1.6 > source 1.5; each field is
//!   length-normalised against its own average before saturation, so one long description
//!   cannot drown a name. Parameter text counts this much because requests carry argument
//!   values the schema describes (`zip code`, `latitude`) [toollens R@5 0.30 → 0.31; giving
//!   parameter names less than descriptions cost toollens 0.01 R@5 and gained nothing].
//!   Length normalisation b is 0.85, but 1 for descriptions (a verbose one mentions much in
//!   passing) [toollens R@5 +0.003, mcptb R@1 +0.002] and 0 for parameter descriptions: they are
//!   separate texts, one per parameter, so their length counts parameters, not verbosity
//!   [toollens R@5 +0.006, MRR +0.010; mcptb R@5 +0.014; normalising by the mean length per
//!   parameter instead lost 0.001–0.006 of that]. The values a parameter's `enum` lists are
//!   indexed with its description: `news`, `france`, `markdown` are words a request carries
//!   [mcptb R@1 0.661 → 0.718, R@5 +0.024; toollens unchanged].
//!   idf is raised to the power 0.7: long requests are full of rare incidental words, and a
//!   full-strength idf lets one of them outvote the request's real subject [mcptb R@5 +0.02].
//! - **Query words, expanded** ([`query`]): each word is a group of terms it may match — itself;
//!   synonyms and translations from a small built-in table ([`aliases`], weight 0.5, or 0.9
//!   for a word the catalog lacks; `ticket` → `issue`, `invia` → `send`); name terms that
//!   contain it as a prefix/suffix of at least half their length (`mail` → `gmail`, weight 0.5;
//!   a *source* name so contained reads as that source: weight 1, the word itself 0.5 — unless
//!   the word is at least as common as that source, `search` is not `casinosearch`)
//!   [that guard: toollens R@5 +0.002, mcptb R@1 +0.003]; and for an unknown word, name words
//!   one edit away (`navgate` → `navigate`, weight 0.8). A tool scores a group's best term
//!   only, so synonyms never double-count.
//! - **Literal values** in a request — paths, URLs, e-mail addresses, selectors, quoted
//!   strings, numbers — weigh half: they are data for the call, not words about the tool
//!   [mcptb R@1 0.61 → 0.65].
//! - **Coverage**: the score is multiplied by coverage^0.6, the share of the query's weight
//!   (best weight × idf per group) the tool matched, so a tool matching the whole request beats
//!   one matching a rare word many times [essential: toollens MRR 0.42 → 0.47]. The power was
//!   1.5; a multi-need request is covered by several tools, each matching part of it, and 0.6
//!   lets the tool for a secondary need reach the top 5 [mcptb R@1 +0.016, R@5 +0.019;
//!   toollens R@5 +0.004 … +0.009, MRR +0.006; power 0 lost mcptb R@5 0.05].
//! - **Name bonus**: + 1.5 × (share of the tool's own name words the query reaches, through
//!   any of a word's terms: `email` reaches `message`) × coverage — `create issue` is
//!   `create_issue`, and `send gmail email` is `send_message` before `verify_send_as`.
//! - **Adjacent pairs**: two query words adjacent in a field (`zip code`, `press key`) add
//!   0.6 × the smaller idf [toollens MRR +0.005].
//! - **Source evidence**: every source is also scored as one document (all its tools
//!   together); 0.8 × that score joins the tool's, because a request's words are often spread
//!   over a server's tools [toollens R@5 +0.01, MRR +0.01].
//! - **Name slots**: a query equal to a tool name (any case) ranks it first; a query that
//!   spells a name with any separators, without its `server-` prefix, or (when it looks like
//!   an identifier) one edit off, puts those tools right after.
//! - **Gate** (the rarest-token gate, made robust for long queries): for a short query
//!   (≤ 4 content words) a tool must match its rarest known word or cover at least 20% of what
//!   the best tool covers; long requests are not gated (coverage already sinks stray matches,
//!   and the plain gate cost toollens 0.01–0.03 R@5). A short query's results under 5% of the
//!   best score are dropped: never padded with junk. A long request's are not: its other needs
//!   score far below its main one [toollens R@5 +0.001].
//! - **Abstain**: no known word → nothing. A short request is taken as a capability the catalog
//!   lacks → nothing, when its best tool covers little of it, unknown words included: under
//!   60% if none of its words is in the tool's name, source or title (≤ 4 content words; at
//!   five words only when synonyms carry more than half of what it matched — matching a
//!   request only through synonyms is weak evidence that the tool does what it asks), under
//!   35% even with such a word (≤ 4 words). Longer requests always get their best tools.
//!   [Was: ≤ 5 words, no label word, under 60%. Own unanswerable requests on the deployment
//!   catalog: short ones 63% → 87% abstain, the eight in `tests/search_eval.rs` 75% → 75%;
//!   the answerable ones it silenced cost toollens R@5 0.008 and mcptb R@5 0.009 before,
//!   0.007 and 0.000 now.]
//! - **Ties** break by tool name, then position: rankings do not depend on catalog order.
//!
//! Tried and dropped (measured on toollens R@5/MRR and mcptb R@1/R@5 at the time):
//! - per-source diversity (the n-th tool of a source × 0.8ⁿ … 0.4ⁿ): mcptb R@5 +0.01, toollens
//!   R@5 −0.002 … −0.013; demoting only siblings with the very same score: toollens −0.002;
//! - xQuAD over query words (after the first result, reward words the results above have not
//!   matched, λ 0.1–0.5): toollens ±0.001, mcptb R@5 −0.002 … −0.019;
//! - completeness re-ranking by uncovered query words (earlier: no gain);
//! - clause-level scoring (a request split at punctuation and `and`/`also`/`then`, each clause
//!   also scored as its own query, the best kept): toollens R@5 −0.000 … −0.005, MRR to −0.008;
//! - pseudo-relevance feedback, RM3-style (top 1–5 tools' best idf-weighted terms added at
//!   weight 0.1–0.3): toollens R@5 −0.001 … −0.003, MRR −0.001 … −0.013; mcptb R@1 −0.01 …
//!   −0.024;
//! - the Harman S-stemmer (plurals only) instead of Snowball: toollens R@5 −0.007, MRR −0.010;
//! - query term frequency (BM25 k3 0.5–10): ±0.001; dropping 1–3-digit numbers: toollens R@5
//!   −0.005 (requests repeat example values the schemas give);
//! - a gazetteer (city and country names → `city`/`country`/`location`): mcptb R@1 +0.047
//!   before enum values were indexed, ±0 after; toollens R@5 −0.004 either way;
//! - dropping a synonym whose term another query word names itself: toollens R@5 −0.002,
//!   MRR −0.005; treating a URL's site name as an intent word: no change;
//! - more scaffolding stop words (`planning`, `creating`, `see`, …): ±0.001;
//! - splitting glued name words (`getproducts`) by the catalog's vocabulary (earlier: no gain);
//! - retuning k1, idf power, field weights and the pair, source, name and synonym weights:
//!   every change within ±0.005 on toollens and moving mcptb the other way.
//!
//! # Hashing
//!
//! The index's hash maps (terms, surface words, pairs, aliases) use `rustc-hash`'s Fx hasher:
//! the standard SipHash cost a fifth of an 11k-tool build, and `rustc-hash` builds the 11,739
//! tools of `real-11k.json` ~8% faster than the hand-written Fx copy it replaced (best of 60
//! builds 119 ms against 129 ms; 2,186 M against 2,311 M instructions per build). Nothing
//! depends on a map's iteration order: tables that are iterated are sorted first
//! (`table::StrTable`).
//!
//! # Bounded work
//!
//! A query or a catalog may come from an attacker (a model relaying a user's text; an upstream
//! listing any names it likes), so no step costs more than linear time and memory in its
//! input, and a search costs at most a fixed amount whatever its query:
//! - [`Index::search`] (and `search_many`, `explain`) analyses at most [`MAX_QUERY_CHARS`]
//!   characters of a query (cut at a character boundary) and at most [`MAX_QUERY_WORDS`] of
//!   its words; the rest is ignored. `MAX_QUERY_CHARS` is exported for the HTTP layer to
//!   reject longer queries outright; the cut here holds for every caller (`mcp_describe` and
//!   `mcp_call` also search, for an unknown tool name's suggestions).
//! - Typo matching builds every one-character deletion of a word: quadratic in its length
//!   (a 60,000-character word cost 3.4 GiB). Words longer than [`MAX_TYPO_WORD_CHARS`] get
//!   none, in a query and in the index alike (no deletion keys are built for them).
//! - Name affixes are quadratic in a term's length too: terms longer than
//!   [`MAX_AFFIX_TERM_CHARS`] get no prefix/suffix keys, and a longer query word looks none up.
//! - Only a tool's first [`MAX_LABEL_WORDS`] name, source and title words feed those two
//!   tables (all its words are indexed), so a tool with a megabyte-long name or title costs
//!   what one with a megabyte-long description does.
//! - A lookup list (the tools under one compact name, the terms under one affix or deletion,
//!   a word's expansions, the name slots) can be as long as the catalog when an upstream
//!   lists look-alike names: none is scanned once per element.
//!
//! Both word caps are 40 characters: the longest name, source or title word of the 24,942
//! tools in the six benchmark catalogs has 27 (`azureterraformbestpractices`; next
//! `findpincodebysubdistrict`, 24), so no real name loses typo or affix matching and the
//! rankings are unchanged, while one word's deletions cost at most 40 × 40 bytes. The longest
//! evaluation request has 996 characters and 162 words, well within the query caps. No real
//! tool has more than 27 name, source and title words (counting generously: whole names with
//! their server prefix, stop words included), well under the 64 kept.
//!
//! Measured (limit 10): seed-examples R@1 0.944 (the maximum: seed-07 needs two tools), MRR 1.0,
//! gibberish abstains; mcptoolbench R@1 0.730, R@5 0.898, MRR 0.794; toollens R@5 0.354,
//! MRR 0.522. Speed: see `benches/search.rs`.

mod aliases;
pub mod analyzer;
mod build;
pub mod catalog_file;
pub mod eval;
mod explain;
pub mod model;
pub mod names;
mod query;
mod score;
mod table;
#[cfg(test)]
mod tests;

use rustc_hash::FxHashMap;
use table::StrTable;

use crate::model::CatalogTool;
pub use explain::Explanation;

use analyzer::Analyzer;

/// A query is analysed up to this many characters; the rest is ignored (see "Bounded work").
pub const MAX_QUERY_CHARS: usize = 4096;

/// A query is analysed up to this many words (after [`MAX_QUERY_CHARS`]).
pub const MAX_QUERY_WORDS: usize = 256;

/// Words longer than this (in characters) get no typo matching, in a query or in the index:
/// their one-character deletions would cost the square of their length.
pub const MAX_TYPO_WORD_CHARS: usize = 40;

/// Name terms longer than this (in characters) get no prefix/suffix keys (`mail` → `gmail`):
/// their affixes would cost the square of their length.
pub const MAX_AFFIX_TERM_CHARS: usize = 40;

/// Only the first this many words of a tool's name, source and title (together) become affix
/// terms and typo targets, so those tables grow with the number of tools, not with the length
/// of their names; every word is still indexed for ranking.
pub const MAX_LABEL_WORDS: usize = 64;

/// The first [`MAX_QUERY_CHARS`] characters of `query` (cut at a character boundary).
fn clip_query(query: &str) -> &str {
    match query.char_indices().nth(MAX_QUERY_CHARS) {
        Some((end, _)) => &query[..end],
        None => query,
    }
}

/// One ranked result: a position in the slice the index was built from, and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub doc: usize,
    pub score: f64,
}

/// The fields a tool is indexed under. Bit flags in a posting say where a term occurred.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// The tool's own name, without a `server-` prefix.
    Name = 0,
    /// The source (server) the tool is listed under.
    Source = 1,
    /// `title` / `annotations.title`.
    Title = 2,
    Description = 3,
    /// Top-level input parameter names.
    Param = 4,
    /// Descriptions of the top-level parameters.
    ParamDescription = 5,
}

const FIELDS: usize = 6;
const ALL_FIELDS: [Field; FIELDS] = [
    Field::Name,
    Field::Source,
    Field::Title,
    Field::Description,
    Field::Param,
    Field::ParamDescription,
];

impl Field {
    fn bit(self) -> u8 {
        1 << (self as u8)
    }
    fn label(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Source => "source",
            Field::Title => "title",
            Field::Description => "description",
            Field::Param => "parameter name",
            Field::ParamDescription => "parameter description",
        }
    }
    /// Fields that label a tool (as opposed to describing it).
    const LABELS: u8 = 0b0000_0111;
}

/// Ranking constants: one set for every catalog and query kind (no per-dataset switches).
/// The module docs say why each exists and what it measured.
#[derive(Debug, Clone)]
struct Params {
    k1: f64,
    /// BM25 length normalisation of each field (indexed by `Field as usize`).
    b: [f64; FIELDS],
    /// Length normalisation of a source read as one document.
    source_b: f64,
    /// BM25F weight of each field (indexed by `Field as usize`).
    field_weight: [f64; FIELDS],
    /// idf is raised to this power.
    idf_power: f64,
    /// Weight of a synonym of a word the catalog also knows.
    alias_weight: f64,
    /// Weight of a synonym/translation standing in for a word the catalog does not know.
    foreign_weight: f64,
    /// Weight (× length ratio) of a name term containing the query word (`mail` → `gmail`).
    substring_weight: f64,
    /// Weight left to a word that is also read as the source name containing it.
    source_affix_word_weight: f64,
    /// Weight of a name word one edit away from an unknown query word.
    typo_weight: f64,
    /// Weight of words inside literal values (paths, URLs, quotes, numbers).
    literal_weight: f64,
    /// Name bonus per unit of name coverage.
    name_bonus: f64,
    /// Exponent on query coverage.
    coverage_power: f64,
    /// Weight of an adjacent query-word pair found adjacent in a tool.
    pair_weight: f64,
    /// Weight of the tool's source's own score.
    source_weight: f64,
    /// A tool missing the rarest word still qualifies with this share of the best coverage.
    gate_floor: f64,
    /// A short query's results below this share of the best score are dropped.
    relative_cut: f64,
    /// A query of at most this many content words is short: gated, and abstains ...
    short_query_words: usize,
    /// ... when its best tool covers less than this share of it (see `Index::abstains`) ...
    abstain_coverage: f64,
    /// ... or less than this share though one of its words labels the tool.
    abstain_label_coverage: f64,
}

const PARAMS: Params = Params {
    k1: 1.5,
    // descriptions fully normalised (a verbose one mentions much in passing); parameter
    // descriptions not at all (a list of separate texts: its length counts parameters)
    b: [0.85, 0.85, 0.85, 1.0, 0.85, 0.0],
    source_b: 0.85,
    field_weight: [4.0, 1.5, 2.0, 2.0, 2.0, 1.6],
    idf_power: 0.7,
    alias_weight: 0.5,
    foreign_weight: 0.9,
    substring_weight: 0.5,
    source_affix_word_weight: 0.5,
    typo_weight: 0.8,
    literal_weight: 0.5,
    name_bonus: 1.5,
    coverage_power: 0.6,
    pair_weight: 0.6,
    source_weight: 0.8,
    gate_floor: 0.2,
    relative_cut: 0.05,
    short_query_words: 4,
    abstain_coverage: 0.6,
    abstain_label_coverage: 0.35,
};

/// A term's occurrence in one tool (packed: 9 bytes, not 12; postings are the bulk of the
/// index).
#[derive(Debug, Clone, Copy)]
#[repr(C, packed)]
struct Posting {
    doc: u32,
    /// BM25F saturated term frequency: tf~·(k1+1)/(k1+tf~), where tf~ sums the field-weighted,
    /// length-normalised frequencies. Multiplied by idf at query time.
    tf: f32,
    /// `Field::bit`s of the fields the term occurs in.
    fields: u8,
}

#[derive(Debug)]
struct Term {
    text: String,
    idf: f64,
    postings: Vec<Posting>,
    /// idf among sources (a source counts once however many of its tools have the term).
    source_idf: f64,
    /// (source, saturated tf) over the source's tools taken together.
    source_postings: Vec<(u32, f32)>,
    /// The term occurs in a source name.
    in_source: bool,
}

#[derive(Debug)]
struct Doc {
    name: String,
    /// Distinct terms of the name field: the denominator of name coverage.
    name_terms: u16,
    /// Source id (first-seen order).
    source: u32,
}

/// An immutable search index over one catalog snapshot (`Send + Sync`: shared behind an Arc).
#[derive(Debug)]
pub struct Index {
    analyzer: Analyzer,
    docs: Vec<Doc>,
    n_sources: usize,
    terms: Vec<Term>,
    term_ids: FxHashMap<String, u32>,
    /// Compact full names and compact names without the `server-` prefix → tools.
    compact_names: StrTable,
    /// Lower-case full name → tool (the exact-name short-circuit).
    exact_names: StrTable,
    /// Prefixes/suffixes (≥ 4 chars, ≥ half the term) of name-field terms of at most
    /// [`MAX_AFFIX_TERM_CHARS`] chars → terms.
    affixes: StrTable,
    /// One-character deletions of name-field surface words (5 to [`MAX_TYPO_WORD_CHARS`]
    /// chars) → surface word ids.
    deletions: StrTable,
    /// Name-field surface words (5 to [`MAX_TYPO_WORD_CHARS`] chars) and their terms: targets
    /// of typo matching.
    surfaces: Vec<(String, u32)>,
    surface_ids: FxHashMap<String, u32>,
    /// Adjacent term pairs (`zip code`, `press key`) → tools, with the fields they occur in.
    pairs: PairTable,
}

/// Adjacent term pairs → the tools they occur in, stored flat: the pair keys sorted (a binary
/// search per query pair) and one array for all occurrences; ~9 bytes per pair and 5 per
/// occurrence, no per-pair allocation.
#[derive(Debug, Default)]
struct PairTable {
    /// Pair keys ([`pair_key`]), sorted; a key's position is its pair id.
    keys: Vec<u64>,
    /// Pair id → its first entry; one more than there are pairs.
    offsets: Vec<u32>,
    /// Tools and `Field::bit`s of the fields the pair occurs in, by pair id, then tool.
    docs: Vec<u32>,
    bits: Vec<u8>,
}

impl PairTable {
    /// The tools where `key`'s two terms occur adjacent (with their field bits), in tool order.
    fn get(&self, key: u64) -> impl Iterator<Item = (u32, u8)> + '_ {
        let range = match self.keys.binary_search(&key) {
            Ok(id) => self.offsets[id] as usize..self.offsets[id + 1] as usize,
            Err(_) => 0..0,
        };
        self.docs[range.clone()]
            .iter()
            .copied()
            .zip(self.bits[range].iter().copied())
    }
}

impl Default for Index {
    fn default() -> Self {
        Index::build(&[])
    }
}

impl Index {
    pub fn build(tools: &[CatalogTool]) -> Index {
        build::build(tools, &PARAMS)
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The best `limit` tools for `query`, best first; empty when nothing matches confidently.
    /// Only the first [`MAX_QUERY_CHARS`] characters and [`MAX_QUERY_WORDS`] words of `query`
    /// count: a search's cost is bounded whatever the query.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        if limit == 0 || self.docs.is_empty() {
            return Vec::new();
        }
        let q = self.prepare(query);
        let accs = self.accumulate(&q);
        self.rank(&q, &accs, limit)
    }

    /// Several queries, each answered on its own (the `query: [..]` form of `mcp_search`).
    pub fn search_many(&self, queries: &[String], limit: usize) -> Vec<Vec<Hit>> {
        queries.iter().map(|q| self.search(q, limit)).collect()
    }

    fn term(&self, stem: &str) -> Option<u32> {
        self.term_ids.get(stem).copied()
    }
}

fn pair_key(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

/// The tool's own name: without the `server-` prefix when that prefix is its source.
fn tool_part<'a>(name: &'a str, source: &str) -> &'a str {
    name.strip_prefix(source)
        .and_then(|r| r.strip_prefix('-'))
        .filter(|r| !r.is_empty())
        .unwrap_or(name)
}

impl Index {
    /// Approximate heap bytes per part of the index (capacity-based; for memory work).
    pub fn heap_report(&self) -> Vec<(&'static str, usize)> {
        fn map_str<V>(m: &FxHashMap<String, V>) -> usize {
            m.capacity() * (std::mem::size_of::<(String, V)>() + 1) + m.keys().map(String::capacity).sum::<usize>()
        }
        vec![
            (
                "docs",
                self.docs.capacity() * std::mem::size_of::<Doc>()
                    + self.docs.iter().map(|d| d.name.capacity()).sum::<usize>(),
            ),
            (
                "terms",
                self.terms.capacity() * std::mem::size_of::<Term>()
                    + self.terms.iter().map(|t| t.text.capacity()).sum::<usize>(),
            ),
            (
                "postings",
                self.terms
                    .iter()
                    .map(|t| t.postings.capacity() * std::mem::size_of::<Posting>())
                    .sum(),
            ),
            (
                "source_postings",
                self.terms.iter().map(|t| t.source_postings.capacity() * 8).sum(),
            ),
            ("term_ids", map_str(&self.term_ids)),
            ("compact_names", self.compact_names.heap_bytes()),
            ("exact_names", self.exact_names.heap_bytes()),
            ("affixes", self.affixes.heap_bytes()),
            ("deletions", self.deletions.heap_bytes()),
            (
                "surfaces",
                self.surfaces.capacity() * 32 + self.surfaces.iter().map(|(w, _)| w.capacity()).sum::<usize>(),
            ),
            ("surface_ids", map_str(&self.surface_ids)),
            (
                "pairs",
                self.pairs.keys.capacity() * 8
                    + self.pairs.offsets.capacity() * 4
                    + self.pairs.docs.capacity() * 4
                    + self.pairs.bits.capacity(),
            ),
        ]
    }
}
