//! A small built-in table of tool vocabulary: English synonyms and their Italian, Spanish,
//! French, German, Portuguese, Russian, Chinese, Japanese and Korean equivalents, for the
//! verbs and objects tools are named after.
//!
//! Why: lexical search cannot bridge `ticket` → `issue` or `invia` → `send` on its own, and
//! these few hundred words cover most of what models type. The table is general vocabulary
//! (what tools do and what they act on), never words picked from an evaluation set.
//!
//! The words live in `aliases.txt` beside this file (its header documents the format), compiled
//! in with `include_str!` and parsed once per process by [`parse`]. Two kinds of entry:
//! - `english words | words of other languages`: one concept. A query word that matches any
//!   member expands to the entry's English words (which are what catalogs are written in).
//!   English members match by English stem; other members match by their exact form, or —
//!   when the word is unknown to the catalog — by the Snowball stem of their own language, so
//!   `inviare`, `invia` and `inviato` all reach `send` (and `ошибки`, `ошибок` reach `issue`).
//!   Chinese, Japanese and Korean members are runs of Han, kana and hangul: Chinese and
//!   Japanese put no spaces between words, and Korean glues its particles to them (`메일을`:
//!   mail + object marker), so [`AliasTable::cjk_words`] finds them in a query's run of such
//!   characters by longest match (`创建一个新的仓库` holds `创建`, `新` and `仓库`).
//! - `narrower words > broader words`: a one-way link from an instance or a narrower word to
//!   the broader words tools are described with (`french` → `language`, `usd` → `currency`,
//!   `tomorrow` → `date`), never back.
//!
//! The unit tests parse the shipped file, so a malformed line fails `cargo test`, not a search.

use crate::hashing::{FxHashMap, FxHashSet};
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

use super::analyzer::{is_ideograph, Analyzer};

/// The shipped table.
const SHIPPED: &str = include_str!("aliases.txt");

/// One entry (line) of the table, borrowing its words from the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry<'a> {
    /// `english | other`: one concept; every member expands to the English words.
    Concept { english: Vec<&'a str>, other: Vec<&'a str> },
    /// `narrower > broader`: the narrower words expand to the broader ones, never back.
    OneWay {
        narrower: Vec<&'a str>,
        broader: Vec<&'a str>,
    },
}

/// A malformed line: its number (from 1) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "aliases.txt line {}: {}", self.line, self.message)
    }
}

/// Parses the table's text (format: the header of `aliases.txt`), entries in file order.
pub fn parse(text: &str) -> Result<Vec<Entry<'_>>, ParseError> {
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let error = |message: String| ParseError { line: i + 1, message };
        let entry = match (line.matches('|').count(), line.matches('>').count()) {
            (1, 0) => {
                let (english, other) = line.split_once('|').unwrap_or_default();
                Entry::Concept {
                    english: entry_words(english),
                    other: entry_words(other),
                }
            }
            (0, 1) => {
                let (narrower, broader) = line.split_once('>').unwrap_or_default();
                Entry::OneWay {
                    narrower: entry_words(narrower),
                    broader: entry_words(broader),
                }
            }
            _ => return Err(error("expected one `|` (a concept) or one `>` (a one-way link)".into())),
        };
        let (left, right, right_may_be_empty) = match &entry {
            Entry::Concept { english, other } => (english, other, true),
            Entry::OneWay { narrower, broader } => (narrower, broader, false),
        };
        if left.is_empty() || (right.is_empty() && !right_may_be_empty) {
            return Err(error("a side without words".into()));
        }
        let mut seen: Vec<&str> = Vec::new();
        for &w in left.iter().chain(right) {
            if !w.chars().all(char::is_alphanumeric) || w.chars().any(char::is_uppercase) {
                return Err(error(format!("`{w}`: words are lower case, letters and digits only")));
            }
            if seen.contains(&w) {
                return Err(error(format!("`{w}` twice")));
            }
            seen.push(w);
        }
        entries.push(entry);
    }
    Ok(entries)
}

fn entry_words(side: &str) -> Vec<&str> {
    side.split_whitespace().collect()
}

/// Languages whose Snowball stems are tried for words the catalog does not know.
const FOREIGN: [Algorithm; 6] = [
    Algorithm::Italian,
    Algorithm::Spanish,
    Algorithm::French,
    Algorithm::German,
    Algorithm::Portuguese,
    Algorithm::Russian,
];

/// Whether `word` is written in the script of `language`'s stemmer: Cyrillic for Russian,
/// Latin for the others. A stemmer given another script's word returns it unchanged, which
/// would make every such word its own "stem".
fn stems_in(language: Algorithm, word: &str) -> bool {
    let cyrillic = word.chars().any(|c| matches!(c as u32, 0x0400..=0x052F));
    (language == Algorithm::Russian) == cyrillic && !word.chars().any(is_ideograph)
}

/// Whether every character of `word` is Han, kana or hangul: a word of the table that
/// [`AliasTable::cjk_words`] finds inside a run of such characters.
fn is_cjk_word(word: &str) -> bool {
    !word.is_empty() && word.chars().all(is_ideograph)
}

/// Where a query word found its alias row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AliasMatch {
    /// An English synonym (by stem) or a foreign word spelt exactly as in the table.
    Exact,
    /// A foreign word matched by its own language's stem.
    ForeignStem,
}

/// Compiled lookup tables, built once per process.
pub struct AliasTable {
    /// English stem → rows.
    english: FxHashMap<String, Vec<usize>>,
    /// Exact foreign form → rows.
    foreign_exact: FxHashMap<String, Vec<usize>>,
    /// (language, stem) → rows.
    foreign_stem: Vec<FxHashMap<String, Vec<usize>>>,
    stemmers: Vec<(Algorithm, Stemmer)>,
    /// Chinese, Japanese and Korean forms (all Han, kana or hangul), found by longest match
    /// in a run.
    cjk: FxHashSet<String>,
    /// The longest of them, in characters.
    cjk_max_chars: usize,
    /// English stems of each row's English words.
    targets: Vec<Vec<String>>,
    /// Each concept row's first English word (what [`AliasTable::in_english`] writes).
    first_english: Vec<Option<String>>,
    analyzer: Analyzer,
}

/// The process-wide table.
pub fn table() -> &'static AliasTable {
    static TABLE: OnceLock<AliasTable> = OnceLock::new();
    TABLE.get_or_init(AliasTable::build)
}

impl AliasTable {
    fn build() -> AliasTable {
        let entries = parse(SHIPPED).unwrap_or_else(|e| panic!("{e} (the unit tests check the shipped file)"));
        AliasTable::from_entries(&entries)
    }

    fn from_entries(entries: &[Entry<'_>]) -> AliasTable {
        let analyzer = Analyzer::default();
        let stemmers: Vec<(Algorithm, Stemmer)> = FOREIGN.iter().map(|&a| (a, Stemmer::create(a))).collect();
        let mut cjk: FxHashSet<String> = FxHashSet::default();
        let mut english: FxHashMap<String, Vec<usize>> = FxHashMap::default();
        let mut foreign_exact: FxHashMap<String, Vec<usize>> = FxHashMap::default();
        let mut foreign_stem: Vec<FxHashMap<String, Vec<usize>>> =
            FOREIGN.iter().map(|_| FxHashMap::default()).collect();
        let mut targets = Vec::with_capacity(entries.len());
        let mut first_english = Vec::with_capacity(entries.len());
        for (row, entry) in entries.iter().enumerate() {
            first_english.push(match entry {
                Entry::Concept { english: en, .. } => en.first().map(|w| w.to_string()),
                Entry::OneWay { .. } => None,
            });
            match entry {
                Entry::Concept { english: en, other } => {
                    let mut t: Vec<String> = en.iter().map(|w| analyzer.stem(w)).collect();
                    t.dedup();
                    for s in &t {
                        push_unique(english.entry(s.clone()).or_default(), row);
                    }
                    targets.push(t);
                    for w in other {
                        push_unique(foreign_exact.entry(w.to_string()).or_default(), row);
                        if is_cjk_word(w) {
                            cjk.insert(w.to_string());
                        }
                        for (i, (language, st)) in stemmers.iter().enumerate() {
                            if !stems_in(*language, w) {
                                continue;
                            }
                            let s = st.stem(w);
                            if s.chars().count() >= 4 {
                                push_unique(foreign_stem[i].entry(s.into_owned()).or_default(), row);
                            }
                        }
                    }
                }
                Entry::OneWay { narrower, broader } => {
                    let mut t: Vec<String> = broader.iter().map(|w| analyzer.stem(w)).collect();
                    t.dedup();
                    targets.push(t);
                    for k in narrower {
                        push_unique(english.entry(analyzer.stem(k)).or_default(), row);
                    }
                }
            }
        }
        let cjk_max_chars = cjk.iter().map(|w| w.chars().count()).max().unwrap_or(0);
        AliasTable {
            english,
            foreign_exact,
            foreign_stem,
            stemmers,
            cjk,
            cjk_max_chars,
            targets,
            first_english,
            analyzer,
        }
    }

    /// `text` with the words of other languages the table knows written in English, for a
    /// reader that knows only English (the semantic arm's model): `enviar un mensaje al canal
    /// de Slack` → `send un message al channel de Slack`. Only a text that reads as another
    /// language is touched: one with at least one of the table's foreign forms and none of a
    /// few English function words (`the`, `of`, `with`, ...) — English has many words that are
    /// also foreign forms (`dossier`, `voyage`, `devise`, `land`), and `a family reunion` must
    /// stay a reunion. In such a text, a word is translated when it is a foreign form, or an
    /// inflection of one by its language's stem (`inviato`, `Kunden`), and not an English word
    /// of the table (`time`, `post` stay). Words after an elision (`l'apprentissage`) count on
    /// their own. In a run of Han, kana and hangul, the table's words
    /// ([`AliasTable::cjk_words`]) are written in English and set apart, and the run's other
    /// characters dropped, since the reader cannot read them (`创建一个新的 GitHub 仓库` →
    /// `create create GitHub repository`: `新`, new, is in the row of `create`); a run without
    /// a table word is kept. Everything else is kept as written.
    pub fn in_english(&self, text: &str) -> String {
        let raw: Vec<&str> = text.split_whitespace().collect();
        let chunks: Vec<(&str, &str, &str)> = raw.iter().map(|c| split_word(c)).collect();
        let exact = |w: &str| -> Option<&str> {
            if self.english.contains_key(&self.analyzer.stem(w)) {
                return None;
            }
            let rows = self.foreign_exact.get(w)?;
            rows.iter().find_map(|&r| self.first_english[r].as_deref())
        };
        let stemmed = |w: &str| -> Option<&str> {
            if w.chars().count() < 4 || self.english.contains_key(&self.analyzer.stem(w)) {
                return None;
            }
            self.stemmers.iter().enumerate().find_map(|(i, (language, st))| {
                if !stems_in(*language, w) {
                    return None;
                }
                let rows = self.foreign_stem[i].get(st.stem(w).as_ref())?;
                rows.iter().find_map(|&r| self.first_english[r].as_deref())
            })
        };
        let lower: Vec<String> = chunks.iter().map(|(_, w, _)| w.to_lowercase()).collect();
        let english = lower.iter().any(|w| ENGLISH_FUNCTION_WORDS.contains(&w.as_str()));
        // each chunk with Han, kana or hangul in it, read once
        let cjk: Vec<Option<String>> = raw
            .iter()
            .map(|c| {
                c.chars()
                    .any(is_ideograph)
                    .then(|| self.cjk_chunk_in_english(c))
                    .flatten()
            })
            .collect();
        let foreign = lower.iter().any(|w| exact(w).is_some()) || cjk.iter().any(Option::is_some);
        if english || !foreign {
            return text.to_owned();
        }
        let out: Vec<String> = chunks
            .iter()
            .zip(&lower)
            .zip(&raw)
            .zip(cjk)
            .map(|(((&(head, word, tail), lower), raw), cjk)| {
                if raw.chars().any(is_ideograph) {
                    return cjk.unwrap_or_else(|| raw.to_string());
                }
                match exact(lower).or_else(|| stemmed(lower)) {
                    Some(english) => format!("{head}{english}{tail}"),
                    None => format!("{head}{word}{tail}"),
                }
            })
            .collect();
        out.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// `chunk` (no whitespace) with each run of Han, kana and hangul that holds words of the
    /// table replaced by those words' English, set apart by spaces; `None` when no run holds
    /// one.
    fn cjk_chunk_in_english(&self, chunk: &str) -> Option<String> {
        let chars: Vec<char> = chunk.chars().collect();
        let mut out = String::with_capacity(chunk.len());
        let mut found_any = false;
        let mut i = 0;
        while i < chars.len() {
            if !is_ideograph(chars[i]) {
                out.push(chars[i]);
                i += 1;
                continue;
            }
            let end = i + chars[i..].iter().take_while(|c| is_ideograph(**c)).count();
            let run = &chars[i..end];
            let found = self.cjk_words(run);
            if found.is_empty() {
                out.extend(run);
            }
            for (start, stop) in found {
                let word: String = run[start..stop].iter().collect();
                let english = self
                    .foreign_exact
                    .get(&word)
                    .and_then(|rows| rows.iter().find_map(|&r| self.first_english[r].as_deref()));
                if let Some(english) = english {
                    found_any = true;
                    out.push(' ');
                    out.push_str(english);
                    out.push(' ');
                }
            }
            i = end;
        }
        found_any.then_some(out)
    }

    /// The table's Chinese, Japanese and Korean words in `run` (Han, kana and hangul
    /// characters, which the first two write without spaces and the third with particles
    /// attached), as character ranges: from the left, the longest table word starting at each
    /// position; a character no table word starts is skipped. Greedy
    /// longest match is the classic dictionary segmentation; with a table of tool vocabulary
    /// it finds the words a request's tool hangs on and passes over the grammar between them
    /// (`把这个网页的内容抓取下来` → `网页`, `抓取`). Work: the run's length × the longest
    /// word's, squared (at most 12 characters).
    pub fn cjk_words(&self, run: &[char]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut key = String::new();
        let mut i = 0;
        while i < run.len() {
            let longest = (1..=self.cjk_max_chars.min(run.len() - i)).rev().find(|&n| {
                key.clear();
                key.extend(&run[i..i + n]);
                self.cjk.contains(&key)
            });
            match longest {
                Some(n) => {
                    out.push((i, i + n));
                    i += n;
                }
                None => i += 1,
            }
        }
        out
    }

    /// English target stems for a lower-case query `word` whose English stem is `stem`.
    /// `known` says whether the catalog has `stem`: only unknown words try foreign stems.
    pub fn lookup(&self, word: &str, stem: &str, known: bool) -> Vec<(String, AliasMatch)> {
        let mut rows: Vec<(usize, AliasMatch)> = Vec::new();
        let add = |rows: &mut Vec<(usize, AliasMatch)>, r: &[usize], m: AliasMatch| {
            for &row in r {
                if !rows.iter().any(|(x, _)| *x == row) {
                    rows.push((row, m));
                }
            }
        };
        if let Some(r) = self.english.get(stem) {
            add(&mut rows, r, AliasMatch::Exact);
        }
        if known {
            // a word the catalog uses is read as English (`data`, `note`, `post` ...)
        } else if let Some(r) = self.foreign_exact.get(word) {
            add(&mut rows, r, AliasMatch::Exact);
        } else if rows.is_empty() && word.chars().count() >= 4 {
            for (i, (language, st)) in self.stemmers.iter().enumerate() {
                if !stems_in(*language, word) {
                    continue;
                }
                if let Some(r) = self.foreign_stem[i].get(st.stem(word).as_ref()) {
                    add(&mut rows, r, AliasMatch::ForeignStem);
                }
            }
        }
        let mut out: Vec<(String, AliasMatch)> = Vec::new();
        for (row, m) in rows {
            for t in &self.targets[row] {
                if t != stem && !out.iter().any(|(x, _)| x == t) {
                    out.push((t.clone(), m));
                }
            }
        }
        out
    }
}

/// Words that mark a text as English, chosen because no language of the table spells a word
/// of its own so (`an`, `in`, `do`, `no`, `me`, `on`, `will`, `was` are words of those
/// languages too).
const ENGLISH_FUNCTION_WORDS: [&str; 28] = [
    "the", "to", "of", "and", "is", "are", "my", "for", "with", "from", "that", "this", "what", "which", "how", "can",
    "could", "you", "your", "please", "at", "by", "it", "be", "would", "should", "into", "about",
];

/// A whitespace-free chunk as (what comes before its word, the word, what follows): leading
/// punctuation and an elided article (`l'`, `dell'`) before, trailing punctuation after. A
/// chunk with no letters is all head.
fn split_word(chunk: &str) -> (&str, &str, &str) {
    let start = chunk
        .rfind(['\'', '\u{2019}'])
        .map(|i| i + chunk[i..].chars().next().map_or(1, char::len_utf8))
        .filter(|&i| i < chunk.len() && chunk[i..].chars().any(char::is_alphanumeric))
        .unwrap_or(0);
    let body = &chunk[start..];
    let Some(first) = body.find(char::is_alphanumeric) else {
        return (chunk, "", "");
    };
    let last = body
        .char_indices()
        .rfind(|(_, c)| c.is_alphanumeric())
        .map_or(body.len(), |(i, c)| i + c.len_utf8());
    let word = &body[first..last];
    let head = &chunk[..start + first];
    let tail = &chunk[start + last..];
    (head, word, tail)
}

fn push_unique(v: &mut Vec<usize>, x: usize) {
    if !v.contains(&x) {
        v.push(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::words;

    #[test]
    fn other_languages_are_written_in_english_for_the_semantic_arm() {
        let t = table();
        assert_eq!(
            t.in_english("enviar un mensaje al canal de Slack"),
            "send un message al channel de Slack"
        );
        // inflections by their language's stem; punctuation and elisions kept
        assert_eq!(
            t.in_english("E-Mail an den Kunden schicken!"),
            "E-Mail an den customer send!"
        );
        assert_eq!(
            t.in_english("créer une page, mettre l'hôte"),
            "create une page, update l'hôte"
        );
        // an English text is left alone, though `reunion`, `voyage` and `dossier` are
        // foreign forms of the table
        for english in [
            "I'm planning a family reunion and a voyage with the dossier",
            "post the time of the meeting",
            "list open issues",
            "",
        ] {
            assert_eq!(t.in_english(english), english);
        }
        // the table's English words are never translated, even in another language's text
        assert_eq!(t.in_english("invia post"), "send post");
        // German `was` is not the English one
        assert_eq!(t.in_english("was kostet die Aktie"), "was kostet die stock");
    }

    #[test]
    fn chinese_japanese_and_russian_requests_are_written_in_english() {
        let t = table();
        assert_eq!(
            t.in_english("创建一个新的 GitHub 仓库"),
            "create create GitHub repository"
        );
        assert_eq!(t.in_english("把这个网页的内容抓取下来"), "page get");
        assert_eq!(t.in_english("明日の予定を確認したい"), "event check");
        assert_eq!(t.in_english("메일을 보내줘"), "email send");
        // inflected Russian words reach their row by the Russian stem
        assert_eq!(t.in_english("найти ошибки в Sentry"), "search issue в Sentry");
        // a run without a table word is kept; so is English around Han characters
        assert_eq!(t.in_english("你好"), "你好");
        assert_eq!(t.in_english("send the 文件"), "send the 文件");
    }

    #[test]
    fn runs_of_han_and_kana_are_read_by_longest_match() {
        let t = table();
        let found = |s: &str| -> Vec<String> {
            let chars: Vec<char> = s.chars().collect();
            t.cjk_words(&chars)
                .into_iter()
                .map(|(a, b)| chars[a..b].iter().collect())
                .collect()
        };
        // `新闻` (news) is one word, not `新` (new) and a stray character
        assert_eq!(found("最新新闻"), ["新", "新闻"]);
        assert_eq!(found("创建一个新的仓库"), ["创建", "新", "仓库"]);
        assert_eq!(
            found("ノートブックから音声解説を作成"),
            ["ノートブック", "音声", "作成"]
        );
        assert!(found("你好").is_empty());
        assert!(found("").is_empty());
    }

    #[test]
    fn each_stemmer_sees_only_words_of_its_script() {
        assert!(stems_in(Algorithm::Russian, "ошибки"));
        assert!(!stems_in(Algorithm::Russian, "invia"));
        assert!(stems_in(Algorithm::Italian, "invia"));
        assert!(!stems_in(Algorithm::German, "ошибки"));
        assert!(!stems_in(Algorithm::Italian, "仓库"));
        let t = table();
        let a = Analyzer::default();
        let targets = |w: &str| -> Vec<String> { t.lookup(w, &a.stem(w), false).into_iter().map(|(s, _)| s).collect() };
        // not in the table as written: found by its Russian stem (`ошибк`)
        assert!(targets("ошибками").contains(&a.stem("issue")));
        assert!(targets("仓库").contains(&a.stem("repository")));
    }

    #[test]
    fn words_are_split_from_their_punctuation_and_elisions() {
        assert_eq!(split_word("(hello),"), ("(", "hello", "),"));
        assert_eq!(split_word("l'hôte"), ("l'", "hôte", ""));
        assert_eq!(split_word("dell\u{2019}utente."), ("dell\u{2019}", "utente", "."));
        assert_eq!(split_word("l'"), ("", "l", "'"));
        assert_eq!(split_word("--"), ("--", "", ""));
        assert_eq!(split_word("E-Mail"), ("", "E-Mail", ""));
    }

    #[test]
    fn shipped_file_parses_and_every_word_is_one_query_word() {
        let entries = parse(SHIPPED).unwrap_or_else(|e| panic!("{e}"));
        assert!(entries.len() >= 80, "{} entries", entries.len());
        for entry in &entries {
            let all: Vec<&str> = match entry {
                Entry::Concept { english, other } => english.iter().chain(other).copied().collect(),
                Entry::OneWay { narrower, broader } => narrower.iter().chain(broader).copied().collect(),
            };
            for w in all {
                if is_cjk_word(w) {
                    // read by longest match in a run of Han, kana and hangul, which the analyzer
                    // splits one character a word
                    assert!(w.chars().count() <= 12, "{w}: longer than cjk_words' bound");
                    assert_eq!(words(w).concat(), w, "{entry:?}");
                } else {
                    // a word the analyzer would split or change could never match a query word
                    assert_eq!(words(w), [w], "{entry:?}");
                }
            }
        }
        assert!(matches!(&entries[0], Entry::Concept { english, .. } if english[0] == "send"));
    }

    #[test]
    fn parses_both_kinds_skipping_comments_and_blank_lines() {
        let text = "# a comment\n\n  send dispatch | invia envoyer  \nrename |\ntomorrow today > date day\n";
        assert_eq!(
            parse(text),
            Ok(vec![
                Entry::Concept {
                    english: vec!["send", "dispatch"],
                    other: vec!["invia", "envoyer"]
                },
                Entry::Concept {
                    english: vec!["rename"],
                    other: vec![]
                },
                Entry::OneWay {
                    narrower: vec!["tomorrow", "today"],
                    broader: vec!["date", "day"]
                },
            ])
        );
        assert_eq!(parse(""), Ok(vec![]));
    }

    #[test]
    fn malformed_lines_are_reported_with_their_number() {
        let error_of = |bad: &str| {
            parse(&format!("# header\nsend | invia\n{bad}\n"))
                .map(|_| ())
                .unwrap_err()
        };
        for bad in [
            "send invia",
            "send | invia | envoyer",
            "send | invia > date",
            "today > > date",
            "| invia",
            "today >",
            "> date",
            "Send | invia",
            "e-mail > message",
            "send | invia # trailing comment",
            "send send | invia",
            "send | invia send",
        ] {
            let e = error_of(bad);
            assert_eq!(e.line, 3, "{bad}: {e}");
        }
        let e = parse("ok | fine\nURL > link").unwrap_err();
        assert_eq!(
            e.to_string(),
            "aliases.txt line 2: `URL`: words are lower case, letters and digits only"
        );
    }

    #[test]
    fn one_way_links_do_not_lead_back() {
        let t = table();
        let a = Analyzer::default();
        let targets = |w: &str| -> Vec<String> { t.lookup(w, &a.stem(w), true).into_iter().map(|(s, _)| s).collect() };
        assert!(targets("tomorrow").contains(&a.stem("date")));
        assert!(!targets("date").contains(&a.stem("tomorrow")));
        assert!(targets("usd").contains(&a.stem("currency")));
    }
}
