//! The lookup tables of a built index: names, affixes, deletions (typos) and word pairs.

use crate::hashing::FxHashMap;
use crate::model::CatalogTool;
use crate::table::StrTable;
use crate::{names, tool_part, PairTable, MAX_AFFIX_TERM_CHARS};

/// Compact names (full, and without the `server-` prefix) → tools; lower-case names → tool.
pub(super) fn name_tables(tools: &[CatalogTool]) -> (StrTable, StrTable) {
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
pub(super) fn affix_table(term_texts: &[String], name_vocab: &[bool]) -> StrTable {
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
pub(super) fn deletion_table(surfaces: &[(String, u32)]) -> StrTable {
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
pub(super) fn pair_table(pair_keys: Vec<u64>, pids: Vec<u32>, bits_in: Vec<u8>, starts: Vec<usize>) -> PairTable {
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
