//! Lexical tool search (pure: no actix, no I/O). DESIGN NOTES: see bottom of file (filled in).

mod aliases;
pub mod analyzer;
pub mod eval;
mod explain;
mod names;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use crate::model::CatalogTool;
pub use explain::Explanation;

use aliases::AliasMatch;
use analyzer::{is_stop_word, Analyzer, Tokenizer};

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
}

/// Ranking constants. One set for every catalog and query kind (no per-dataset switches).
#[derive(Debug, Clone)]
pub(crate) struct Params {
    pub k1: f64,
    pub b: f64,
    /// BM25F weight of each field (indexed by `Field as usize`).
    pub field_weight: [f64; FIELDS],
    /// Weight of a synonym of a word the catalog also knows.
    pub alias_weight: f64,
    /// Weight of a translation/synonym standing in for a word the catalog does not know.
    pub foreign_weight: f64,
    /// Weight of a name term that contains the query word (`mail` → `gmail`).
    pub substring_weight: f64,
    /// Weight of a name word one edit away from an unknown query word.
    pub typo_weight: f64,
    /// Bonus per unit of name coverage (share of the tool-name words the query matched).
    pub name_bonus: f64,
    /// Exponent on query coverage (share of the query's weight a tool matched).
    pub coverage_exp: f64,
    /// A tool that misses the query's rarest word still qualifies with this much coverage.
    pub gate_floor: f64,
    /// Below this best coverage the search abstains.
    pub abstain_coverage: f64,
    /// Results scoring below this share of the best score are junk, not padding.
    pub relative_cut: f64,
    pub x1: f64,
    pub x2: f64,
    pub x3: f64,
}

impl Default for Params {
    fn default() -> Self {
        let mut p = Params::base();
        // TUNING-ONLY (remove): SEARCH_PARAMS="name_bonus=1.2,gate_floor=0.4"
        if let Ok(spec) = std::env::var("SEARCH_PARAMS") {
            for kv in spec.split(',') {
                if let Some((k, v)) = kv.split_once('=') {
                    let v: f64 = v.parse().unwrap_or(0.0);
                    match k {
                        "k1" => p.k1 = v,
                        "b" => p.b = v,
                        "w0" => p.field_weight[0] = v,
                        "w1" => p.field_weight[1] = v,
                        "w2" => p.field_weight[2] = v,
                        "w3" => p.field_weight[3] = v,
                        "w4" => p.field_weight[4] = v,
                        "w5" => p.field_weight[5] = v,
                        "alias" => p.alias_weight = v,
                        "foreign" => p.foreign_weight = v,
                        "substr" => p.substring_weight = v,
                        "typo" => p.typo_weight = v,
                        "nb" => p.name_bonus = v,
                        "cexp" => p.coverage_exp = v,
                        "gate" => p.gate_floor = v,
                        "abst" => p.abstain_coverage = v,
                        "cut" => p.relative_cut = v,
                        "x1" => p.x1 = v,
                        "x2" => p.x2 = v,
                        "x3" => p.x3 = v,
                        _ => {}
                    }
                }
            }
        }
        p
    }
}

impl Params {
    fn base() -> Self {
        Params {
            x1: 0.0,
            x2: 0.0,
            x3: 1.0,
            k1: 1.5,
            b: 0.75,
            field_weight: [3.0, 1.5, 2.0, 1.0, 0.6, 0.3],
            alias_weight: 0.6,
            foreign_weight: 0.9,
            substring_weight: 0.5,
            typo_weight: 0.8,
            name_bonus: 1.0,
            coverage_exp: 1.0,
            gate_floor: 0.5,
            abstain_coverage: 0.0,
            relative_cut: 0.2,
        }
    }
}

/// A term's occurrence in one tool.
#[derive(Debug, Clone, Copy)]
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
}

#[derive(Debug)]
struct Doc {
    name: String,
    /// Distinct terms of the name field: the denominator of name coverage.
    name_terms: u16,
    /// Source id (position in first-seen order), for result diversity.
    source: u32,
}

/// An immutable search index over one catalog snapshot.
#[derive(Debug)]
pub struct Index {
    params: Params,
    analyzer: Analyzer,
    docs: Vec<Doc>,
    terms: Vec<Term>,
    term_ids: HashMap<String, u32>,
    /// Compact full names and compact names without the `server-` prefix → tools.
    compact_names: HashMap<String, Vec<u32>>,
    /// Lower-case full name → tool (the exact-name short-circuit).
    exact_names: HashMap<String, u32>,
    /// Prefixes/suffixes (at least half the term, at least 4 chars) of name-field terms → terms.
    affixes: HashMap<String, Vec<u32>>,
    /// One-character deletions of name-field surface words (≥ 5 chars) → surface word ids.
    deletions: HashMap<String, Vec<u32>>,
    /// Name-field surface words and their terms (targets of typo matching).
    surfaces: Vec<(String, u32)>,
    surface_ids: HashMap<String, u32>,
}

impl Default for Index {
    fn default() -> Self {
        Index::build(&[])
    }
}

/// One query word, analysed: the index terms it may match and how much each counts.
#[derive(Debug, Clone)]
struct Group {
    word: String,
    expansions: Vec<Expansion>,
    /// The group's weight in coverage: its best expansion's weight × idf.
    importance: f64,
    /// 1, or the literal weight for a word that only occurs inside a pasted value.
    factor: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ExpansionKind {
    Word,
    Alias,
    Foreign,
    Substring,
    Typo,
}

#[derive(Debug, Clone)]
struct Expansion {
    term: u32,
    weight: f64,
    kind: ExpansionKind,
}

/// A query, analysed once and scored against many tools.
#[derive(Debug)]
struct Prepared {
    groups: Vec<Group>,
    total_importance: f64,
    /// Index of the rarest (highest-importance) group.
    rarest: Option<usize>,
    /// Tools whose name the query spells (any separator, without prefix, or one typo off),
    /// best first; they get guaranteed top slots.
    name_matches: Vec<u32>,
    /// The tool whose full name equals the query.
    exact: Option<u32>,
}

/// Per-tool accumulators of one search.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    bm25: f64,
    importance: f64,
    name_hits: u16,
    rarest: bool,
    /// The tool's source's own BM25 score.
    source: f64,
}

impl Index {
    pub fn build(tools: &[CatalogTool]) -> Index {
        Index::build_with(tools, Params::default())
    }

    pub(crate) fn build_with(tools: &[CatalogTool], params: Params) -> Index {
        let analyzer = Analyzer::default();
        let mut tok = Tokenizer::default();
        let mut term_ids: HashMap<String, u32> = HashMap::new();
        let mut term_texts: Vec<String> = Vec::new();
        // surface word → term (None for stop words): stems each distinct word once
        let mut word_terms: HashMap<String, Option<u32>> = HashMap::new();
        let mut surface_ids: HashMap<String, u32> = HashMap::new();
        let mut surfaces: Vec<(String, u32)> = Vec::new();
        let mut name_vocab: Vec<bool> = Vec::new();
        // per tool: (term, field) occurrences, then field lengths
        let mut doc_terms: Vec<Vec<(u32, [u16; FIELDS])>> = Vec::with_capacity(tools.len());
        let mut doc_lens: Vec<[u32; FIELDS]> = Vec::with_capacity(tools.len());
        let mut docs = Vec::with_capacity(tools.len());
        let mut occ: Vec<(u32, u8)> = Vec::new();
        let mut source_ids: HashMap<&str, u32> = HashMap::new();

        for ct in tools {
            occ.clear();
            let mut lens = [0u32; FIELDS];
            for field in ALL_FIELDS {
                let mut add = |text: &str| {
                    tok.for_each_word(text, |w| {
                        let id = match word_terms.get(w) {
                            Some(id) => *id,
                            None => {
                                let id = if is_stop_word(w) {
                                    None
                                } else {
                                    let stem = analyzer.stem(w);
                                    let next = term_texts.len() as u32;
                                    let id = *term_ids.entry(stem.clone()).or_insert(next);
                                    if id == next {
                                        term_texts.push(stem);
                                        name_vocab.push(false);
                                    }
                                    Some(id)
                                };
                                word_terms.insert(w.to_string(), id);
                                id
                            }
                        };
                        if let Some(id) = id {
                            occ.push((id, field as u8));
                            lens[field as usize] += 1;
                            if matches!(field, Field::Name | Field::Source | Field::Title) {
                                name_vocab[id as usize] = true;
                                if !surface_ids.contains_key(w) && w.chars().count() >= 5 {
                                    surface_ids.insert(w.to_string(), surfaces.len() as u32);
                                    surfaces.push((w.to_string(), id));
                                }
                            }
                        }
                    });
                };
                match field {
                    Field::Name => add(tool_part(&ct.tool.name, &ct.source)),
                    Field::Source => add(&ct.source),
                    Field::Title => {
                        if let Some(t) = &ct.tool.title {
                            add(t);
                        }
                        if let Some(t) = ct
                            .tool
                            .annotations
                            .as_ref()
                            .and_then(|a| a.get("title"))
                            .and_then(|t| t.as_str())
                        {
                            add(t);
                        }
                    }
                    Field::Description => add(ct.tool.description_str()),
                    Field::Param => {
                        for p in ct.tool.param_names() {
                            add(p);
                        }
                    }
                    Field::ParamDescription => {
                        if let Some(props) = ct.tool.input_schema.get("properties").and_then(|p| p.as_object()) {
                            for v in props.values() {
                                if let Some(d) = v.get("description").and_then(|d| d.as_str()) {
                                    add(d);
                                }
                            }
                        }
                    }
                }
            }
            occ.sort_unstable();
            let mut per_term: Vec<(u32, [u16; FIELDS])> = Vec::new();
            for &(t, f) in &occ {
                match per_term.last_mut() {
                    Some((last, tf)) if *last == t => tf[f as usize] = tf[f as usize].saturating_add(1),
                    _ => {
                        let mut tf = [0u16; FIELDS];
                        tf[f as usize] = 1;
                        per_term.push((t, tf));
                    }
                }
            }
            let name_terms = per_term.iter().filter(|(_, tf)| tf[Field::Name as usize] > 0).count();
            let next_source = source_ids.len() as u32;
            let source = *source_ids.entry(ct.source.as_str()).or_insert(next_source);
            docs.push(Doc {
                source,
                name: ct.tool.name.clone(),
                name_terms: name_terms.min(u16::MAX as usize) as u16,
            });
            doc_terms.push(per_term);
            doc_lens.push(lens);
        }

        // BM25F: length-normalise each field against its own average, weight, then saturate.
        let n = tools.len().max(1) as f64;
        let mut avg = [0f64; FIELDS];
        for l in &doc_lens {
            for f in 0..FIELDS {
                avg[f] += l[f] as f64;
            }
        }
        for a in &mut avg {
            *a = (*a / n).max(1.0);
        }
        let mut postings: Vec<Vec<Posting>> = vec![Vec::new(); term_texts.len()];
        for (d, per_term) in doc_terms.iter().enumerate() {
            let lens = &doc_lens[d];
            let norm: [f64; FIELDS] = std::array::from_fn(|f| 1.0 - params.b + params.b * lens[f] as f64 / avg[f]);
            for (t, tf) in per_term {
                let mut tilde = 0.0;
                let mut fields = 0u8;
                for f in 0..FIELDS {
                    if tf[f] > 0 {
                        tilde += params.field_weight[f] * tf[f] as f64 / norm[f];
                        fields |= 1 << f;
                    }
                }
                let sat = tilde * (params.k1 + 1.0) / (params.k1 + tilde);
                postings[*t as usize].push(Posting {
                    doc: d as u32,
                    tf: sat as f32,
                    fields,
                });
            }
        }
        // Each source as one document too: evidence spread over a server's tools.
        let n_sources = source_ids.len();
        let mut by_source: Vec<Vec<usize>> = vec![Vec::new(); n_sources];
        for (d, doc) in docs.iter().enumerate() {
            by_source[doc.source as usize].push(d);
        }
        let mut src_len = vec![0f64; n_sources];
        for (sidx, ds) in by_source.iter().enumerate() {
            for &d in ds {
                src_len[sidx] += (0..FIELDS)
                    .map(|f| params.field_weight[f] * doc_lens[d][f] as f64)
                    .sum::<f64>();
            }
        }
        let avg_src = (src_len.iter().sum::<f64>() / n_sources.max(1) as f64).max(1.0);
        let mut source_postings: Vec<Vec<(u32, f32)>> = vec![Vec::new(); term_texts.len()];
        let mut scratch = vec![0f64; term_texts.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (sidx, ds) in by_source.iter().enumerate() {
            for &d in ds {
                for (t, tf) in &doc_terms[d] {
                    let v: f64 = (0..FIELDS).map(|f| params.field_weight[f] * tf[f] as f64).sum();
                    if scratch[*t as usize] == 0.0 {
                        touched.push(*t);
                    }
                    scratch[*t as usize] += v;
                }
            }
            let norm = 1.0 - params.b + params.b * src_len[sidx] / avg_src;
            for &t in &touched {
                let tilde = scratch[t as usize] / norm;
                let sat = tilde * (params.k1 + 1.0) / (params.k1 + tilde);
                source_postings[t as usize].push((sidx as u32, sat as f32));
                scratch[t as usize] = 0.0;
            }
            touched.clear();
        }
        let ns = n_sources.max(1) as f64;
        let terms: Vec<Term> = term_texts
            .into_iter()
            .zip(postings)
            .zip(source_postings)
            .map(|((text, postings), source_postings)| {
                let df = postings.len() as f64;
                let sdf = source_postings.len() as f64;
                Term {
                    text,
                    idf: (1.0 + (n - df + 0.5) / (df + 0.5)).ln(),
                    postings,
                    source_idf: (1.0 + (ns - sdf + 0.5) / (sdf + 0.5)).ln(),
                    source_postings,
                }
            })
            .collect();

        let mut compact_names: HashMap<String, Vec<u32>> = HashMap::new();
        let mut exact_names: HashMap<String, u32> = HashMap::new();
        for (d, ct) in tools.iter().enumerate() {
            let d = d as u32;
            let full = names::compact(&ct.tool.name);
            let part = names::compact(tool_part(&ct.tool.name, &ct.source));
            for key in [full, part] {
                let v = compact_names.entry(key).or_default();
                if !v.contains(&d) {
                    v.push(d);
                }
            }
            exact_names.entry(ct.tool.name.to_lowercase()).or_insert(d);
        }

        let mut affixes: HashMap<String, Vec<u32>> = HashMap::new();
        for (id, t) in terms.iter().enumerate() {
            if !name_vocab[id] {
                continue;
            }
            let chars: Vec<char> = t.text.chars().collect();
            let len = chars.len();
            for l in 4.max(len.div_ceil(2))..len {
                for key in [&chars[..l], &chars[len - l..]] {
                    let v = affixes.entry(key.iter().collect()).or_default();
                    if !v.contains(&(id as u32)) {
                        v.push(id as u32);
                    }
                }
            }
        }
        let mut deletions: HashMap<String, Vec<u32>> = HashMap::new();
        for (sid, (w, _)) in surfaces.iter().enumerate() {
            for del in names::deletions(w) {
                deletions.entry(del).or_default().push(sid as u32);
            }
        }

        Index {
            params,
            analyzer,
            docs,
            terms,
            term_ids,
            compact_names,
            exact_names,
            affixes,
            deletions,
            surfaces,
            surface_ids,
        }
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The best `limit` tools for `query`, best first; empty when nothing matches confidently.
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

    /// Why `doc` scores what it does for `query`, as a tree whose root value equals the score
    /// `search` gives it (0 when the tool would not be returned at all).
    pub fn explain(&self, query: &str, doc: usize) -> Explanation {
        let q = self.prepare(query);
        let Some(d) = self.docs.get(doc) else {
            return Explanation::new(format!("no tool #{doc} in the index"), 0.0);
        };
        let mut acc = Acc::default();
        let mut groups = Explanation::new("matched query words", 0.0);
        for (gi, g) in q.groups.iter().enumerate() {
            let mut best: Option<(f64, &Expansion, Posting)> = None;
            for e in &g.expansions {
                let postings = &self.terms[e.term as usize].postings;
                if let Ok(i) = postings.binary_search_by_key(&(doc as u32), |p| p.doc) {
                    let p = postings[i];
                    let v = e.weight * self.terms[e.term as usize].idf * p.tf as f64;
                    if best.is_none_or(|(b, _, _)| v > b) {
                        best = Some((v, e, p));
                    }
                }
            }
            if let Some((v, e, p)) = best {
                let term = &self.terms[e.term as usize];
                acc.bm25 += v;
                acc.importance += g.importance;
                if p.fields & Field::Name.bit() != 0 {
                    acc.name_hits += 1;
                }
                acc.rarest |= q.rarest == Some(gi);
                let fields: Vec<&str> = ALL_FIELDS
                    .iter()
                    .filter(|f| p.fields & f.bit() != 0)
                    .map(|f| f.label())
                    .collect();
                groups.add(
                    Explanation::new(format!("word `{}` → term `{}` ({:?})", g.word, term.text, e.kind), v)
                        .with(Explanation::new("expansion weight", e.weight))
                        .with(Explanation::new(format!("idf, df={}", term.postings.len()), term.idf))
                        .with(Explanation::new(
                            format!("BM25F tf part, in {}", fields.join(", ")),
                            p.tf as f64,
                        )),
                );
            } else {
                groups.add(Explanation::new(format!("word `{}`: no match", g.word), 0.0));
            }
        }
        groups.value = acc.bm25;
        let score = self.final_score(&q, doc as u32, &acc);
        let ranked = self.rank(&q, &self.accumulate(&q), self.docs.len());
        let returned = ranked.iter().find(|h| h.doc == doc).map(|h| h.score);
        let mut root = Explanation::new(
            format!(
                "score of `{}`{}",
                d.name,
                if returned.is_some() {
                    ""
                } else {
                    " (not returned: gated or abstained)"
                }
            ),
            returned.unwrap_or(0.0),
        );
        let cov = self.coverage(&q, &acc);
        let name_cov = self.name_coverage(doc as u32, &acc);
        root.add(groups);
        root.add(Explanation::new("query coverage (matched importance / total)", cov));
        root.add(Explanation::new(
            "name coverage (name words matched / name words)",
            name_cov,
        ));
        root.add(Explanation::new("ranking score before name slots", score));
        if q.exact == Some(doc as u32) {
            root.add(Explanation::new("query equals the tool name: rank 1", 1.0));
        } else if q.name_matches.contains(&(doc as u32)) {
            root.add(Explanation::new("query spells the tool name: guaranteed top slot", 1.0));
        }
        root
    }

    fn term(&self, stem: &str) -> Option<u32> {
        self.term_ids.get(stem).copied()
    }

    fn prepare(&self, query: &str) -> Prepared {
        let p = &self.params;
        let mut groups: Vec<Group> = Vec::new();
        let words = analyzer::query_words(query);
        let content: Vec<&(String, bool)> = words.iter().filter(|(w, _)| !is_stop_word(w)).collect();
        // A query of only stop words ("all", "me") still means something: keep them.
        let chosen: Vec<&(String, bool)> = if content.is_empty() {
            words.iter().collect()
        } else {
            content
        };
        let alias_table = aliases::table();
        for (w, literal) in chosen {
            let stem = self.analyzer.stem(w);
            let factor = if *literal { p.x3 } else { 1.0 };
            if let Some(g) = groups.iter_mut().find(|g| g.word == stem) {
                // seen before; an intent occurrence outranks a literal one
                if factor > g.factor {
                    let up = factor / g.factor;
                    g.factor = factor;
                    g.importance *= up;
                    g.expansions.iter_mut().for_each(|e| e.weight *= up);
                }
                continue;
            }
            let mut exps: Vec<Expansion> = Vec::new();
            let push = |exps: &mut Vec<Expansion>, term: u32, weight: f64, kind| {
                if let Some(e) = exps.iter_mut().find(|e| e.term == term) {
                    if weight > e.weight {
                        e.weight = weight;
                        e.kind = kind;
                    }
                } else {
                    exps.push(Expansion { term, weight, kind });
                }
            };
            let known = self.term(&stem);
            if let Some(t) = known {
                push(&mut exps, t, 1.0, ExpansionKind::Word);
            }
            for (target, how) in alias_table.lookup(w, &stem, known.is_some()) {
                if let Some(t) = self.term(&target) {
                    let (weight, kind) = match (known.is_some(), how) {
                        (true, _) => (p.alias_weight, ExpansionKind::Alias),
                        (false, AliasMatch::Exact) => (p.foreign_weight, ExpansionKind::Foreign),
                        (false, AliasMatch::ForeignStem) => (p.foreign_weight * 0.9, ExpansionKind::Foreign),
                    };
                    push(&mut exps, t, weight, kind);
                }
            }
            let stem_len = stem.chars().count();
            if stem_len >= 4 {
                if let Some(ts) = self.affixes.get(stem.as_str()) {
                    for &t in ts {
                        let ratio = stem_len as f64 / self.terms[t as usize].text.chars().count() as f64;
                        push(&mut exps, t, p.substring_weight * ratio, ExpansionKind::Substring);
                    }
                }
            }
            if known.is_none() && w.chars().count() >= 5 {
                for t in self.typo_terms(w) {
                    push(&mut exps, t, p.typo_weight, ExpansionKind::Typo);
                }
            }
            exps.iter_mut().for_each(|e| e.weight *= factor);
            let importance = exps
                .iter()
                .map(|e| e.weight * self.terms[e.term as usize].idf)
                .fold(0.0, f64::max);
            groups.push(Group {
                word: stem,
                expansions: exps,
                importance,
                factor,
            });
        }
        let total_importance = groups.iter().map(|g| g.importance).sum();
        let rarest = groups
            .iter()
            .enumerate()
            .filter(|(_, g)| !g.expansions.is_empty())
            .max_by(|a, b| a.1.importance.total_cmp(&b.1.importance))
            .map(|(i, _)| i);

        let exact = self.exact_names.get(&query.trim().to_lowercase()).copied();
        let mut name_matches: Vec<u32> = Vec::new();
        let cq = names::compact(query);
        if cq.chars().count() >= 3 {
            if let Some(ds) = self.compact_names.get(&cq) {
                name_matches.extend(ds);
            } else if names::looks_like_identifier(query) {
                for (key, ds) in &self.compact_names {
                    if key.len().abs_diff(cq.len()) <= 1 && names::within_one_edit(key, &cq) {
                        for d in ds {
                            if !name_matches.contains(d) {
                                name_matches.push(*d);
                            }
                        }
                    }
                }
            }
        }
        Prepared {
            groups,
            total_importance,
            rarest,
            name_matches,
            exact,
        }
    }

    /// Name-field terms one edit away from an unknown query word: a deletion of the query is
    /// a surface word (extra character), the query is a deletion of a surface word (missing
    /// character), or both share a deletion (substitution, transposition).
    fn typo_terms(&self, w: &str) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        let mut consider = |sid: u32| {
            let (surface, term) = &self.surfaces[sid as usize];
            if !out.contains(term) && names::within_one_edit(surface, w) {
                out.push(*term);
            }
        };
        if let Some(ids) = self.deletions.get(w) {
            ids.iter().for_each(|&s| consider(s));
        }
        for del in names::deletions(w) {
            if let Some(&sid) = self.surface_ids.get(&del) {
                consider(sid);
            }
            if let Some(ids) = self.deletions.get(&del) {
                ids.iter().for_each(|&s| consider(s));
            }
        }
        out
    }

    /// Per-source BM25 of the query, each source read as one document.
    fn source_scores(&self, q: &Prepared) -> HashMap<u32, f64> {
        let mut out: HashMap<u32, f64> = HashMap::new();
        let mut best: HashMap<u32, f64> = HashMap::new();
        for g in &q.groups {
            best.clear();
            for e in &g.expansions {
                let term = &self.terms[e.term as usize];
                let w = e.weight * term.source_idf;
                for &(src, tf) in &term.source_postings {
                    let v = w * tf as f64;
                    let b = best.entry(src).or_insert(0.0);
                    if v > *b {
                        *b = v;
                    }
                }
            }
            for (&s, &v) in &best {
                *out.entry(s).or_default() += v;
            }
        }
        out
    }

    fn accumulate(&self, q: &Prepared) -> HashMap<u32, Acc> {
        let src = if self.params.x2 > 0.0 {
            self.source_scores(q)
        } else {
            HashMap::new()
        };
        let mut accs: HashMap<u32, Acc> = HashMap::new();
        let mut best: HashMap<u32, (f64, bool)> = HashMap::new();
        for (gi, g) in q.groups.iter().enumerate() {
            best.clear();
            for e in &g.expansions {
                let term = &self.terms[e.term as usize];
                let w = e.weight * term.idf;
                for p in &term.postings {
                    let v = w * p.tf as f64;
                    let name = p.fields & Field::Name.bit() != 0;
                    let b = best.entry(p.doc).or_insert((0.0, false));
                    if v > b.0 {
                        *b = (v, name);
                    }
                }
            }
            for (&d, &(v, name)) in &best {
                let a = accs.entry(d).or_default();
                a.bm25 += v;
                a.importance += g.importance;
                a.name_hits += u16::from(name);
                a.rarest |= q.rarest == Some(gi);
            }
        }
        for (d, a) in accs.iter_mut() {
            a.source = src.get(&self.docs[*d as usize].source).copied().unwrap_or(0.0);
        }
        accs
    }

    fn coverage(&self, q: &Prepared, acc: &Acc) -> f64 {
        if q.total_importance > 0.0 {
            acc.importance / q.total_importance
        } else {
            0.0
        }
    }

    fn name_coverage(&self, doc: u32, acc: &Acc) -> f64 {
        let n = self.docs[doc as usize].name_terms;
        if n == 0 {
            0.0
        } else {
            (acc.name_hits as f64 / n as f64).min(1.0)
        }
    }

    fn final_score(&self, q: &Prepared, doc: u32, acc: &Acc) -> f64 {
        let p = &self.params;
        let cov = self.coverage(q, acc);
        let name_cov = self.name_coverage(doc, acc);
        (acc.bm25 + p.x2 * acc.source) * cov.powf(p.coverage_exp) + p.name_bonus * name_cov * cov
    }

    fn rank(&self, q: &Prepared, accs: &HashMap<u32, Acc>, limit: usize) -> Vec<Hit> {
        let p = &self.params;
        let max_cov = accs.values().map(|a| self.coverage(q, a)).fold(0.0, f64::max);
        let mut scored: Vec<(f64, u32)> = Vec::new();
        for (&d, acc) in accs {
            let cov = self.coverage(q, acc);
            if !(acc.rarest || cov >= p.gate_floor * max_cov) {
                continue;
            }
            scored.push((self.final_score(q, d, acc), d));
        }
        if max_cov < p.abstain_coverage {
            scored.clear();
        }
        let top = scored.iter().map(|s| s.0).fold(0.0, f64::max);
        scored.retain(|s| s.0 >= p.relative_cut * top);
        // name slots: the exact name first, then names the query spells, each once
        let mut slots: Vec<u32> = q.exact.into_iter().collect();
        for &d in &q.name_matches {
            if !slots.contains(&d) {
                slots.push(d);
            }
        }
        let by_score = |a: &(f64, u32), b: &(f64, u32)| {
            b.0.total_cmp(&a.0)
                .then_with(|| self.docs[a.1 as usize].name.cmp(&self.docs[b.1 as usize].name))
                .then(a.1.cmp(&b.1))
        };
        scored.sort_by(by_score);
        if p.x1 > 0.0 && p.x1 < 1.0 {
            scored = self.diversify(scored, limit, p.x1);
        }
        let top = scored.first().map_or(1.0, |s| s.0);
        let mut hits: Vec<Hit> = Vec::with_capacity(limit.min(scored.len() + slots.len()));
        // slots rank above everything, keeping their relative order
        let slot_n = slots.len();
        for (i, d) in slots.iter().enumerate() {
            hits.push(Hit {
                doc: *d as usize,
                score: top + (slot_n - i) as f64,
            });
        }
        for (s, d) in scored {
            if hits.len() >= limit {
                break;
            }
            if !slots.contains(&d) {
                hits.push(Hit {
                    doc: d as usize,
                    score: s,
                });
            }
        }
        hits.truncate(limit);
        hits
    }
}

impl Index {
    /// Re-orders the head of a ranking so one source does not fill it: each tool's score is
    /// multiplied by `decay` per better-ranked tool of the same source.
    fn diversify(&self, scored: Vec<(f64, u32)>, limit: usize, decay: f64) -> Vec<(f64, u32)> {
        let pool_n = scored.len().min(limit.saturating_mul(4).max(limit));
        let mut pool: Vec<(f64, u32)> = scored[..pool_n].to_vec();
        let mut out: Vec<(f64, u32)> = Vec::with_capacity(scored.len());
        let mut per_source: HashMap<u32, i32> = HashMap::new();
        while !pool.is_empty() && out.len() < limit {
            let mut best = 0;
            let mut best_v = f64::NEG_INFINITY;
            for (i, &(sc, d)) in pool.iter().enumerate() {
                let n = per_source.get(&self.docs[d as usize].source).copied().unwrap_or(0);
                let v = sc * decay.powi(n);
                if v > best_v {
                    best_v = v;
                    best = i;
                }
            }
            let (sc, d) = pool.remove(best);
            *per_source.entry(self.docs[d as usize].source).or_default() += 1;
            out.push((sc, d));
        }
        out.extend(pool);
        out.extend_from_slice(&scored[pool_n..]);
        out
    }
}

/// The tool's own name: without the `server-` prefix when that prefix is its source.
fn tool_part<'a>(name: &'a str, source: &str) -> &'a str {
    name.strip_prefix(source)
        .and_then(|r| r.strip_prefix('-'))
        .filter(|r| !r.is_empty())
        .unwrap_or(name)
}
