//! Tool search (pure: no actix, no I/O, no model): `Index::build(&[CatalogTool])` once per
//! catalog, then `search(query, limit)` (lexical), `search_hybrid(query, limit, semantic)`
//! (lexical fused with a sentence-embedding arm whose vectors the caller supplies),
//! `search_many`, `explain` and `explain_hybrid` against it.
//!
//! # Layout
//!
//! The proxy's `mcp_search`, the CLI's `search` and `eval` commands, the CI floor test and the
//! benches all rank through this one path. The index is built once per catalog snapshot and is
//! immutable; a search analyses its query, accumulates per-tool scores over the postings it
//! reaches, and ranks. The modules, in the order data flows through them:
//!
//! * [`model`]: `CatalogTool` (an upstream tool and the source it is listed under) and
//!   `assign_sources`. The catalog's own data, shared by the index, the manifest and the CLI,
//!   so every caller ranks the same tools the same way.
//! * [`catalog_file`]: reads a catalog file (flat, per-upstream, or the proxy's manifest) for the
//!   CLI, tests and benches, assigning sources as the service does.
//! * [`analyzer`]: text → words → terms (splitting, stop words, stemming), and a query's words
//!   marked as literal values. One module for indexing and querying alike, so a query word and
//!   a catalog word meet only when they normalise to the same term.
//! * [`names`]: the compact form of a tool name, the one-edit test and one-character deletions.
//!   Name matching, shared with proxy-core's routing so search and routing read names alike.
//! * `aliases` (with `aliases.txt`): the built-in synonym and translation table, a data file
//!   parsed once per process. Lexical matching cannot bridge `ticket` → `issue` on its own.
//! * `build`: [`Index::build`]. One pass over the tools (on several threads for a large
//!   catalog) collects term frequencies per field; then BM25F postings, per-source postings,
//!   and the lookup tables for names, affixes, typos and word pairs (`build/pass.rs`: the first
//!   pass; `build/tables.rs`: the lookup tables).
//! * `table`: `StrTable`, a sorted string → `u32`s multimap in one text arena. The lookup tables
//!   are large and read-only: this stores them as their text plus 12 bytes a key and 4 a value.
//! * `persist`: [`Index::to_bytes`] / [`Index::from_bytes`], the built index as bytes (the
//!   service keeps it beside its manifest so a start loads it instead of building it); reading
//!   checks every count and id, so damaged bytes are an error, never a panic in a search.
//! * `query`: a query, prepared: each content word becomes a group of weighted index terms,
//!   plus its adjacent word pairs, the tools whose name it spells, and how verbose it is.
//! * `score`: accumulates a prepared query over the postings, then the ranking rules (gate,
//!   coverage, name bonus, source evidence, a verbose request's length pivot, abstention, name
//!   slots, cut).
//! * [`semantic`]: the text a tool and a query are embedded as, the tools' [`semantic::Vectors`]
//!   aligned with the index, cosine ranking. The vectors come from the `embed` crate (run by
//!   the service's embedding actor, or by `eval`); this crate never runs the model.
//! * [`fusion`]: [`Index::search_hybrid`] and [`Index::explain_hybrid`]: both arms'
//!   candidates, their features, and the learned model that ranks them (see "Fusion" below;
//!   the model's types and file in `fusion/model.rs`).
//! * `explain`: [`Index::explain`] rebuilds one tool's score as a labelled tree
//!   ([`Explanation`]), so "why is X above Y?" is answered by reading numbers.
//! * [`eval`]: retrieval metrics (R@k, MRR, nDCG@5, abstention) shared by the `eval` command and
//!   the CI floor test, so both count the same way.
//! * `tests`: unit tests of the analyzer and the ranking rules on a small hand-made catalog.
//!
//! This file holds the index's data types ([`Index`], postings, terms, the pair table), the
//! ranking constants (`PARAMS`, one set for every catalog and query kind) and the caps on work.
//! `docs/search.md` (at the workspace root) keeps the figures: where the search stands and how
//! to measure a change; `docs/search-experiments.md` what each rule measured when it was added,
//! and what was tried and dropped (one row each).
//!
//! # Design
//!
//! Models query a tool catalog in many forms — keywords (`send gmail email`), paraphrases,
//! one word (`mail`), half-remembered names (`create issue`, `browser_navgate`), other
//! languages (`invia email`), whole pasted requests, and requests no tool serves. One scoring
//! path serves them all; each stage below exists for one of those forms.
//!
//! ## Analysis
//!
//! Words are runs of letters and digits, split again at camelCase (`threadId` → `thread id`),
//! because tool and parameter names glue words; a plural acronym stays one word (`URLs`). Han,
//! kana and hangul characters are one word each (those scripts put no spaces between words);
//! in a query, a run of them that holds Chinese, Japanese or Korean words of the alias table is
//! read as those words, found by longest match (`创建一个新的 GitHub 仓库` → `创建`, `新`, `仓库`,
//! `github`), and the characters between them the catalog does not know are dropped: they are
//! the grammar around the words (`一个`, `的`), and as unknown words they would count against
//! every tool.
//! A short stop list drops words that say nothing about which tool is meant: filler (`the`,
//! `please`; the clitic of `user's`), the scaffolding of a pasted request (`interested`,
//! `provide`, `currently`, `following`) and prepositions that never name an operation
//! (`through`, `within`), so a pasted request is ranked by what it asks for. Words that are
//! parts of tool names (`get`, `list`, `new`, `all`, `by`) stay. The rest get Snowball English
//! stems (words of up to three bytes, and words with digits, are kept as written).
//!
//! A query's words are marked when they only occur inside a literal value — a path, URL, e-mail
//! address, selector, quoted string or number: data for the call, not words about the tool.
//! A web address's scheme, `www` and top-level domain (with a generic level under a
//! country's: `.com.cn`, `.co.uk`) are not words at all: every address carries them, and so
//! does every documentation link in a tool's description.
//! A camelCase word of any field is indexed whole beside its parts (`PromQL` → `prom`, `ql` and
//! `promql`; `YouTube`, `ClickUp`): a request spells it in lower case. The whole word adds an
//! occurrence, not a word of the field's length, and not a name word: name coverage counts
//! `WebsiteTool` as two words. A camelCase query word the catalog knows whole is glued back
//! (`eBay`, `GitHub`), while one it does not know stays split (`searchPapers`).
//!
//! ## Fields and BM25F
//!
//! A tool is indexed under seven fields: its own name (without a `server-` prefix), its source,
//! its title, its description, its parameter names, its parameter descriptions, and the values
//! its parameters' `enum`s list (`news`, `france`, `markdown` are words a request carries). The
//! field weights are name 4, title = description = parameter names 2, parameter descriptions =
//! parameter values 1.6, source 1.5: a name says most about what a tool is, and parameter text
//! counts because requests carry the argument values a schema describes (`zip code`,
//! `latitude`). A tool's own name leaves out a repeat of its server's name as well
//! (`smithery.Bright_Data-brightdata-mcp_web_data_linkedin_person_profile` is named `web data
//! linkedin person profile`): marketplace catalogs prefix names so, and the repeat would make
//! every name of the server long and about the server. A description is indexed without its
//! web addresses (a markdown link keeps its words: [`analyzer::without_web_addresses`]); a
//! link target says where to read more, not what the tool does. The semantic arm reads the
//! name and the description the same way ([`semantic::embedding_text`]).
//!
//! Each field's frequency is length-normalised against that field's own average (over the tools
//! that have the field) before the fields are weighted, summed and saturated once (k1 1.5), so
//! one long text cannot drown a name. Normalisation b is 0.85, but 1 for descriptions (a verbose
//! one mentions much in passing), and 0 for parameter descriptions (separate texts, one per
//! parameter: their length counts parameters, not verbosity) and for parameter values (every
//! value an `enum` lists is a whole answer, however many it lists). Parameter descriptions that
//! run beyond 3 × their average length are damped in proportion to their length all the same:
//! a schema whose parameter descriptions run to pages mentions every generic word of a pasted
//! request (`analyze`, `detailed`, `insights`) and would otherwise answer all of them. The
//! saturated frequency is stored in the posting; idf multiplies it at query time, raised to the
//! power 0.7, because long requests are full of rare incidental words and a full-strength idf
//! lets one of them outvote the request's real subject.
//!
//! Every source is also indexed as one document (all its tools together, with its own idf),
//! and 0.8 × the source's score joins each of its tools' evidence: a request's words are often
//! spread over a server's tools.
//!
//! ## Query groups and expansions
//!
//! Each distinct content word of a query (every word, when all are stop words: `all`, `me`)
//! becomes a *group*: the index terms it may match, each with a weight. A tool scores a group's
//! best term only, so synonyms never double-count. The terms are:
//! - the word itself (weight 1);
//! - synonyms and translations from the alias table: 0.5 for a word the catalog knows (`ticket`
//!   also reaches `issue`), 0.9 when it stands in for a word the catalog lacks (`invia` →
//!   `send`; 0.81 when only the foreign stem matched);
//! - name, source and title terms that contain the word as a prefix or suffix of at least half
//!   their length (`mail` → `gmail`): 0.5 × the length ratio. A *source* name so contained reads
//!   as that source: weight 1, and the word itself drops to 0.5 — unless the word is at least as
//!   common as the source's term (`search` is not the `casinosearch` server);
//! - for a word the catalog does not know, name, source and title words one edit away
//!   (`navgate` → `navigate`, 0.8).
//!
//! A literal word's group weighs half (an occurrence outside a literal restores it). A group's
//! *importance* is its best weight × idf: what matching it is worth.
//!
//! ## Coverage and the score
//!
//! Coverage is the share of the query's importance a tool matched. The score is
//!
//! ```text
//! (Σ best term per group + pairs + 0.8 × source score) × coverage^0.6
//!     + 1.5 × name coverage × coverage
//! ```
//!
//! The coverage factor makes a tool matching the whole request beat one matching a rare word
//! many times. Its power is below 1 because a multi-need request is covered by several tools,
//! each matching part of it, and the tool for a secondary need must still reach the top 5.
//!
//! ## Verbose requests
//!
//! A request of more than 15 content words (literal values aside) is *verbose*: its many words
//! meet a long tool's text by chance, in proportion to that length, and a tool whose text runs
//! to pages (`zen-mcp-server-analyze`) would answer every pasted request that says `analyze`,
//! `detailed` and `structured` before the short tool named after the request's subject
//! (`web_data_linkedin_person_profile`). So a verbose request's evidence in a tool (its words
//! and pairs; the source evidence is capped by it) is divided by BM25's length pivot over the
//! tool's whole indexed text, `1 − b + b × length / average length`, with b rising from 0 at
//! 15 content words to 0.5 at 30. A shorter request is left alone: what it names is what it
//! wants, and a long tool that matches it is the answer (mcptoolbench's tools are told apart
//! by their parameter text). Per-field normalisation alone does not do this: each field of a
//! verbose tool is long against its own field's average, but it is the sum of all of them
//! that meets a long request's words.
//!
//! ## Names
//!
//! Models often write a tool's name, or nearly. The *name bonus* adds 1.5 × the share of the
//! tool's own name words the query reaches (through any of a word's terms: `email` reaches
//! `message`) × coverage, so `create issue` is `create_issue`, and `send gmail email` is
//! `send_message` before `verify_send_as`. *Name slots* go further: a query equal to a tool's
//! name (any case) ranks it first; a query that spells a name with any separators, without its
//! `server-` prefix ([`names::compact`] forms), or — when it looks like an identifier — one
//! edit off, puts those tools right after, in name order, whatever the scores and even when
//! the search otherwise abstains.
//!
//! ## Pairs
//!
//! Two query words adjacent once stop words are set aside (both known to the catalog, neither
//! literal) that occur adjacent in one of a tool's fields (`zip code`, `press key`) add 0.6 ×
//! the smaller of their idfs: phrase evidence without a positional index. (The factor for the
//! field they occur in is capped at 1, which every field weight exceeds.)
//!
//! ## Gate and cut
//!
//! A short query (at most 4 content words) is gated: a tool must match its rarest known word or
//! cover at least 20% of what the best-covering tool covers, and results under 5% of the best
//! score are dropped, so a short query's list is never padded with junk. A long request is
//! neither gated nor cut: coverage already ranks its stray matches low, and its other needs
//! score far below its main one.
//!
//! ## Abstention
//!
//! A query none of whose words reaches an index term (itself or through an expansion) gets
//! nothing. A short request is taken as asking for a capability the catalog lacks, and gets
//! nothing, when its best tool covers little of it — counting unknown words at the weight of
//! the rarest possible word:
//! - under 60% when none of its words is in that tool's name, source or title (up to 4 content
//!   words; at five, only when synonyms carry more than half of what it matched: matching a
//!   request only through synonyms is weak evidence that the tool does what it asks);
//! - under 35% even with such a word (up to 4 content words).
//!
//! Longer requests get their best tools, but for one test, up to six content words: the
//! request's *operation*. Tool names are mostly `verb_object` (`delete_file`, `create_issue`), so the
//! catalog itself says which words name operations: a term that starts the own names of at
//! least two tools. A request of at most six content words whose first word is such a term
//! (`delete my last slack message`) gets nothing when none of its best five tools (name slots
//! aside) offers it: matches that word and, when the request has other words (literal values
//! aside), one of them too, anywhere, in any form the search matches words by (itself, a
//! synonym, inside a name word, one typo off); a word the catalog does not know is matched by
//! no tool. The Slack tools post, list and read messages, and offering `slack_post_message`
//! for a deletion is worse than nothing; the Kubernetes tools that list resources do not list
//! running Docker containers; no tool of a catalog without SMS sends one. A first word that
//! names no operation of the catalog (`show`, `put`), or a best tool with a synonym (`remove`
//! for `delete`), leaves the request its results. The hybrid search applies the same test to
//! the fused ranking.
//!
//! ## Ties
//!
//! Equal scores break by tool name, then position: rankings do not depend on catalog order.
//!
//! ## Fusion
//!
//! A need put in other words than the tool's own (`put a meeting on my schedule`) is out of
//! reach of any lexical rule; a sentence embedding reaches it. With vectors,
//! [`Index::search_hybrid`] takes each arm's best 50 tools (and the tools whose name the
//! request spells) as candidates and ranks them with a learned model ([`fusion`]): a few named
//! features of each candidate (its lexical score as a share of the best, lexical rank,
//! coverage, name coverage, whether the request spells its name, whether the lexical winner
//! stands out, its cosine, cosine share over the 50th neighbour's, semantic rank) and terms that
//! weigh a feature by a signal of the request (`cosine_share * doubt`: the semantic arm counts
//! more the less of the request the lexical arm's best tool explains). The weights are data
//! (`fusion-model.json`), fitted by `search-eval train` and judged leaving one visible set out;
//! `explain_hybrid` gives each term's contribution. Four rules stay: names the request spells
//! come first; then a lexical winner that stands out (the `leads` feature); a short request
//! for an operation none of the ranking's best five tools offers gets only those names (see
//! Abstention); a request the lexical arm abstains on is answered only when its nearest tool
//! reaches the model's cosine bar. The semantic arm reads the
//! query without its literal values ([`semantic::query_text`]): a path or a quoted string is
//! data for the call, not words about the tool; a web address leaves the name of the service
//! it points at (`crunchbase` of `https://www.crunchbase.com/organization/acme`), the one word
//! of the request that may name it. The model knows only English, so a request that reads as
//! another language gets the alias table's English for the words it knows
//! (`aliases::AliasTable::in_english`: `enviar un mensaje al canal de Slack` is read as `send un
//! message al channel de Slack`, `创建一个新的 GitHub 仓库` as `create create GitHub repository`).

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
//! - Typo matching builds every one-character deletion of a word: quadratic in its length.
//!   Words longer than [`MAX_TYPO_WORD_CHARS`] get none, in a query and in the index alike (no
//!   deletion keys are built for them).
//! - Name affixes are quadratic in a term's length too: terms longer than
//!   [`MAX_AFFIX_TERM_CHARS`] get no prefix/suffix keys, and a longer query word looks none up.
//! - Only a tool's first [`MAX_LABEL_WORDS`] name, source and title words feed those two
//!   tables (all its words are indexed), so a tool with a megabyte-long name or title costs
//!   what one with a megabyte-long description does.
//! - A camelCase word is indexed whole as well as in parts: one more term per word, as long as
//!   the word, so the text read at most doubles (a megabyte-long `aBaB…` description builds in
//!   a fraction of a second).
//! - A lookup list (the tools under one compact name, the terms under one affix or deletion,
//!   a word's expansions, the name slots) can be as long as the catalog when an upstream
//!   lists look-alike names: none is scanned once per element.
//!
//! Both word caps are 40 characters, above the longest name, source or title word of the
//! benchmark catalogs (27), so no real name loses typo or affix matching, while one word's
//! deletions cost at most 40 × 40 bytes. The query caps are well above the longest evaluation
//! request, and the label-word cap well above the most label words a real tool has.
//!
//! # Hashing
//!
//! The index's hash maps (terms, surface words, pairs, aliases) use rustc's Fx hasher, seeded
//! once per process ([`hashing`]): much cheaper than std's SipHash on short keys, and the
//! seed keeps an upstream from listing names crafted to collide. Nothing depends on a map's
//! iteration order: a table that is iterated is sorted first (`StrTable`).

#![forbid(unsafe_code)]

mod aliases;
pub mod analyzer;
mod build;
pub mod catalog_file;
pub mod eval;
mod explain;
pub mod fusion;
pub mod hashing;
pub mod model;
pub mod names;
mod persist;
mod query;
mod score;
pub mod semantic;
mod table;
#[cfg(test)]
mod tests;

use crate::hashing::FxHashMap;
use table::StrTable;

use crate::model::CatalogTool;
pub use explain::Explanation;
pub use fusion::Semantic;
pub use persist::CorruptIndex;

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
pub fn clip_query(query: &str) -> &str {
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
    /// The values the top-level parameters' `enum`s list.
    ParamValue = 6,
}

const FIELDS: usize = 7;
const ALL_FIELDS: [Field; FIELDS] = [
    Field::Name,
    Field::Source,
    Field::Title,
    Field::Description,
    Field::Param,
    Field::ParamDescription,
    Field::ParamValue,
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
            Field::ParamValue => "parameter value",
        }
    }
    /// Fields that label a tool (as opposed to describing it).
    const LABELS: u8 = 0b0000_0111;
}

/// Ranking constants: one set for every catalog and query kind (no per-dataset switches).
/// The crate docs say why each exists; `docs/search-experiments.md`, what each measured.
#[derive(Debug, Clone)]
struct Params {
    k1: f64,
    /// BM25 length normalisation of each field (indexed by `Field as usize`).
    b: [f64; FIELDS],
    /// A field longer than this multiple of its average is damped in proportion to its
    /// length, whatever its `b` (indexed by `Field as usize`; infinite: never).
    damp_beyond: [f64; FIELDS],
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
    /// Source evidence is at most this multiple of the tool's own evidence: a tool of a big
    /// server ranks by its own text (the same tool listed by two marketplaces ties).
    source_cap: f64,
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
    /// A request's first content word is its operation when it starts the own names of at
    /// least this many tools (`delete` of `delete_file`, `delete_event`) ...
    operation_min_leads: u32,
    /// ... and a request of at most this many content words gets nothing when none of its
    /// best this-many tools (after name slots) matches that word anywhere (in any form).
    operation_max_words: usize,
    operation_depth: usize,
    /// A request of more than this many content words (literal values aside) is verbose ...
    verbose_from_words: usize,
    /// ... fully so from this many; a verbose request's evidence in a tool is normalised by
    /// the tool's whole length, BM25's pivot `1 − b + b × length / average`, with b this
    /// much × how verbose the request is (0 at `verbose_from_words`, 1 at
    /// `verbose_full_words`).
    verbose_full_words: usize,
    verbose_length_b: f64,
}

const PARAMS: Params = Params {
    k1: 1.5,
    // descriptions fully normalised (a verbose one mentions much in passing); parameter
    // descriptions not (separate texts, one per parameter: their length counts parameters)
    // until they run to pages; enum values not at all (a list of whole answers)
    b: [0.85, 0.85, 0.85, 1.0, 0.85, 0.0, 0.0],
    damp_beyond: [
        f64::INFINITY,
        f64::INFINITY,
        f64::INFINITY,
        f64::INFINITY,
        f64::INFINITY,
        3.0,
        f64::INFINITY,
    ],
    source_b: 0.85,
    field_weight: [4.0, 1.5, 2.0, 2.0, 2.0, 1.6, 1.6],
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
    source_cap: 1.0,
    gate_floor: 0.2,
    relative_cut: 0.05,
    short_query_words: 4,
    abstain_coverage: 0.6,
    abstain_label_coverage: 0.35,
    operation_min_leads: 2,
    operation_max_words: 6,
    operation_depth: 5,
    verbose_from_words: 15,
    verbose_full_words: 30,
    verbose_length_b: 0.5,
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
    /// Tools whose own name starts with this term (`create` of `create_issue`).
    leads: u32,
}

#[derive(Debug)]
struct Doc {
    name: String,
    /// Distinct terms of the name field: the denominator of name coverage.
    name_terms: u16,
    /// Source id (first-seen order).
    source: u32,
    /// The first term of the tool's own name (`u32::MAX` when it has none).
    lead: u32,
    /// Words indexed for the tool, over all its fields (stop words aside): the length a
    /// verbose request's evidence is normalised by.
    length: u32,
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
    /// The tools' mean [`Doc::length`].
    average_length: f64,
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

/// The words of the tool's own name: [`tool_part`] without a leading repeat of its server's
/// name. Marketplace catalogs prefix a tool's name with its server's again
/// (`smithery.Bright_Data-brightdata-mcp_web_data_linkedin_person_profile`,
/// `glama.Zen_MCP_Server-zen_codereview`): those words are the source's (indexed there), and
/// in the name field they would make every tool of the server read as a long name that names
/// its server. A leading run of segments that spells the start of the server's name (its last
/// `.`-separated part, compared compactly), with `mcp`/`server` segments around it, is
/// dropped; at least one segment always stays.
fn own_name<'a>(name: &'a str, source: &str) -> &'a str {
    const GENERIC: [&str; 2] = ["mcp", "server"];
    let part = tool_part(name, source);
    let label = names::compact(source.rsplit('.').next().unwrap_or(source));
    // how much of the label the segments so far have spelled (bytes of `label`)
    let mut spelled = 0;
    let mut cut = 0;
    let mut rest = part;
    while let Some(end) = rest.find(['-', '_', '.', ' ', '/']) {
        let after = &rest[end + 1..];
        if after.is_empty() {
            break;
        }
        let segment = &rest[..end];
        match spelled_by(&label[spelled..], segment).filter(|&n| n > 0 && spelled + n >= 3) {
            Some(n) => spelled += n,
            None if GENERIC.iter().any(|g| g.eq_ignore_ascii_case(segment)) => {}
            None => break,
        }
        rest = after;
        if spelled > 0 {
            cut = part.len() - rest.len();
        }
    }
    &part[cut..]
}

/// How many bytes of `label` (a compact name) `segment` spells from its start, compared the
/// way [`names::compact`] compares (letters and digits only, ASCII case folded), or `None`
/// when it does not (without allocating: this runs for every tool of a catalog).
fn spelled_by(label: &str, segment: &str) -> Option<usize> {
    let mut label_chars = label.char_indices();
    let mut used = 0;
    for c in segment.chars().filter(|c| c.is_alphanumeric()) {
        let (i, l) = label_chars.next()?;
        if l != c.to_ascii_lowercase() {
            return None;
        }
        used = i + l.len_utf8();
    }
    Some(used)
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
