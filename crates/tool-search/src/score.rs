//! Scoring: per-tool accumulators over the postings of a prepared query, then the ranking
//! rules (gate, coverage, name bonus, source evidence, name slots, abstention).

use std::cell::RefCell;

use super::query::{ExpansionKind, Prepared};
use super::{Field, Hit, Index, ALL_FIELDS, PARAMS};
use crate::hashing::FxHashSet;

/// Per-tool accumulators of one search.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Acc {
    /// Σ over query groups of the group's best term contribution (weight × idf × tf part).
    pub bm25: f64,
    /// Σ of adjacent-pair contributions.
    pub pairs: f64,
    /// Importance of the matched groups (numerator of coverage).
    pub importance: f64,
    /// Groups with a term in the tool's own name.
    pub name_hits: u16,
    /// Groups matched in the tool's name, source or title.
    pub label_hits: u16,
    /// The query's rarest known word matched.
    pub rarest: bool,
    /// The tool's source's own score.
    pub source: f64,
    /// Importance of the groups matched other than through a synonym (the word itself, its
    /// translation, an affix or a typo).
    pub direct_importance: f64,
}

/// A group's best match in one tool.
#[derive(Debug, Clone, Copy, Default)]
struct Best {
    value: f64,
    name: bool,
    label: bool,
    /// Reached other than through a synonym.
    direct: bool,
}

/// Dense per-tool buffers reused across searches on a thread: a search touches only the
/// tools its terms reach, and resets exactly those.
#[derive(Default)]
struct Scratch {
    acc: Vec<Acc>,
    seen: Vec<bool>,
    touched: Vec<u32>,
    best: Vec<Best>,
    group_touched: Vec<u32>,
    source_best: Vec<f64>,
    source_total: Vec<f64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Index {
    /// Accumulators of every tool the query reaches, by tool.
    pub(super) fn accumulate(&self, q: &Prepared) -> Vec<(u32, Acc)> {
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            self.accumulate_in(q, &mut s)
        })
    }

    fn accumulate_in(&self, q: &Prepared, s: &mut Scratch) -> Vec<(u32, Acc)> {
        let n = self.docs.len();
        if s.acc.len() < n {
            s.acc.resize(n, Acc::default());
            s.seen.resize(n, false);
            s.best.resize(n, Best::default());
        }
        let Scratch {
            acc,
            seen,
            touched,
            best,
            group_touched,
            ..
        } = s;
        for (gi, g) in q.groups.iter().enumerate() {
            for e in &g.expansions {
                let term = &self.terms[e.term as usize];
                let w = e.weight * term.idf;
                for p in &term.postings {
                    let d = p.doc as usize;
                    let v = w * p.tf as f64;
                    let b = &mut best[d];
                    if b.value == 0.0 {
                        group_touched.push(p.doc);
                    }
                    b.value = b.value.max(v);
                    b.direct |= e.kind != ExpansionKind::Alias;
                    // any of the word's terms in the name counts (`email` → `message`)
                    b.name |= p.fields & Field::Name.bit() != 0;
                    b.label |= p.fields & Field::LABELS != 0;
                }
            }
            for &d in group_touched.iter() {
                let b = std::mem::take(&mut best[d as usize]);
                if !seen[d as usize] {
                    seen[d as usize] = true;
                    touched.push(d);
                }
                let a = &mut acc[d as usize];
                a.bm25 += b.value;
                if b.direct {
                    a.direct_importance += g.importance;
                }
                a.importance += g.importance;
                a.name_hits += u16::from(b.name);
                a.label_hits += u16::from(b.label);
                a.rarest |= q.rarest == Some(gi);
            }
            group_touched.clear();
        }
        for (key, idf) in &q.pairs {
            for (d, bits) in self.pairs.get(*key) {
                if seen[d as usize] {
                    acc[d as usize].pairs += PARAMS.pair_weight * idf * pair_field_weight(bits);
                }
            }
        }
        let source = self.source_scores(q, &mut s.source_best, &mut s.source_total);
        let mut out: Vec<(u32, Acc)> = Vec::with_capacity(s.touched.len());
        for &d in &s.touched {
            let mut a = std::mem::take(&mut s.acc[d as usize]);
            s.seen[d as usize] = false;
            a.source = source[self.docs[d as usize].source as usize];
            out.push((d, a));
        }
        s.touched.clear();
        out
    }

    /// Per-source BM25 of the query, each source read as one document (all its tools).
    fn source_scores(&self, q: &Prepared, best: &mut Vec<f64>, total: &mut Vec<f64>) -> Vec<f64> {
        best.clear();
        best.resize(self.n_sources, 0.0);
        total.clear();
        total.resize(self.n_sources, 0.0);
        for g in &q.groups {
            for e in &g.expansions {
                let term = &self.terms[e.term as usize];
                let w = e.weight * term.source_idf;
                for &(src, tf) in &term.source_postings {
                    let v = w * tf as f64;
                    if v > best[src as usize] {
                        best[src as usize] = v;
                    }
                }
            }
            for (t, b) in total.iter_mut().zip(best.iter_mut()) {
                *t += std::mem::take(b);
            }
        }
        total.clone()
    }

    /// Share of the query's importance a tool matched.
    pub(super) fn coverage(q: &Prepared, acc: &Acc) -> f64 {
        if q.total_importance > 0.0 {
            acc.importance / q.total_importance
        } else {
            0.0
        }
    }

    /// Share of the tool's own name words the query matched.
    pub(super) fn name_coverage(&self, doc: u32, acc: &Acc) -> f64 {
        let n = self.docs[doc as usize].name_terms;
        if n == 0 {
            0.0
        } else {
            (acc.name_hits as f64 / n as f64).min(1.0)
        }
    }

    /// What a tool's own evidence is divided by: BM25's length pivot over the tool's whole
    /// text, with the request's [`Prepared::length_b`] (1 for a request that is not verbose).
    pub(super) fn length_norm(&self, q: &Prepared, doc: u32) -> f64 {
        if q.length_b == 0.0 {
            return 1.0;
        }
        let relative = f64::from(self.docs[doc as usize].length) / self.average_length.max(1.0);
        1.0 - q.length_b + q.length_b * relative
    }

    /// The ranking score (before name slots).
    pub(super) fn final_score(&self, q: &Prepared, doc: u32, acc: &Acc) -> f64 {
        let p = &PARAMS;
        let cov = Index::coverage(q, acc);
        let own = (acc.bm25 + acc.pairs) / self.length_norm(q, doc);
        let evidence = own + (p.source_weight * acc.source).min(p.source_cap * own);
        evidence * cov.powf(p.coverage_power) + p.name_bonus * self.name_coverage(doc, acc) * cov
    }

    /// Whether the query reads as a request for something the catalog does not offer: a short
    /// request whose best tool covers little of it (unknown words included). Under 60% with
    /// none of its words in the tool's name, source or title — for five words only when
    /// synonyms carry most of that, since matching a request only through synonyms is weak
    /// evidence that the tool does what it asks; under 35% even with such a word.
    pub(super) fn abstains(q: &Prepared, best: &Acc) -> bool {
        let p = &PARAMS;
        let n = q.groups.len();
        if n > p.short_query_words + 1 {
            return false;
        }
        let whole = q.total_importance + q.unknown_importance;
        let covered = if whole > 0.0 { best.importance / whole } else { 0.0 };
        if best.label_hits > 0 {
            return n <= p.short_query_words && covered < p.abstain_label_coverage;
        }
        let through_synonyms = best.importance - best.direct_importance > 0.5 * best.importance;
        covered < p.abstain_coverage && (n <= p.short_query_words || through_synonyms)
    }

    /// Whether `doc` offers the request's operation: it has the operation word, and (when the
    /// request has other words, literal values aside) at least one of them — the operation on
    /// what the request asks it of, not on anything (`create a slack channel` is not offered
    /// by `calendar-create_event`; `send sms` by no tool of a catalog that has never heard of
    /// SMS). Words match in any form the search matches them by (itself, a synonym, a
    /// translation, inside a name word, one typo off); true when the request has no operation
    /// word.
    pub(super) fn has_operation(&self, q: &Prepared, doc: u32) -> bool {
        let Some(g) = q.operation else {
            return true;
        };
        if !self.matches_group(q, g, doc) {
            return false;
        }
        // a word the catalog does not know is matched by no tool: `send sms to …` is offered
        // by none of the tools that send mail
        let mut others = (0..q.groups.len())
            .filter(|&o| o != g && q.groups[o].factor == 1.0)
            .peekable();
        others.peek().is_none() || others.any(|o| self.matches_group(q, o, doc))
    }

    /// Whether `doc` matches query word `g` through any of its expansions.
    fn matches_group(&self, q: &Prepared, g: usize, doc: u32) -> bool {
        q.groups[g]
            .expansions
            .iter()
            // postings are in tool order
            .any(|e| {
                self.terms[e.term as usize]
                    .postings
                    .binary_search_by_key(&doc, |p| p.doc)
                    .is_ok()
            })
    }

    /// Whether a short request asks for an operation none of its best tools (`best`, in rank
    /// order, name slots left out) offers: `delete my last slack message` when the Slack tools
    /// post, list and read messages but none deletes. The request's first word is its
    /// operation when the catalog itself names operations with it (it starts the names of
    /// several tools); a tool offers it when it matches the word anywhere, in any form, together
    /// with another of the request's words (see [`Index::has_operation`]). A request the best
    /// tools answer in other words (`remove` for `delete`) still gets them.
    pub(super) fn misses_operation(&self, q: &Prepared, best: impl Iterator<Item = u32>) -> bool {
        let p = &PARAMS;
        if q.operation.is_none() || q.groups.len() > p.operation_max_words {
            return false;
        }
        let mut seen = 0;
        for d in best.take(p.operation_depth) {
            if self.has_operation(q, d) {
                return false;
            }
            seen += 1;
        }
        seen > 0
    }

    pub(super) fn rank(&self, q: &Prepared, accs: &[(u32, Acc)], limit: usize) -> Vec<Hit> {
        self.rank_lexical(q, accs, limit).hits
    }

    /// The lexical ranking to `limit`, with what fusion needs to know about it.
    pub(super) fn rank_lexical(&self, q: &Prepared, accs: &[(u32, Acc)], limit: usize) -> Lexical {
        let p = &PARAMS;
        let max_cov = accs.iter().map(|(_, a)| Index::coverage(q, a)).fold(0.0, f64::max);
        let mut scored: Vec<(f64, u32, usize)> = accs
            .iter()
            .enumerate()
            .filter(|(_, (_, a))| {
                // long requests are not gated: coverage already ranks their stray matches low
                q.groups.len() > p.short_query_words || a.rarest || Index::coverage(q, a) >= p.gate_floor * max_cov
            })
            .map(|(i, (d, a))| (self.final_score(q, *d, a), *d, i))
            .collect();
        let by_score = |a: &(f64, u32, usize), b: &(f64, u32, usize)| {
            b.0.total_cmp(&a.0)
                .then_with(|| self.docs[a.1 as usize].name.cmp(&self.docs[b.1 as usize].name))
                .then(a.1.cmp(&b.1))
        };
        // only the head needs ordering
        let keep = limit.saturating_add(q.name_matches.len() + 1);
        if scored.len() > keep {
            scored.select_nth_unstable_by(keep - 1, by_score);
            scored.truncate(keep);
        }
        scored.sort_by(by_score);
        let mut abstained = false;
        if let Some(&(_, _, i)) = scored.first() {
            let unslotted = scored
                .iter()
                .map(|s| s.1)
                .filter(|d| Some(*d) != q.exact && !q.name_matches.contains(d));
            if Index::abstains(q, &accs[i].1) || self.misses_operation(q, unslotted) {
                scored.clear();
                abstained = true;
            }
        }
        let top = scored.first().map_or(0.0, |s| s.0);
        // a long request's other needs score far below its main one: not cut
        if q.groups.len() <= p.short_query_words {
            scored.retain(|s| s.0 >= p.relative_cut * top);
        }

        // name slots: the exact name first, then names the query spells (each listed once),
        // but for the exact one; a set, not a scan, tells the scored tools already slotted
        let mut slots: Vec<u32> = q.exact.into_iter().collect();
        slots.extend(q.name_matches.iter().filter(|&&d| Some(d) != q.exact));
        let slotted: FxHashSet<u32> = slots.iter().copied().collect();
        let mut hits: Vec<Hit> = Vec::with_capacity(limit.min(scored.len() + slots.len()));
        let top = top.max(0.0);
        for (i, d) in slots.iter().enumerate().take(limit) {
            hits.push(Hit {
                doc: *d as usize,
                score: top + (slots.len() - i) as f64,
            });
        }
        for (sc, d, _) in scored {
            if hits.len() >= limit {
                break;
            }
            if !slotted.contains(&d) {
                hits.push(Hit {
                    doc: d as usize,
                    score: sc,
                });
            }
        }
        hits.truncate(limit);
        Lexical { hits, abstained }
    }
}

/// A lexical ranking and whether it abstained (the hybrid search reads the verdict).
#[derive(Debug, Clone, Default)]
pub(super) struct Lexical {
    pub hits: Vec<Hit>,
    /// The best tool covered too little of a short request, or the request's operation is in
    /// none of its best tools: nothing is returned but the names it spells.
    pub abstained: bool,
}

/// A pair counts at the weight of the best field it occurs in, capped at 1 (a description).
pub(super) fn pair_field_weight(bits: u8) -> f64 {
    ALL_FIELDS
        .iter()
        .filter(|f| bits & f.bit() != 0)
        .map(|f| PARAMS.field_weight[*f as usize])
        .fold(0.0, f64::max)
        .min(1.0)
}
