//! Index construction: one pass over the tools collects (term, field) counts, then BM25F
//! postings, per-source postings, and the lookup tables for names, affixes and typos.
//!
//! Every distinct surface word is stemmed once (a word → term cache), which keeps a build of
//! 11,739 real tools within budget.

use super::fxhash::FxHashMap;
use super::table::StrTable;

use super::analyzer::{is_stop_word, Analyzer, Tokenizer};
use super::{names, pair_key, tool_part, Doc, Field, Index, PairTable, Params, Posting, Term, ALL_FIELDS, FIELDS};
use crate::model::CatalogTool;

pub(super) fn build(tools: &[CatalogTool], params: &Params) -> Index {
    let analyzer = Analyzer::default();
    let mut tok = Tokenizer::default();
    let mut term_ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut term_texts: Vec<String> = Vec::new();
    // surface word → term (None for stop words): stems each distinct word once
    let mut word_terms: FxHashMap<String, Option<u32>> = FxHashMap::default();
    let mut surface_ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut surfaces: Vec<(String, u32)> = Vec::new();
    let mut name_vocab: Vec<bool> = Vec::new();
    let mut source_terms: Vec<bool> = Vec::new();
    // per tool, in one array: (term, frequency in each field), tool d at
    // `doc_terms[doc_starts[d]..doc_starts[d + 1]]`; then field lengths. `slot` finds a term's
    // entry of the current tool (NONE when it has none yet): no per-tool sorting or allocation.
    const NONE: u32 = u32::MAX;
    let mut doc_terms: Vec<(u32, [u16; FIELDS])> = Vec::new();
    let mut doc_starts: Vec<usize> = Vec::with_capacity(tools.len() + 1);
    let mut slot: Vec<u32> = Vec::new();
    let mut doc_lens: Vec<[u32; FIELDS]> = Vec::with_capacity(tools.len());
    let mut docs = Vec::with_capacity(tools.len());
    let mut source_ids: FxHashMap<&str, u32> = FxHashMap::default();

    // adjacent pairs: pair key → dense id; every (pair id, tool, field bits), one per tool and
    // pair (`pair_last`: the pair's latest tool and entry, to merge field bits)
    let mut pair_ids: FxHashMap<u64, u32> = FxHashMap::default();
    let mut pair_last: Vec<(u32, u32)> = Vec::new();
    let mut pair_occ: Vec<(u32, u32, u8)> = Vec::new();
    for (d, ct) in tools.iter().enumerate() {
        let doc = d as u32;
        let start = doc_terms.len();
        doc_starts.push(start);
        let mut lens = [0u32; FIELDS];
        let schema = ct.tool.schema_view();
        for field in ALL_FIELDS {
            let mut add = |text: &str| {
                let mut prev: Option<u32> = None;
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
                                    source_terms.push(false);
                                    slot.push(NONE);
                                }
                                Some(id)
                            };
                            word_terms.insert(w.to_string(), id);
                            id
                        }
                    };
                    if let Some(id) = id {
                        if let Some(pr) = prev.filter(|&pr| pr != id) {
                            let next = pair_ids.len() as u32;
                            let pid = *pair_ids.entry(pair_key(pr, id)).or_insert(next);
                            if pid == next {
                                pair_last.push((NONE, 0));
                            }
                            let last = &mut pair_last[pid as usize];
                            if last.0 == doc {
                                pair_occ[last.1 as usize].2 |= field.bit();
                            } else {
                                *last = (doc, pair_occ.len() as u32);
                                pair_occ.push((pid, doc, field.bit()));
                            }
                        }
                        prev = Some(id);
                        let s = &mut slot[id as usize];
                        if *s == NONE {
                            *s = doc_terms.len() as u32;
                            doc_terms.push((id, [0; FIELDS]));
                        }
                        let tf = &mut doc_terms[*s as usize].1[field as usize];
                        *tf = tf.saturating_add(1);
                        lens[field as usize] += 1;
                        if field == Field::Source {
                            source_terms[id as usize] = true;
                        }
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
                    if let Some(t) = ct.tool.annotation_title() {
                        add(&t);
                    }
                }
                Field::Description => add(ct.tool.description_str()),
                Field::Param => {
                    for p in &schema.params {
                        add(&p.name);
                    }
                }
                Field::ParamDescription => {
                    for p in &schema.params {
                        if let Some(d) = &p.description {
                            add(d);
                        }
                        // the values a parameter accepts are words a request may carry
                        // (`news`, `france`, `markdown`)
                        for e in &p.enum_values {
                            add(e);
                        }
                    }
                }
            }
        }
        let per_term = &doc_terms[start..];
        for &(t, _) in per_term {
            slot[t as usize] = NONE;
        }
        let name_terms = per_term.iter().filter(|(_, tf)| tf[Field::Name as usize] > 0).count();
        let next_source = source_ids.len() as u32;
        let source = *source_ids.entry(ct.source.as_str()).or_insert(next_source);
        docs.push(Doc {
            source,
            name: ct.tool.name.clone(),
            name_terms: name_terms.min(u16::MAX as usize) as u16,
        });
        doc_lens.push(lens);
    }
    doc_starts.push(doc_terms.len());
    let terms_of = |d: usize| &doc_terms[doc_starts[d]..doc_starts[d + 1]];

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
    for (d, lens) in doc_lens.iter().enumerate() {
        let norm: [f64; FIELDS] = std::array::from_fn(|f| 1.0 - params.b[f] + params.b[f] * lens[f] as f64 / avg[f]);
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
    let ns = n_sources.max(1) as f64;
    let terms: Vec<Term> = term_texts
        .into_iter()
        .zip(postings)
        .zip(source_postings)
        .enumerate()
        .map(|(id, ((text, postings), source_postings))| {
            let df = postings.len() as f64;
            let sdf = source_postings.len() as f64;
            Term {
                in_source: source_terms[id],
                text,
                idf: (1.0 + (n - df + 0.5) / (df + 0.5)).ln().powf(params.idf_power),
                postings,
                source_idf: (1.0 + (ns - sdf + 0.5) / (sdf + 0.5)).ln().powf(params.idf_power),
                source_postings,
            }
        })
        .collect();

    let mut compact_names: FxHashMap<String, Vec<u32>> = FxHashMap::default();
    // postings were pushed one by one: drop the growth slack
    let mut terms = terms;
    for t in &mut terms {
        t.postings.shrink_to_fit();
        t.source_postings.shrink_to_fit();
    }
    let mut exact_names: FxHashMap<String, u32> = FxHashMap::default();
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

    let mut affixes: FxHashMap<String, Vec<u32>> = FxHashMap::default();
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
    let mut deletions: FxHashMap<String, Vec<u32>> = FxHashMap::default();
    for (sid, (w, _)) in surfaces.iter().enumerate() {
        for del in names::deletions(w) {
            deletions.entry(del).or_default().push(sid as u32);
        }
    }

    // pair ids in key order (a pair's id is its key's position), then the occurrences grouped
    // by pair (a counting sort: tools stay in order within a pair)
    let mut by_key: Vec<(u64, u32)> = pair_ids.into_iter().collect();
    by_key.sort_unstable();
    let mut rank = vec![0u32; by_key.len()];
    for (r, &(_, pid)) in by_key.iter().enumerate() {
        rank[pid as usize] = r as u32;
    }
    let keys: Vec<u64> = by_key.into_iter().map(|(k, _)| k).collect();
    let mut offsets = vec![0u32; keys.len() + 1];
    for &(pid, _, _) in &pair_occ {
        offsets[rank[pid as usize] as usize + 1] += 1;
    }
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
    let mut fill = offsets.clone();
    let mut docs_of = vec![0u32; pair_occ.len()];
    let mut bits_of = vec![0u8; pair_occ.len()];
    for &(pid, d, bits) in &pair_occ {
        let r = rank[pid as usize] as usize;
        docs_of[fill[r] as usize] = d;
        bits_of[fill[r] as usize] = bits;
        fill[r] += 1;
    }
    drop(pair_occ);
    let pairs = PairTable {
        keys,
        offsets,
        docs: docs_of,
        bits: bits_of,
    };

    Index {
        n_sources,
        analyzer,
        docs,
        terms,
        term_ids,
        compact_names: StrTable::from_map(compact_names),
        exact_names: StrTable::from_single(exact_names),
        affixes: StrTable::from_map(affixes),
        deletions: StrTable::from_map(deletions),
        surfaces,
        surface_ids,
        pairs,
    }
}
