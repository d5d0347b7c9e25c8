//! Index construction: one pass over the tools collects (term, field) counts, then BM25F
//! postings, per-source postings, and the lookup tables for names, affixes and typos.
//!
//! Every distinct surface word is stemmed once (a word → term cache), which keeps a build of
//! 11,739 real tools within budget.

use super::table::StrTable;
use crate::hashing::{FxHashMap, FxHashSet};

use super::analyzer::{is_stop_word, Analyzer, Tokenizer};
use super::{
    names, own_name, pair_key, tool_part, Doc, Field, Index, PairTable, Params, Posting, Term, ALL_FIELDS, FIELDS,
    MAX_AFFIX_TERM_CHARS, MAX_LABEL_WORDS, MAX_TYPO_WORD_CHARS,
};
use crate::model::CatalogTool;

/// What the first pass learns of a run of tools: their terms (ids local to the run unless
/// merged), per-tool term frequencies and field lengths, word pairs and typo targets.
#[derive(Default)]
struct Part {
    /// Term id → stem, in first-seen order.
    term_texts: Vec<String>,
    /// Term id → it is one of a tool's first `MAX_LABEL_WORDS` name, source or title words /
    /// it occurs in a source name.
    name_vocab: Vec<bool>,
    source_terms: Vec<bool>,
    /// Per tool, in one array: (term, frequency in each field); tool d's entries start at
    /// `doc_starts[d]`.
    doc_terms: Vec<(u32, [u16; FIELDS])>,
    doc_starts: Vec<usize>,
    doc_lens: Vec<[u32; FIELDS]>,
    docs: Vec<Doc>,
    /// Source id → source name (first-seen order); `Doc::source` indexes it.
    sources: Vec<String>,
    /// Pair id → pair key ([`pair_key`] of two term ids), first-seen order.
    pair_keys: Vec<u64>,
    /// Occurrences, one per tool and pair, in tool order: pair id and field bits; tool d's
    /// start at `pair_starts[d]` (two arrays and per-tool starts: 5 bytes an occurrence).
    pair_pids: Vec<u32>,
    pair_bits: Vec<u8>,
    pair_starts: Vec<usize>,
    /// Name-field surface words (5 to `MAX_TYPO_WORD_CHARS` chars, among a tool's first
    /// `MAX_LABEL_WORDS`) and their terms, first-seen order.
    surfaces: Vec<(String, u32)>,
}

/// Catalogs at least this large are analysed on several threads (each takes a contiguous run
/// of tools; the runs are merged in order, so the index is the same as a one-thread build).
const PARALLEL_MIN_TOOLS: usize = 2_000;

pub(super) fn build(tools: &[CatalogTool], params: &Params) -> Index {
    let threads = if tools.len() >= PARALLEL_MIN_TOOLS {
        std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4)
    } else {
        1
    };
    build_on(tools, params, threads)
}

/// [`build`] with the first pass split over `threads` threads.
pub(super) fn build_on(tools: &[CatalogTool], params: &Params, threads: usize) -> Index {
    let analyzer = Analyzer::default();
    let threads = threads.clamp(1, tools.len().max(1));
    let Part {
        term_texts,
        name_vocab,
        source_terms,
        doc_terms,
        doc_starts,
        doc_lens,
        mut docs,
        sources,
        pair_keys,
        pair_pids,
        pair_bits,
        pair_starts,
        surfaces,
    } = first_pass(tools, &analyzer, threads);
    heap::release();
    docs.shrink_to_fit();
    let surface_ids: FxHashMap<String, u32> = surfaces
        .iter()
        .enumerate()
        .map(|(i, (w, _))| (w.clone(), i as u32))
        .collect();
    let term_ids: FxHashMap<String, u32> = term_texts
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    let n_sources = sources.len();
    let weigh = || {
        weigh(
            &doc_terms,
            &doc_starts,
            &doc_lens,
            &docs,
            n_sources,
            term_texts.len(),
            params,
        )
    };
    let names = || name_tables(tools);
    let words = || (affix_table(&term_texts, &name_vocab), deletion_table(&surfaces));
    let pairs = move || pair_table(pair_keys, pair_pids, pair_bits, pair_starts);
    // The tables are independent of each other: on several threads, built side by side.
    let ((postings, source_postings), (compact_names, exact_names), (affixes, deletions), pairs) = if threads > 1 {
        std::thread::scope(|s| {
            let n = s.spawn(names);
            let w = s.spawn(words);
            let p = s.spawn(pairs);
            let weighed = weigh();
            (weighed, joined(n), joined(w), joined(p))
        })
    } else {
        (weigh(), names(), words(), pairs())
    };
    drop(doc_terms);
    heap::release();
    let leads = lead_counts(&docs, term_texts.len());
    let terms = terms(
        term_texts,
        postings,
        source_postings,
        &leads,
        &source_terms,
        (tools.len(), n_sources),
        params,
    );
    let average_length = docs.iter().map(|d| f64::from(d.length)).sum::<f64>() / docs.len().max(1) as f64;
    Index {
        average_length,
        n_sources,
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
        pairs,
    }
}

/// The first pass over all tools: on one thread, or each of `threads` threads analysing a
/// contiguous run and the runs merged in order.
fn first_pass(tools: &[CatalogTool], analyzer: &Analyzer, threads: usize) -> Part {
    if threads == 1 {
        return analyze(tools, 0, analyzer);
    }
    let chunk = tools.len().div_ceil(threads);
    let parts: Vec<Part> = std::thread::scope(|s| {
        let handles: Vec<_> = tools
            .chunks(chunk)
            .enumerate()
            .map(|(i, run)| s.spawn(move || analyze(run, (i * chunk) as u32, analyzer)))
            .collect();
        handles.into_iter().map(joined).collect()
    });
    merge(parts)
}

/// Term id → how many tools' own names it leads.
fn lead_counts(docs: &[Doc], n_terms: usize) -> Vec<u32> {
    let mut leads = vec![0u32; n_terms];
    for d in docs {
        if let Some(c) = leads.get_mut(d.lead as usize) {
            *c += 1;
        }
    }
    leads
}

/// The index's terms: each with its postings and idf, and its per-source postings and idf;
/// `counts` is (tools, sources) of the catalog.
fn terms(
    term_texts: Vec<String>,
    postings: Vec<Vec<Posting>>,
    source_postings: Vec<Vec<(u32, f32)>>,
    leads: &[u32],
    source_terms: &[bool],
    counts: (usize, usize),
    params: &Params,
) -> Vec<Term> {
    let n = counts.0.max(1) as f64;
    let ns = counts.1.max(1) as f64;
    term_texts
        .into_iter()
        .zip(postings)
        .zip(source_postings)
        .enumerate()
        .map(|(id, ((text, postings), source_postings))| {
            let df = postings.len() as f64;
            let sdf = source_postings.len() as f64;
            Term {
                leads: leads[id],
                in_source: source_terms[id],
                text,
                idf: (1.0 + (n - df + 0.5) / (df + 0.5)).ln().powf(params.idf_power),
                postings,
                source_idf: (1.0 + (ns - sdf + 0.5) / (sdf + 0.5)).ln().powf(params.idf_power),
                source_postings,
            }
        })
        .collect()
}

/// A scoped thread's result (its panic, if any, goes on in the caller).
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// BM25F postings of every term, and of every source taken as one document.
#[allow(clippy::type_complexity)]
fn weigh(
    doc_terms: &[(u32, [u16; FIELDS])],
    doc_starts: &[usize],
    doc_lens: &[[u32; FIELDS]],
    docs: &[Doc],
    n_sources: usize,
    n_terms: usize,
    params: &Params,
) -> (Vec<Vec<Posting>>, Vec<Vec<(u32, f32)>>) {
    let terms_of = |d: usize| &doc_terms[doc_starts[d]..doc_starts[d + 1]];

    // BM25F: length-normalise each field against its own average, weight, then saturate. The
    // average is over the tools that have the field: most tools of some catalogs have no title
    // or parameters, and counting them as empty makes every real one look long.
    let mut avg = [0f64; FIELDS];
    let mut have = [0usize; FIELDS];
    for l in doc_lens {
        for f in 0..FIELDS {
            avg[f] += l[f] as f64;
            have[f] += usize::from(l[f] > 0);
        }
    }
    for (a, h) in avg.iter_mut().zip(have) {
        *a = (*a / h.max(1) as f64).max(1.0);
    }
    // each term's postings allocated once, at its document frequency
    let mut df = vec![0usize; n_terms];
    for (t, _) in doc_terms {
        df[*t as usize] += 1;
    }
    let mut postings: Vec<Vec<Posting>> = df.into_iter().map(Vec::with_capacity).collect();
    for (d, lens) in doc_lens.iter().enumerate() {
        let norm: [f64; FIELDS] = std::array::from_fn(|f| {
            let ratio = lens[f] as f64 / avg[f];
            (1.0 - params.b[f] + params.b[f] * ratio).max(ratio / params.damp_beyond[f])
        });
        for (t, tf) in terms_of(d) {
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
    let mut source_postings: Vec<Vec<(u32, f32)>> = vec![Vec::new(); n_terms];
    let mut scratch = vec![0f64; n_terms];
    let mut touched: Vec<u32> = Vec::new();
    for (sidx, ds) in by_source.iter().enumerate() {
        for &d in ds {
            for (t, tf) in terms_of(d) {
                let v: f64 = (0..FIELDS).map(|f| params.field_weight[f] * tf[f] as f64).sum();
                if scratch[*t as usize] == 0.0 {
                    touched.push(*t);
                }
                scratch[*t as usize] += v;
            }
        }
        let norm = 1.0 - params.source_b + params.source_b * src_len[sidx] / avg_src;
        for &t in &touched {
            let tilde = scratch[t as usize] / norm;
            let sat = tilde * (params.k1 + 1.0) / (params.k1 + tilde);
            source_postings[t as usize].push((sidx as u32, sat as f32));
            scratch[t as usize] = 0.0;
        }
        touched.clear();
    }
    for p in &mut postings {
        p.shrink_to_fit();
    }
    for p in &mut source_postings {
        p.shrink_to_fit();
    }
    (postings, source_postings)
}

/// Compact names (full, and without the `server-` prefix) → tools; lower-case names → tool.
fn name_tables(tools: &[CatalogTool]) -> (StrTable, StrTable) {
    let mut compact_names: FxHashMap<String, Vec<u32>> = FxHashMap::default();
    let mut exact_names: FxHashMap<String, u32> = FxHashMap::default();
    for (d, ct) in tools.iter().enumerate() {
        let d = d as u32;
        let full = names::compact(&ct.tool.name);
        let part = names::compact(tool_part(&ct.tool.name, &ct.source));
        for key in [full, part] {
            let v = compact_names.entry(key).or_default();
            // tools come in order: only this one can be there twice (its two keys equal)
            if v.last() != Some(&d) {
                v.push(d);
            }
        }
        exact_names.entry(ct.tool.name.to_lowercase()).or_insert(d);
    }
    (StrTable::from_map(compact_names), StrTable::from_single(exact_names))
}

/// Prefixes and suffixes (≥ 4 chars, ≥ half the term) of name-field terms → terms. A term of
/// more than `MAX_AFFIX_TERM_CHARS` characters has none: its affixes would cost the square of
/// its length.
fn affix_table(term_texts: &[String], name_vocab: &[bool]) -> StrTable {
    let mut affixes: FxHashMap<String, Vec<u32>> = FxHashMap::default();
    for (id, text) in term_texts.iter().enumerate() {
        if !name_vocab[id] || text.chars().nth(MAX_AFFIX_TERM_CHARS).is_some() {
            continue;
        }
        let chars: Vec<char> = text.chars().collect();
        let len = chars.len();
        for l in 4.max(len.div_ceil(2))..len {
            for key in [&chars[..l], &chars[len - l..]] {
                let v = affixes.entry(key.iter().collect()).or_default();
                // terms come in order: only this one can be there twice (a prefix that is
                // also a suffix)
                if v.last() != Some(&(id as u32)) {
                    v.push(id as u32);
                }
            }
        }
    }
    StrTable::from_map(affixes)
}

/// One-character deletions of the surface words (none longer than `MAX_TYPO_WORD_CHARS`) →
/// surface word ids.
fn deletion_table(surfaces: &[(String, u32)]) -> StrTable {
    let mut deletions: FxHashMap<String, Vec<u32>> = FxHashMap::default();
    for (sid, (w, _)) in surfaces.iter().enumerate() {
        for del in names::deletions(w) {
            deletions.entry(del).or_default().push(sid as u32);
        }
    }
    StrTable::from_map(deletions)
}

/// Pair ids in key order (a pair's id is its key's position; ids with equal keys, from
/// different runs of a parallel build, become one), then the occurrences grouped by pair (a
/// counting sort over the tools in order: tools stay in order within a pair).
fn pair_table(pair_keys: Vec<u64>, pids: Vec<u32>, bits_in: Vec<u8>, starts: Vec<usize>) -> PairTable {
    let mut by_key: Vec<(u64, u32)> = pair_keys.iter().enumerate().map(|(i, &k)| (k, i as u32)).collect();
    drop(pair_keys);
    by_key.sort_unstable();
    let mut rank = vec![0u32; by_key.len()];
    let mut keys: Vec<u64> = Vec::with_capacity(by_key.len());
    for (key, pid) in by_key {
        if keys.last() != Some(&key) {
            keys.push(key);
        }
        rank[pid as usize] = (keys.len() - 1) as u32;
    }
    keys.shrink_to_fit();
    let mut offsets = vec![0u32; keys.len() + 1];
    for &pid in &pids {
        offsets[rank[pid as usize] as usize + 1] += 1;
    }
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
    let mut fill = offsets.clone();
    let mut docs = vec![0u32; pids.len()];
    let mut bits = vec![0u8; pids.len()];
    for (d, range) in starts.windows(2).enumerate() {
        for i in range[0]..range[1] {
            let r = rank[pids[i] as usize] as usize;
            docs[fill[r] as usize] = d as u32;
            bits[fill[r] as usize] = bits_in[i];
            fill[r] += 1;
        }
    }
    PairTable {
        keys,
        offsets,
        docs,
        bits,
    }
}

/// A run's terms as [`analyze`] meets them.
#[derive(Default)]
struct Vocab {
    term_ids: FxHashMap<String, u32>,
    /// Term id → stem, in first-seen order; and, by term id, the flags of [`Part`].
    term_texts: Vec<String>,
    name_vocab: Vec<bool>,
    source_terms: Vec<bool>,
    /// Surface word → term (None for stop words): stems each distinct word once.
    word_terms: FxHashMap<String, Option<u32>>,
    /// Term id → its entry of the current tool in `doc_terms` (NONE when it has none yet): no
    /// per-tool sorting or allocation.
    slot: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl Vocab {
    /// The term of a lower-case word (None for a stop word), added when new.
    fn term(&mut self, w: &str, analyzer: &Analyzer) -> Option<u32> {
        if let Some(id) = self.word_terms.get(w) {
            return *id;
        }
        let id = if is_stop_word(w) {
            None
        } else {
            let stem = analyzer.stem(w);
            let next = self.term_texts.len() as u32;
            let id = *self.term_ids.entry(stem.clone()).or_insert(next);
            if id == next {
                self.term_texts.push(stem);
                self.name_vocab.push(false);
                self.source_terms.push(false);
                self.slot.push(NONE);
            }
            Some(id)
        };
        self.word_terms.insert(w.to_string(), id);
        id
    }

    /// One more occurrence of term `id` in `field` of the current tool; whether it is the
    /// first there.
    fn occurs(&mut self, doc_terms: &mut Vec<(u32, [u16; FIELDS])>, id: u32, field: Field) -> bool {
        let s = &mut self.slot[id as usize];
        if *s == NONE {
            *s = doc_terms.len() as u32;
            doc_terms.push((id, [0; FIELDS]));
        }
        let tf = &mut doc_terms[*s as usize].1[field as usize];
        *tf = tf.saturating_add(1);
        *tf == 1
    }

    /// One occurrence of a camelCase word whole (`promql` of `PromQL`) in `field` of the
    /// current tool, beside its parts: not a word more of the field's length, nor a pair, nor a
    /// name word for name coverage (which counts `ClickUp_add_task` as four words). Whether it
    /// is a name term the tool did not have.
    fn whole(&mut self, w: &str, analyzer: &Analyzer, doc_terms: &mut Vec<(u32, [u16; FIELDS])>, field: Field) -> bool {
        let Some(id) = self.term(w, analyzer) else {
            return false;
        };
        if field == Field::Source {
            self.source_terms[id as usize] = true;
        }
        self.occurs(doc_terms, id, field) && field == Field::Name
    }
}

/// The first pass over a run of tools (the first of them is tool `doc_base` of the catalog).
fn analyze(tools: &[CatalogTool], doc_base: u32, analyzer: &Analyzer) -> Part {
    let mut pass = Pass::new(tools.len(), analyzer);
    for (d, ct) in tools.iter().enumerate() {
        pass.tool(doc_base + d as u32, ct);
    }
    pass.finish()
}

/// [`analyze`] under way: what the run's tools have added up to so far.
struct Pass<'a> {
    analyzer: &'a Analyzer,
    tok: Tokenizer,
    /// The camelCase word being read (see `Vocab::whole`), one buffer for the whole run.
    run: String,
    words: Words,
    doc_starts: Vec<usize>,
    doc_lens: Vec<[u32; FIELDS]>,
    docs: Vec<Doc>,
    source_ids: FxHashMap<&'a str, u32>,
    sources: Vec<String>,
}

/// What the words of a run add up to: their terms, each tool's term counts, the adjacent pairs
/// and the typo targets.
#[derive(Default)]
struct Words {
    vocab: Vocab,
    /// Per tool, in one array: (term, frequency in each field), tool d at
    /// `doc_terms[doc_starts[d]..doc_starts[d + 1]]`.
    doc_terms: Vec<(u32, [u16; FIELDS])>,
    surface_ids: FxHashMap<String, u32>,
    surfaces: Vec<(String, u32)>,
    pairs: Pairs,
}

/// Adjacent pairs: pair key → dense id; every (pair id, tool, field bits), one per tool and
/// pair.
#[derive(Default)]
struct Pairs {
    ids: FxHashMap<u64, u32>,
    keys: Vec<u64>,
    /// Pair id → its latest tool and entry, to merge field bits.
    last: Vec<(u32, u32)>,
    pids: Vec<u32>,
    bits: Vec<u8>,
    starts: Vec<usize>,
}

/// One tool's tallies while its fields are read.
struct ToolWords {
    doc: u32,
    lens: [u32; FIELDS],
    /// Words of the tool's name, source and title so far (see `MAX_LABEL_WORDS`).
    label_words: usize,
    /// Distinct name terms that are only the whole of a camelCase word.
    glued_name_terms: usize,
    /// The first term of its own name (`Doc::lead`), `NONE` until there is one.
    lead: u32,
}

impl<'a> Pass<'a> {
    fn new(tools: usize, analyzer: &'a Analyzer) -> Self {
        Pass {
            analyzer,
            tok: Tokenizer::default(),
            run: String::new(),
            words: Words {
                pairs: Pairs {
                    starts: Vec::with_capacity(tools + 1),
                    ..Pairs::default()
                },
                ..Words::default()
            },
            doc_starts: Vec::with_capacity(tools + 1),
            doc_lens: Vec::with_capacity(tools),
            docs: Vec::with_capacity(tools),
            source_ids: FxHashMap::default(),
            sources: Vec::new(),
        }
    }

    /// Reads tool `doc`'s fields and records it.
    fn tool(&mut self, doc: u32, ct: &'a CatalogTool) {
        let start = self.words.doc_terms.len();
        self.doc_starts.push(start);
        self.words.pairs.starts.push(self.words.pairs.pids.len());
        let mut tool = ToolWords {
            doc,
            lens: [0; FIELDS],
            label_words: 0,
            glued_name_terms: 0,
            lead: NONE,
        };
        let rest = ct.tool.rest();
        let schema = rest.schema_view();
        for field in ALL_FIELDS {
            match field {
                Field::Name => self.text(own_name(&ct.tool.name, &ct.source), field, &mut tool),
                Field::Source => self.text(&ct.source, field, &mut tool),
                Field::Title => {
                    if let Some(t) = &ct.tool.title {
                        self.text(t, field, &mut tool);
                    }
                    if let Some(t) = ct.tool.annotation_title() {
                        self.text(&t, field, &mut tool);
                    }
                }
                Field::Description => self.text(
                    &crate::analyzer::without_web_addresses(ct.tool.description_str()),
                    field,
                    &mut tool,
                ),
                Field::Param => {
                    for p in &schema.params {
                        self.text(&p.name, field, &mut tool);
                    }
                }
                Field::ParamDescription => {
                    for p in &schema.params {
                        if let Some(d) = &p.description {
                            self.text(d, field, &mut tool);
                        }
                    }
                }
                Field::ParamValue => {
                    // the values a parameter accepts are words a request may carry
                    // (`news`, `france`, `markdown`)
                    for p in &schema.params {
                        for e in &p.enum_values {
                            self.text(e, field, &mut tool);
                        }
                    }
                }
            }
        }
        self.end_tool(start, ct, tool);
    }

    /// The words of one text of `field`. A camelCase word is also a term whole (`PromQL` →
    /// `prom`, `ql` and `promql`), since a request spells it in lower case: `run` is the word
    /// being read, in `run_parts` parts.
    fn text(&mut self, text: &str, field: Field, tool: &mut ToolWords) {
        let analyzer = self.analyzer;
        let Pass { tok, run, words, .. } = self;
        let mut prev: Option<u32> = None;
        run.clear();
        let mut run_parts = 0usize;
        tok.for_each_word_marked(text, |w, camel| {
            if camel {
                run.push_str(w);
                run_parts += 1;
            } else {
                if run_parts > 1 {
                    tool.glued_name_terms += usize::from(words.whole(run, analyzer, field));
                }
                run.clear();
                run.push_str(w);
                run_parts = 1;
            }
            words.word(w, analyzer, field, &mut prev, tool);
        });
        if run_parts > 1 {
            tool.glued_name_terms += usize::from(words.whole(run, analyzer, field));
        }
    }

    /// Closes tool `ct`, whose term entries start at `start`: clears the term slots, records its
    /// source, its `Doc` and field lengths.
    fn end_tool(&mut self, start: usize, ct: &'a CatalogTool, tool: ToolWords) {
        let per_term = &self.words.doc_terms[start..];
        for &(t, _) in per_term {
            self.words.vocab.slot[t as usize] = NONE;
        }
        let name_terms = per_term.iter().filter(|(_, tf)| tf[Field::Name as usize] > 0).count() - tool.glued_name_terms;
        let next_source = self.source_ids.len() as u32;
        let source = *self.source_ids.entry(ct.source.as_str()).or_insert(next_source);
        if source == next_source {
            self.sources.push(ct.source.clone());
        }
        self.docs.push(Doc {
            source,
            name: ct.tool.name.clone(),
            name_terms: name_terms.min(u16::MAX as usize) as u16,
            lead: tool.lead,
            length: tool.lens.iter().sum(),
        });
        self.doc_lens.push(tool.lens);
    }

    fn finish(self) -> Part {
        let Pass {
            words,
            mut doc_starts,
            doc_lens,
            docs,
            sources,
            ..
        } = self;
        let Words {
            vocab,
            doc_terms,
            surfaces,
            mut pairs,
            ..
        } = words;
        doc_starts.push(doc_terms.len());
        pairs.starts.push(pairs.pids.len());
        let Vocab {
            term_texts,
            name_vocab,
            source_terms,
            ..
        } = vocab;
        Part {
            term_texts,
            name_vocab,
            source_terms,
            doc_terms,
            doc_starts,
            doc_lens,
            docs,
            sources,
            pair_keys: pairs.keys,
            pair_pids: pairs.pids,
            pair_bits: pairs.bits,
            pair_starts: pairs.starts,
            surfaces,
        }
    }
}

impl Words {
    /// One word of `field` of the current tool: its term's counts, the pair it makes with the
    /// previous word's term (`prev`), the tool's lead term, and the label-word tables.
    fn word(&mut self, w: &str, analyzer: &Analyzer, field: Field, prev: &mut Option<u32>, tool: &mut ToolWords) {
        let Some(id) = self.vocab.term(w, analyzer) else {
            return;
        };
        if let Some(pr) = prev.filter(|&pr| pr != id) {
            self.pairs.occurs(pair_key(pr, id), tool.doc, field);
        }
        *prev = Some(id);
        if field == Field::Name && tool.lead == NONE {
            tool.lead = id;
        }
        self.vocab.occurs(&mut self.doc_terms, id, field);
        tool.lens[field as usize] += 1;
        if field == Field::Source {
            self.vocab.source_terms[id as usize] = true;
        }
        if matches!(field, Field::Name | Field::Source | Field::Title) {
            self.label_word(w, id, tool);
        }
    }

    /// A word of the tool's name, source or title with term `id`: a tool's first label words
    /// feed the affix and typo tables (their size is bounded per tool, however long its name or
    /// title).
    fn label_word(&mut self, w: &str, id: u32, tool: &mut ToolWords) {
        tool.label_words += 1;
        if tool.label_words > MAX_LABEL_WORDS {
            return;
        }
        self.vocab.name_vocab[id as usize] = true;
        // typo targets; a longer word's deletions would cost the square of its length
        let chars = w.chars().take(MAX_TYPO_WORD_CHARS + 1).count();
        if (5..=MAX_TYPO_WORD_CHARS).contains(&chars) && !self.surface_ids.contains_key(w) {
            self.surface_ids.insert(w.to_string(), self.surfaces.len() as u32);
            self.surfaces.push((w.to_string(), id));
        }
    }

    /// See [`Vocab::whole`].
    fn whole(&mut self, w: &str, analyzer: &Analyzer, field: Field) -> bool {
        self.vocab.whole(w, analyzer, &mut self.doc_terms, field)
    }
}

impl Pairs {
    /// One occurrence of the pair `key` in `field` of tool `doc`.
    fn occurs(&mut self, key: u64, doc: u32, field: Field) {
        let next = self.ids.len() as u32;
        let pid = *self.ids.entry(key).or_insert(next);
        if pid == next {
            self.last.push((NONE, 0));
            self.keys.push(key);
        }
        let last = &mut self.last[pid as usize];
        if last.0 == doc {
            self.bits[last.1 as usize] |= field.bit();
        } else {
            *last = (doc, self.pids.len() as u32);
            self.pids.push(pid);
            self.bits.push(field.bit());
        }
    }
}

/// Joins the parts of consecutive runs of tools into one, with global term, source and pair
/// ids in first-seen order: the same ids a one-thread pass assigns.
fn merge(parts: Vec<Part>) -> Part {
    let mut out = Part::default();
    // Exact sizes: the merged arrays are the largest of the build.
    let total = |len: fn(&Part) -> usize| parts.iter().map(len).sum::<usize>();
    out.doc_terms.reserve_exact(total(|p| p.doc_terms.len()));
    out.doc_starts.reserve_exact(total(|p| p.doc_starts.len()));
    out.doc_lens.reserve_exact(total(|p| p.doc_lens.len()));
    out.docs.reserve_exact(total(|p| p.docs.len()));
    out.pair_pids.reserve_exact(total(|p| p.pair_pids.len()));
    out.pair_bits.reserve_exact(total(|p| p.pair_bits.len()));
    out.pair_starts.reserve_exact(total(|p| p.pair_starts.len()));
    let mut term_ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut source_ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut surface_seen: FxHashSet<String> = FxHashSet::default();
    for part in parts {
        let terms: Vec<u32> = part
            .term_texts
            .into_iter()
            .zip(part.name_vocab.iter().zip(&part.source_terms))
            .map(|(text, (&name, &source))| {
                let next = out.term_texts.len() as u32;
                let id = *term_ids.entry(text.clone()).or_insert(next);
                if id == next {
                    out.term_texts.push(text);
                    out.name_vocab.push(false);
                    out.source_terms.push(false);
                }
                out.name_vocab[id as usize] |= name;
                out.source_terms[id as usize] |= source;
                id
            })
            .collect();
        let srcs: Vec<u32> = part
            .sources
            .into_iter()
            .map(|name| {
                let next = out.sources.len() as u32;
                let id = *source_ids.entry(name.clone()).or_insert(next);
                if id == next {
                    out.sources.push(name);
                }
                id
            })
            .collect();
        let base = out.doc_terms.len();
        out.doc_starts
            .extend(part.doc_starts[..part.doc_starts.len() - 1].iter().map(|s| s + base));
        out.doc_terms
            .extend(part.doc_terms.into_iter().map(|(t, tf)| (terms[t as usize], tf)));
        out.doc_lens.extend(part.doc_lens);
        out.docs.extend(part.docs.into_iter().map(|mut d| {
            d.source = srcs[d.source as usize];
            if d.lead != u32::MAX {
                d.lead = terms[d.lead as usize];
            }
            d
        }));
        // A pair seen in several runs keeps one id per run here; `pair_table` merges equal keys.
        let first_pid = out.pair_keys.len() as u32;
        out.pair_keys.extend(
            part.pair_keys
                .into_iter()
                .map(|key| pair_key(terms[(key >> 32) as usize], terms[(key & 0xffff_ffff) as usize])),
        );
        let base = out.pair_pids.len();
        out.pair_starts
            .extend(part.pair_starts[..part.pair_starts.len() - 1].iter().map(|s| s + base));
        out.pair_pids.extend(part.pair_pids.into_iter().map(|p| p + first_pid));
        out.pair_bits.extend(part.pair_bits);
        for (w, t) in part.surfaces {
            if surface_seen.insert(w.clone()) {
                out.surfaces.push((w, terms[t as usize]));
            }
        }
    }
    out.doc_starts.push(out.doc_terms.len());
    out.pair_starts.push(out.pair_pids.len());
    out
}
