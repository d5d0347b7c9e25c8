//! The first pass over a run of tools ([`analyze`]): each distinct surface word stemmed once,
//! (term, field) counts per tool, name words, word pairs and typo targets; and the runs of a
//! parallel build joined in order ([`merge`]).

use crate::analyzer::{is_stop_word, Analyzer, Tokenizer};
use crate::hashing::{FxHashMap, FxHashSet};
use crate::model::CatalogTool;
use crate::{own_name, pair_key, Doc, Field, ALL_FIELDS, FIELDS, MAX_LABEL_WORDS, MAX_TYPO_WORD_CHARS};

use super::Part;

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
pub(super) fn analyze(tools: &[CatalogTool], doc_base: u32, analyzer: &Analyzer) -> Part {
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
pub(super) fn merge(parts: Vec<Part>) -> Part {
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
