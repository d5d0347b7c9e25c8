//! A score rebuilt as a labelled tree (after tantivy's `Explanation`), so "why is X above Y?"
//! is answered by reading numbers instead of re-deriving BM25 by hand.

use serde::Serialize;

/// One node: a value, what it is, and the parts it was computed from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub value: f64,
    pub description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Explanation>,
}

impl Explanation {
    pub fn new(description: impl Into<String>, value: f64) -> Explanation {
        Explanation {
            value,
            description: description.into(),
            details: Vec::new(),
        }
    }

    pub fn with(mut self, child: Explanation) -> Explanation {
        self.details.push(child);
        self
    }

    pub fn add(&mut self, child: Explanation) {
        self.details.push(child);
    }

    pub fn with_all(mut self, children: impl IntoIterator<Item = Explanation>) -> Explanation {
        self.details.extend(children);
        self
    }

    /// Indented text form, one node per line (for the CLI's `--explain`).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out
    }

    fn write(&self, out: &mut String, depth: usize) {
        out.push_str(&"  ".repeat(depth));
        out.push_str(&format!("{:.4}  {}\n", self.value, self.description));
        for d in &self.details {
            d.write(out, depth + 1);
        }
    }
}

use super::query::{Expansion, Group, Prepared};
use super::score::{pair_field_weight, Acc};
use super::{Index, Posting, ALL_FIELDS, PARAMS};

impl Index {
    /// Why tool `doc` scores what it does for `query`: a tree whose root value is the score
    /// `search` gives it (0 when it would not be returned at all), with every part below it.
    pub fn explain(&self, query: &str, doc: usize) -> Explanation {
        let Some(d) = self.docs.get(doc) else {
            return Explanation::new(format!("no tool #{doc} in the index"), 0.0);
        };
        let q = self.prepare(query);
        let accs = self.accumulate(&q);
        let acc = accs
            .iter()
            .find(|(x, _)| *x as usize == doc)
            .map(|(_, a)| *a)
            .unwrap_or_default();
        let ranked = self.rank(&q, &accs, self.docs.len());
        let returned = ranked.iter().find(|h| h.doc == doc).map(|h| h.score);
        let mut root = Explanation::new(
            match returned {
                Some(_) => format!("score of `{}`", d.name),
                None => format!("`{}` is not returned (no match, gated, abstained, or its operation is missing from the best tools)", d.name),
            },
            returned.unwrap_or(0.0),
        );
        root.add(self.explain_ranking(&q, doc, &acc));
        if q.exact == Some(doc as u32) {
            root.add(Explanation::new("the query is this tool's name: rank 1", 1.0));
        } else if q.name_matches.contains(&(doc as u32)) {
            root.add(Explanation::new("the query spells this tool's name: a top slot", 1.0));
        }
        if let Some(g) = q.operation {
            root.add(self.explain_operation(&q, g, doc));
        }
        root
    }

    /// The ranking score of `doc` and its parts: the evidence (matched words, pairs, the
    /// verbose-request length normalisation, source evidence), query and name coverage.
    fn explain_ranking(&self, q: &Prepared, doc: usize, acc: &Acc) -> Explanation {
        let norm = self.length_norm(q, doc as u32);
        let own = (acc.bm25 + acc.pairs) / norm;
        let source_evidence = (PARAMS.source_weight * acc.source).min(PARAMS.source_cap * own);
        let source = Explanation::new(
            format!(
                "source evidence ({} × source score, at most {} × the tool's own evidence)",
                PARAMS.source_weight, PARAMS.source_cap
            ),
            source_evidence,
        );
        let cov = Index::coverage(q, acc);
        let name_cov = self.name_coverage(doc as u32, acc);
        let score = self.final_score(q, doc as u32, acc);
        let mut ranking = Explanation::new(
            format!(
                "ranking score = evidence × coverage^{} + {} × name coverage × coverage",
                PARAMS.coverage_power, PARAMS.name_bonus
            ),
            score,
        );
        let mut evidence = Explanation::new("evidence", own + source_evidence)
            .with(self.explain_words(q, doc, acc.bm25))
            .with(self.explain_pairs(q, doc, acc.pairs));
        if q.length_b > 0.0 {
            evidence.add(Explanation::new(
                format!(
                    "words and pairs ÷ this: a verbose request, normalised by the tool's length ({} words, average {:.0}; b {:.2})",
                    self.docs[doc].length, self.average_length, q.length_b
                ),
                norm,
            ));
        }
        ranking.add(evidence.with(source));
        ranking.add(Explanation::new("query coverage (matched importance / total)", cov));
        ranking.add(Explanation::new(
            "name coverage (own name words matched / all)",
            name_cov,
        ));
        ranking
    }

    /// Each query word's best-matching term in `doc` (BM25F), or that it has none; `bm25` is
    /// their sum as the scorer accumulated it.
    fn explain_words(&self, q: &Prepared, doc: usize, bm25: f64) -> Explanation {
        let mut words = Explanation::new("matched query words (BM25F, best term per word)", bm25);
        for g in &q.groups {
            words.add(self.explain_word(g, doc));
        }
        words
    }

    /// One query word's best-matching term in `doc`: its weight, idf and BM25F tf part.
    fn explain_word(&self, g: &Group, doc: usize) -> Explanation {
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
        let Some((v, e, p)) = best else {
            return Explanation::new(format!("`{}`: no match", g.word), 0.0);
        };
        let term = &self.terms[e.term as usize];
        let fields: Vec<&str> = ALL_FIELDS
            .iter()
            .filter(|f| p.fields & f.bit() != 0)
            .map(|f| f.label())
            .collect();
        Explanation::new(format!("`{}` → term `{}` ({:?})", g.word, term.text, e.kind), v)
            .with(Explanation::new("weight", e.weight))
            .with(Explanation::new(format!("idf (df {})", term.postings.len()), term.idf))
            .with(Explanation::new(
                format!("BM25F tf part, in {}", fields.join(", ")),
                p.tf as f64,
            ))
    }

    /// The query's adjacent word pairs found in `doc`; `total` is their sum as scored.
    fn explain_pairs(&self, q: &Prepared, doc: usize, total: f64) -> Explanation {
        let mut pairs = Explanation::new("adjacent word pairs", total);
        for (key, idf) in &q.pairs {
            if let Some((_, bits)) = self.pairs.get(*key).find(|(x, _)| *x as usize == doc) {
                let a = &self.terms[(key >> 32) as usize].text;
                let b = &self.terms[(key & 0xffff_ffff) as usize].text;
                pairs.add(Explanation::new(
                    format!("`{a} {b}`"),
                    PARAMS.pair_weight * idf * pair_field_weight(bits),
                ));
            }
        }
        pairs
    }

    /// Whether `doc` offers the request's operation (group `g`).
    fn explain_operation(&self, q: &Prepared, g: usize, doc: usize) -> Explanation {
        let has = self.has_operation(q, doc as u32);
        Explanation::new(
            format!(
                "the request's operation `{}` (it starts {}+ tool names) is {} by this tool (offered: the tool has the word and, if the request has others, one of them; a short request none of whose best {} tools offers it gets nothing)",
                q.groups[g].word,
                PARAMS.operation_min_leads,
                if has { "offered" } else { "not offered" },
                PARAMS.operation_depth
            ),
            f64::from(u8::from(has)),
        )
    }
}
