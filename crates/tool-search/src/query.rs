//! Query analysis: each content word becomes a group of index terms it may match, each with
//! a weight; plus adjacent word pairs, and the tools whose name the query spells.

use super::aliases::{self, AliasMatch};
use super::analyzer::{self, is_stop_word, QueryWord};
use super::{clip_query, names, pair_key, Index, MAX_AFFIX_TERM_CHARS, MAX_QUERY_WORDS, MAX_TYPO_WORD_CHARS, PARAMS};
use crate::hashing::{FxHashMap, FxHashSet};

/// One query word, analysed: the index terms it may match and how much each counts.
#[derive(Debug, Clone)]
pub(super) struct Group {
    /// The word's stem (display and de-duplication).
    pub word: String,
    pub expansions: Vec<Expansion>,
    /// The group's weight in coverage: its best expansion's weight × idf.
    pub importance: f64,
    /// 1, or the literal weight for a word that only occurs inside a pasted value.
    pub factor: f64,
}

/// How a query word reached an index term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ExpansionKind {
    /// The word itself (same stem).
    Word,
    /// A synonym from the alias table.
    Alias,
    /// A translation or synonym standing in for a word the catalog lacks.
    Foreign,
    /// A name term containing the word (`mail` → `gmail`).
    Substring,
    /// A name word one edit away from an unknown word.
    Typo,
}

#[derive(Debug, Clone)]
pub(super) struct Expansion {
    pub term: u32,
    pub weight: f64,
    pub kind: ExpansionKind,
}

/// One word's expansions being collected: in first-found order, each term once, at its best
/// weight (and that weight's kind). A hash from term to position keeps long affix or typo
/// lists linear.
#[derive(Default)]
struct Expansions {
    list: Vec<Expansion>,
    at: FxHashMap<u32, usize>,
}

impl Expansions {
    fn push(&mut self, term: u32, weight: f64, kind: ExpansionKind) {
        match self.at.get(&term) {
            Some(&i) => {
                let e = &mut self.list[i];
                if weight > e.weight {
                    e.weight = weight;
                    e.kind = kind;
                }
            }
            None => {
                self.at.insert(term, self.list.len());
                self.list.push(Expansion { term, weight, kind });
            }
        }
    }

    /// The word itself, when the catalog knows it: always found first.
    fn word(&mut self) -> Option<&mut Expansion> {
        self.list.first_mut().filter(|e| e.kind == ExpansionKind::Word)
    }
}

/// A query, analysed once and scored against many tools.
#[derive(Debug)]
pub(super) struct Prepared {
    pub groups: Vec<Group>,
    pub total_importance: f64,
    /// Index of the rarest (highest-importance) group.
    pub rarest: Option<usize>,
    /// Tools whose name the query spells (any separator, without prefix, or one typo off);
    /// they get guaranteed top slots.
    pub name_matches: Vec<u32>,
    /// The tool whose full name equals the query.
    pub exact: Option<u32>,
    /// Adjacent query words known to the catalog, as (pair key, smaller idf).
    pub pairs: Vec<(u64, f64)>,
    /// What the query's unknown words would weigh had the catalog known them (abstention).
    pub unknown_importance: f64,
    /// The group of the request's operation: its first content word, when that word starts
    /// the own names of several tools (`delete` of `delete_file`; see `Index::misses_operation`).
    pub operation: Option<usize>,
    /// The b of the tool-length normalisation of this request's evidence: 0 unless the
    /// request is verbose (see `Params::verbose_full_words`).
    pub length_b: f64,
}

impl Index {
    /// Analyses the first [`super::MAX_QUERY_CHARS`] characters and [`MAX_QUERY_WORDS`] words
    /// of `query`: bounded work whatever the caller passes.
    pub(super) fn prepare(&self, query: &str) -> Prepared {
        let p = &PARAMS;
        let query = clip_query(query);
        let mut words = analyzer::query_words(query);
        words.truncate(MAX_QUERY_WORDS);
        let words = self.glue_camel_case(words);
        let words = self.read_cjk_runs(words);
        let groups = self.groups(&words);
        let pairs = self.query_pairs(&words);
        let total_importance = groups.iter().map(|g| g.importance).sum();
        // an unknown word weighs what the rarest possible word would
        let unseen_idf = (1.0 + (self.docs.len() as f64 + 0.5) / 0.5).ln().powf(p.idf_power);
        let unknown_importance = groups
            .iter()
            .filter(|g| g.expansions.is_empty())
            .map(|g| g.factor * unseen_idf)
            .sum();
        let rarest = groups
            .iter()
            .enumerate()
            .filter(|(_, g)| !g.expansions.is_empty())
            .max_by(|a, b| a.1.importance.total_cmp(&b.1.importance))
            .map(|(i, _)| i);
        let exact = self.exact_names.first(&query.trim().to_lowercase());
        let name_matches = self.name_matches(query);
        let operation = self.operation(&groups);
        let length_b = verbose_length_b(&groups);
        Prepared {
            length_b,
            operation,
            unknown_importance,
            pairs,
            groups,
            total_importance,
            rarest,
            name_matches,
            exact,
        }
    }

    /// One group per distinct stem of the query's content words, in query order.
    fn groups(&self, words: &[QueryWord]) -> Vec<Group> {
        let content: Vec<&QueryWord> = words.iter().filter(|w| !is_stop_word(&w.text)).collect();
        // A query of only stop words ("all", "me") still means something: keep them.
        let chosen: Vec<&QueryWord> = if content.is_empty() {
            words.iter().collect()
        } else {
            content
        };
        let mut groups: Vec<Group> = Vec::new();
        for qw in chosen {
            let stem = self.analyzer.stem(&qw.text);
            let factor = if qw.literal { PARAMS.literal_weight } else { 1.0 };
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
            groups.push(self.group(&qw.text, stem, factor));
        }
        groups
    }

    /// A query word's group: the index terms it may match (itself, its aliases or
    /// translations, name terms containing it, typo corrections), weighted and scaled by
    /// `factor`.
    fn group(&self, w: &str, stem: String, factor: f64) -> Group {
        let p = &PARAMS;
        let mut exps = Expansions::default();
        let known = self.term(&stem);
        if let Some(t) = known {
            exps.push(t, 1.0, ExpansionKind::Word);
        }
        for (target, how) in aliases::table().lookup(w, &stem, known.is_some()) {
            if let Some(t) = self.term(&target) {
                let (weight, kind) = match (known.is_some(), how) {
                    (true, _) => (p.alias_weight, ExpansionKind::Alias),
                    (false, AliasMatch::Exact) => (p.foreign_weight, ExpansionKind::Foreign),
                    (false, AliasMatch::ForeignStem) => (p.foreign_weight * 0.9, ExpansionKind::Foreign),
                };
                exps.push(t, weight, kind);
            }
        }
        self.push_affixes(&mut exps, &stem, known);
        if known.is_none() && (5..=MAX_TYPO_WORD_CHARS).contains(&w.chars().count()) {
            for t in self.typo_terms(w) {
                exps.push(t, p.typo_weight, ExpansionKind::Typo);
            }
        }
        let mut exps = exps.list;
        exps.iter_mut().for_each(|e| e.weight *= factor);
        let importance = exps
            .iter()
            .map(|e| e.weight * self.terms[e.term as usize].idf)
            .fold(0.0, f64::max);
        Group {
            word: stem,
            expansions: exps,
            importance,
            factor,
        }
    }

    /// The name terms containing `stem` as a prefix or suffix: a source's name (`mail` of a
    /// `gmail` server) at full weight, other terms by the share of them `stem` covers.
    fn push_affixes(&self, exps: &mut Expansions, stem: &str, known: Option<u32>) {
        let p = &PARAMS;
        let stem_len = stem.chars().count();
        // affix keys are shorter than their terms, none of which is longer than the cap
        if !(4..MAX_AFFIX_TERM_CHARS).contains(&stem_len) {
            return;
        }
        for &t in self.affixes.get(stem) {
            // a word more common than the source name is a word, not that source
            // (`search` is not the `casinosearch` server)
            let common =
                known.is_some_and(|k| self.terms[k as usize].postings.len() >= self.terms[t as usize].postings.len());
            if self.terms[t as usize].in_source && !common {
                // `mail` with a `gmail` server: the word names that server
                exps.push(t, 1.0, ExpansionKind::Substring);
                if let Some(e) = exps.word() {
                    e.weight = e.weight.min(p.source_affix_word_weight);
                }
            } else {
                let ratio = stem_len as f64 / self.terms[t as usize].text.chars().count() as f64;
                exps.push(t, p.substring_weight * ratio, ExpansionKind::Substring);
            }
        }
    }

    /// Adjacent content words the catalog knows (literal values excepted), as (pair key, the
    /// smaller of their idfs).
    fn query_pairs(&self, words: &[QueryWord]) -> Vec<(u64, f64)> {
        let mut pairs: Vec<(u64, f64)> = Vec::new();
        let mut prev: Option<(u32, f64)> = None;
        for qw in words {
            if is_stop_word(&qw.text) {
                continue;
            }
            let cur = self.term(&self.analyzer.stem(&qw.text)).filter(|_| !qw.literal);
            if let (Some((a, ia)), Some(b)) = (prev, cur) {
                if a != b {
                    let ib = self.terms[b as usize].idf;
                    pairs.push((pair_key(a, b), ia.min(ib)));
                }
            }
            prev = cur.map(|t| (t, self.terms[t as usize].idf));
        }
        pairs
    }

    /// The tools whose name the query spells (any separator, without prefix, or, for a query
    /// that looks like an identifier, one typo off), sorted by name, each once.
    fn name_matches(&self, query: &str) -> Vec<u32> {
        let mut name_matches: Vec<u32> = Vec::new();
        let cq = names::compact(query);
        if cq.chars().count() >= 3 {
            let ds = self.compact_names.get(&cq);
            if !ds.is_empty() {
                name_matches.extend(ds);
            } else if names::looks_like_identifier(query) {
                for (key, ds) in self.compact_names.iter() {
                    if key.len().abs_diff(cq.len()) <= 1 && names::within_one_edit(key, &cq) {
                        // a tool found under both its keys is listed once (`dedup` below)
                        name_matches.extend(ds);
                    }
                }
            }
        }
        name_matches.sort_by(|a, b| {
            self.docs[*a as usize]
                .name
                .cmp(&self.docs[*b as usize].name)
                .then(a.cmp(b))
        });
        name_matches.dedup();
        name_matches
    }

    /// The first word, when it is the catalog's word for an operation (`delete my last
    /// slack message`); literal values are data, not operations.
    fn operation(&self, groups: &[Group]) -> Option<usize> {
        groups.first().filter(|g| g.factor == 1.0).and_then(|g| {
            g.expansions
                .first()
                .filter(|e| {
                    e.kind == ExpansionKind::Word && self.terms[e.term as usize].leads >= PARAMS.operation_min_leads
                })
                .map(|_| 0)
        })
    }

    /// A camelCase word the catalog knows whole (`eBay`, `iPhone`, `GitHub`) is that one word,
    /// not its parts (`e`, `bay`); otherwise the parts stand (`searchPapers`).
    fn glue_camel_case(&self, words: Vec<QueryWord>) -> Vec<QueryWord> {
        if !words.iter().any(|w| w.camel) {
            return words;
        }
        let mut out: Vec<QueryWord> = Vec::with_capacity(words.len());
        let mut i = 0;
        while i < words.len() {
            let end = i + 1 + words[i + 1..].iter().take_while(|w| w.camel).count();
            if end > i + 1 {
                let glued: String = words[i..end].iter().map(|w| w.text.as_str()).collect();
                if self.term(&self.analyzer.stem(&glued)).is_some() {
                    out.push(QueryWord {
                        text: glued,
                        literal: words[i].literal,
                        camel: false,
                    });
                    i = end;
                    continue;
                }
            }
            out.extend_from_slice(&words[i..end]);
            i = end;
        }
        out
    }

    /// The analyzer makes each Han or kana character a word of its own (those scripts put no
    /// spaces between words). Where a run of such words holds words of the alias table
    /// (`创建`, `仓库`: [`aliases::AliasTable::cjk_words`]), the run becomes those words, plus
    /// any of its other characters the catalog knows; the rest is the grammar between them
    /// (`一个`, `的`), which no catalog written in English can match and which would otherwise
    /// count as unknown words against every tool. A run without a table word stays as it is.
    fn read_cjk_runs(&self, words: Vec<QueryWord>) -> Vec<QueryWord> {
        let single_cjk = |w: &QueryWord| {
            let mut chars = w.text.chars();
            matches!((chars.next(), chars.next()), (Some(c), None) if analyzer::is_ideograph(c))
        };
        if !words.iter().any(single_cjk) {
            return words;
        }
        let table = aliases::table();
        let mut out: Vec<QueryWord> = Vec::with_capacity(words.len());
        let mut i = 0;
        while i < words.len() {
            let end = i + words[i..].iter().take_while(|w| single_cjk(w)).count();
            if end == i {
                out.push(words[i].clone());
                i += 1;
                continue;
            }
            let run = &words[i..end];
            let chars: Vec<char> = run.iter().filter_map(|w| w.text.chars().next()).collect();
            let found = table.cjk_words(&chars);
            if found.is_empty() {
                out.extend_from_slice(run);
            } else {
                let mut at = 0;
                for (start, stop) in found {
                    out.extend(
                        run[at..start]
                            .iter()
                            .filter(|w| self.term(&self.analyzer.stem(&w.text)).is_some())
                            .cloned(),
                    );
                    out.push(QueryWord {
                        text: chars[start..stop].iter().collect(),
                        literal: run[start..stop].iter().all(|w| w.literal),
                        camel: false,
                    });
                    at = stop;
                }
                out.extend(
                    run[at..]
                        .iter()
                        .filter(|w| self.term(&self.analyzer.stem(&w.text)).is_some())
                        .cloned(),
                );
            }
            i = end;
        }
        out
    }

    /// Name-field terms one edit away from an unknown query word: a deletion of the query is
    /// a surface word (extra character), the query is a deletion of a surface word (missing
    /// character), or both share a deletion (substitution, transposition). `w` has at most
    /// [`MAX_TYPO_WORD_CHARS`] characters (its deletions cost the square of its length).
    fn typo_terms(&self, w: &str) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        let mut seen: FxHashSet<u32> = FxHashSet::default();
        let mut consider = |sid: u32| {
            let (surface, term) = &self.surfaces[sid as usize];
            if !seen.contains(term) && names::within_one_edit(surface, w) {
                seen.insert(*term);
                out.push(*term);
            }
        };
        self.deletions.get(w).iter().for_each(|&s| consider(s));
        for del in names::deletions(w) {
            if let Some(&sid) = self.surface_ids.get(&del) {
                consider(sid);
            }
            self.deletions.get(&del).iter().for_each(|&s| consider(s));
        }
        out
    }
}

/// The b of the tool-length normalisation of a request's evidence: a verbose request's many
/// words meet a long tool's text by chance, in proportion to its length; literal values are
/// data, not wording.
fn verbose_length_b(groups: &[Group]) -> f64 {
    let p = &PARAMS;
    let wording = groups.iter().filter(|g| g.factor == 1.0).count();
    let verbosity =
        wording.saturating_sub(p.verbose_from_words) as f64 / (p.verbose_full_words - p.verbose_from_words) as f64;
    p.verbose_length_b * verbosity.min(1.0)
}
