//! The built index as bytes, so that a start from the manifest loads it instead of building
//! it ([`Index::to_bytes`], [`Index::from_bytes`]).
//!
//! The format is this crate's own, little-endian, length-prefixed, with no version of its own
//! beyond the magic: the bytes are only meaningful to the very build that wrote them (the
//! caller keys the file on the executable and on the tools indexed; see proxy-core's
//! `Snapshot::index_key`). It is still read as untrusted input: every read is bounds-checked,
//! every count is checked against the bytes left, floats must be finite, and every id an index
//! lookup follows (tool, term, source, surface word, pair terms) is checked against what it
//! points into, so a damaged file is an `Err` (and the index is built), never a panic in a
//! later search.

use crate::hashing::FxHashMap;
use crate::table::StrTable;
use crate::{Doc, Index, PairTable, Posting, Term};

const MAGIC: &[u8; 8] = b"MSPIDX01";

/// Bytes that are not an index [`Index::to_bytes`] wrote: the message says what is wrong
/// (cut short, a count or an id out of range, a weight not finite, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptIndex(String);

impl std::fmt::Display for CorruptIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CorruptIndex {}

impl Index {
    /// The index as bytes (see the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(self.terms.len() * 64 + self.docs.len() * 64));
        w.0.extend_from_slice(MAGIC);
        w.u64(self.n_sources as u64);
        w.f64(self.average_length);
        w.u32(self.docs.len() as u32);
        for d in &self.docs {
            w.str(&d.name);
            w.u32(u32::from(d.name_terms));
            w.u32(d.source);
            w.u32(d.lead);
            w.u32(d.length);
        }
        w.u32(self.terms.len() as u32);
        for t in &self.terms {
            w.str(&t.text);
            w.f64(t.idf);
            w.f64(t.source_idf);
            w.u32(u32::from(t.in_source));
            w.u32(t.leads);
            w.u32(t.postings.len() as u32);
            for p in &t.postings {
                let Posting { doc, tf, fields } = *p;
                w.u32(doc);
                w.f32(tf);
                w.0.push(fields);
            }
            w.u32(t.source_postings.len() as u32);
            for &(s, tf) in &t.source_postings {
                w.u32(s);
                w.f32(tf);
            }
        }
        for table in [&self.compact_names, &self.exact_names, &self.affixes, &self.deletions] {
            w.u32(table.len() as u32);
            for (key, values) in table.iter() {
                w.str(key);
                w.u32s(values);
            }
        }
        w.u32(self.surfaces.len() as u32);
        for (s, term) in &self.surfaces {
            w.str(s);
            w.u32(*term);
        }
        w.u32(self.pairs.keys.len() as u32);
        for k in &self.pairs.keys {
            w.u64(*k);
        }
        w.u32s(&self.pairs.offsets);
        w.u32s(&self.pairs.docs);
        w.u32(self.pairs.bits.len() as u32);
        w.0.extend_from_slice(&self.pairs.bits);
        w.0
    }

    /// An index from [`Index::to_bytes`]' output; `Err` says what is wrong with the bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Index, CorruptIndex> {
        Index::read(bytes).map_err(CorruptIndex)
    }

    fn read(bytes: &[u8]) -> Result<Index, String> {
        let mut r = Reader { b: bytes, at: 0 };
        if r.take(MAGIC.len())? != MAGIC {
            return Err("not an index file of this format".into());
        }
        let n_sources = usize::try_from(r.u64()?).map_err(|_| "source count out of range")?;
        let average_length = r.finite()?;
        let docs = r.docs()?;
        let terms = r.terms()?;
        let tables = [r.table()?, r.table()?, r.table()?, r.table()?];
        let surfaces = r.surfaces()?;
        let pairs = r.pairs()?;
        if r.at != bytes.len() {
            return Err("trailing bytes after the index".into());
        }
        let [compact_names, exact_names, affixes, deletions] = tables;
        let term_ids: FxHashMap<String, u32> = terms
            .iter()
            .enumerate()
            .map(|(i, t)| (t.text.clone(), i as u32))
            .collect();
        let surface_ids: FxHashMap<String, u32> = surfaces
            .iter()
            .enumerate()
            .map(|(i, (s, _))| (s.clone(), i as u32))
            .collect();
        if term_ids.len() != terms.len() || surface_ids.len() != surfaces.len() {
            return Err("a term or surface word is listed twice".into());
        }
        let index = Index {
            analyzer: Default::default(),
            docs,
            n_sources,
            terms,
            term_ids,
            compact_names,
            exact_names,
            affixes,
            deletions,
            surfaces,
            surface_ids,
            pairs,
            average_length,
        };
        index.check_ids()?;
        Ok(index)
    }

    /// Every id a lookup follows points into what it names (see the module docs).
    fn check_ids(&self) -> Result<(), String> {
        let (n_docs, n_terms, n_surfaces) = (
            self.docs.len() as u64,
            self.terms.len() as u64,
            self.surfaces.len() as u64,
        );
        // Every source has a tool (searches size per-source tables by this count).
        if self.n_sources as u64 > n_docs {
            return Err(format!("{} sources for {n_docs} tools", self.n_sources));
        }
        let within = |id: u32, n: u64, what: &str| {
            if u64::from(id) < n {
                Ok(())
            } else {
                Err(format!("{what} id {id} out of range ({n})"))
            }
        };
        for d in &self.docs {
            within(d.source, self.n_sources as u64, "source")?;
            if d.lead != u32::MAX {
                within(d.lead, n_terms, "term")?;
            }
        }
        for t in &self.terms {
            for p in &t.postings {
                within(p.doc, n_docs, "tool")?;
            }
            for &(s, _) in &t.source_postings {
                within(s, self.n_sources as u64, "source")?;
            }
        }
        for (table, n, what) in [
            (&self.compact_names, n_docs, "tool"),
            (&self.exact_names, n_docs, "tool"),
            (&self.affixes, n_terms, "term"),
            (&self.deletions, n_surfaces, "surface word"),
        ] {
            for (_, values) in table.iter() {
                for &v in values {
                    within(v, n, what)?;
                }
            }
        }
        for (_, term) in &self.surfaces {
            within(*term, n_terms, "term")?;
        }
        let p = &self.pairs;
        if !p.keys.windows(2).all(|w| w[0] < w[1]) {
            return Err("pair keys are not sorted".into());
        }
        for &k in &p.keys {
            within((k >> 32) as u32, n_terms, "term")?;
            within((k & 0xffff_ffff) as u32, n_terms, "term")?;
        }
        let offsets_ok = p.offsets.len() == p.keys.len() + 1
            && p.offsets.first() == Some(&0)
            && p.offsets.windows(2).all(|w| w[0] <= w[1])
            && p.offsets.last().map(|&l| l as usize) == Some(p.docs.len())
            && p.docs.len() == p.bits.len();
        if !offsets_ok {
            return Err("pair table offsets do not match its entries".into());
        }
        for &d in &p.docs {
            within(d, n_docs, "tool")?;
        }
        Ok(())
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f32(&mut self, v: f32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn u32s(&mut self, vs: &[u32]) {
        self.u32(vs.len() as u32);
        for v in vs {
            self.u32(*v);
        }
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or("the index file is cut short")?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn finite(&mut self) -> Result<f64, String> {
        let v = f64::from_le_bytes(self.array()?);
        v.is_finite()
            .then_some(v)
            .ok_or_else(|| "a weight is not finite".into())
    }
    fn finite32(&mut self) -> Result<f32, String> {
        let v = f32::from_le_bytes(self.array()?);
        v.is_finite()
            .then_some(v)
            .ok_or_else(|| "a weight is not finite".into())
    }
    /// A count of items at least `min_item_bytes` long each: no more than the bytes left
    /// could hold (nothing is reserved for a count the file cannot back).
    fn count(&mut self, min_item_bytes: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item_bytes.max(1)) > self.b.len() - self.at {
            return Err("a count exceeds the bytes left".into());
        }
        Ok(n)
    }
    fn str(&mut self) -> Result<String, String> {
        let n = self.count(1)?;
        let bytes = self.take(n)?;
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|_| "text is not UTF-8".into())
    }
    fn u32s(&mut self) -> Result<Vec<u32>, String> {
        let n = self.count(4)?;
        (0..n).map(|_| self.u32()).collect()
    }
    /// The tools ([`Index::to_bytes`]' order: name, name term count, source, lead, length).
    fn docs(&mut self) -> Result<Vec<Doc>, String> {
        let n = self.count(4 * 5)?;
        let mut docs = Vec::with_capacity(n);
        for _ in 0..n {
            docs.push(Doc {
                name: self.str()?,
                name_terms: u16::try_from(self.u32()?).map_err(|_| "name term count out of range")?,
                source: self.u32()?,
                lead: self.u32()?,
                length: self.u32()?,
            });
        }
        Ok(docs)
    }
    fn terms(&mut self) -> Result<Vec<Term>, String> {
        let n = self.count(4 + 8 + 8 + 4 + 4 + 4 + 4)?;
        let mut terms = Vec::with_capacity(n);
        for _ in 0..n {
            terms.push(self.term()?);
        }
        Ok(terms)
    }
    /// One term: text, weights, then its postings and its per-source postings.
    fn term(&mut self) -> Result<Term, String> {
        let text = self.str()?;
        let idf = self.finite()?;
        let source_idf = self.finite()?;
        let in_source = self.u32()? != 0;
        let leads = self.u32()?;
        let n = self.count(9)?;
        let mut postings = Vec::with_capacity(n);
        for _ in 0..n {
            let doc = self.u32()?;
            let tf = self.finite32()?;
            let fields = self.take(1)?[0];
            postings.push(Posting { doc, tf, fields });
        }
        let n = self.count(8)?;
        let mut source_postings = Vec::with_capacity(n);
        for _ in 0..n {
            source_postings.push((self.u32()?, self.finite32()?));
        }
        Ok(Term {
            text,
            idf,
            postings,
            source_idf,
            source_postings,
            in_source,
            leads,
        })
    }
    /// One of the four lookup tables (compact names, exact names, affixes, deletions).
    fn table(&mut self) -> Result<StrTable, String> {
        let n = self.count(8)?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            entries.push((self.str()?, self.u32s()?));
        }
        Ok(StrTable::from_sorted(entries).ok_or("a lookup table is not sorted")?)
    }
    fn surfaces(&mut self) -> Result<Vec<(String, u32)>, String> {
        let n = self.count(8)?;
        let mut surfaces = Vec::with_capacity(n);
        for _ in 0..n {
            surfaces.push((self.str()?, self.u32()?));
        }
        Ok(surfaces)
    }
    fn pairs(&mut self) -> Result<PairTable, String> {
        let n = self.count(8)?;
        let mut keys = Vec::with_capacity(n);
        for _ in 0..n {
            keys.push(self.u64()?);
        }
        let offsets = self.u32s()?;
        let docs = self.u32s()?;
        let n = self.count(1)?;
        let bits = self.take(n)?.to_vec();
        Ok(PairTable {
            keys,
            offsets,
            docs,
            bits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog_file::load_catalog;

    fn sample() -> (Vec<crate::model::CatalogTool>, Index) {
        let text = r#"{"tools": [
          {"name": "gmail-send_message", "description": "Send an email message to specified recipients.",
           "inputSchema": {"type": "object", "properties": {"to": {"type": "array", "description": "Recipient email addresses"}, "subject": {"type": "string"}}}},
          {"name": "gmail-list_threads", "description": "List threads in the user's mailbox"},
          {"name": "calendar-create-event", "description": "Create a new calendar event at a start time"},
          {"name": "github-create_issue", "description": "Create a new issue in a GitHub repository"},
          {"name": "browser_navigate", "server": "playwright", "description": "Navigate to a URL"},
          {"name": "browser_take_screenshot", "server": "playwright", "description": "Take a screenshot of the current page"}
        ]}"#;
        let tools = load_catalog(text).expect("fixture parses");
        let index = Index::build(&tools);
        (tools, index)
    }

    const QUERIES: &[&str] = &[
        "send an email",
        "create issue",
        "navgate to url",
        "screenshot page",
        "calendar event start",
        "gmail-send_message",
        "browser",
        "nothing matches this",
    ];

    #[test]
    fn a_loaded_index_is_the_built_one() {
        let (_, built) = sample();
        let bytes = built.to_bytes();
        let loaded = Index::from_bytes(&bytes).expect("its own bytes load");
        assert_eq!(loaded.to_bytes(), bytes, "the same index, part for part");
        for q in QUERIES {
            let (a, b) = (built.search(q, 10), loaded.search(q, 10));
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{q}");
        }
        assert_eq!(built.heap_report().len(), loaded.heap_report().len());
        let empty = Index::build(&[]);
        assert!(Index::from_bytes(&empty.to_bytes()).is_ok_and(|i| i.is_empty()));
    }

    #[test]
    fn damaged_bytes_are_refused_or_searchable_never_a_panic() {
        let (_, built) = sample();
        let bytes = built.to_bytes();
        assert!(Index::from_bytes(b"").is_err());
        assert!(Index::from_bytes(b"MSPIDX00").is_err());
        for cut in (0..bytes.len()).step_by(7) {
            assert!(Index::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(Index::from_bytes(&extra).is_err(), "trailing bytes");
        // Every byte in turn replaced by values that break ids, counts and floats: the result
        // is an error, or an index whose ids all hold (searching it must not panic).
        let mut loaded = 0;
        for at in MAGIC.len()..bytes.len() {
            for v in [0x00, 0x7f, 0xff] {
                let mut b = bytes.clone();
                b[at] = v;
                if let Ok(index) = Index::from_bytes(&b) {
                    loaded += 1;
                    for q in QUERIES {
                        let _ = index.search(q, 10);
                        let _ = index.explain(q, 3);
                    }
                }
            }
        }
        assert!(loaded > 0, "some changes (a weight, a letter) leave a valid index");
    }
}
