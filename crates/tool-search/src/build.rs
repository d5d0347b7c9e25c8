//! Index construction: one pass over the tools collects (term, field) counts, then BM25F
//! postings, per-source postings, and the lookup tables for names, affixes and typos.
//!
//! Every distinct surface word is stemmed once (a word → term cache), which keeps a build of
//! 11,739 real tools within budget.
//!
//! - build.rs: [`build`] in its steps: the first pass (on several threads for a large
//!   catalog), then the terms, their weights and postings, and the tables, built side by side.
//! - `build/pass.rs`: the first pass over a run of tools, and the runs joined in order.
//! - `build/tables.rs`: the lookup tables for names, affixes, typos and word pairs.

mod pass;
mod tables;

use crate::hashing::FxHashMap;

use super::analyzer::Analyzer;
use super::{Doc, Index, Params, Posting, Term, FIELDS};
use crate::model::CatalogTool;
use pass::{analyze, merge};
use tables::{affix_table, deletion_table, name_tables, pair_table};

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
