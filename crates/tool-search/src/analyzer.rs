//! Text analysis shared by indexing and querying: one function turns text into terms, so a
//! query word and a catalog word meet only if they normalise to the same string.
//!
//! - Words are runs of letters/digits, split again at camelCase boundaries (`threadId` →
//!   `thread id`, `HTMLParser` → `html parser`, but `URLs` stays `urls`), because tool and
//!   parameter names glue words. The index adds each camelCase word whole as well
//!   (`PromQL` → `promql`: `build.rs`), and a query word remembers where it was split, so a
//!   brand the catalog knows whole (`eBay`, `GitHub`) is glued back (see `Index::prepare`).
//! - Han/kana/hangul characters are single-character words: those scripts put no spaces between
//!   words, and a character unigram is the cheapest segmentation that still matches. (A query
//!   reads a run of them again by the alias table's Chinese, Japanese and Korean words: `Index::prepare`.)
//! - A short English stop list drops words that carry no tool meaning (`the`, `please`, `I'm`),
//!   which keeps pasted requests from being ranked by their filler.
//! - Snowball English stemming (`threads` → `thread`, `creating` → `creat`).
//! - Web addresses: their syntax (scheme, `www`, top-level domain) is no word of a query; a
//!   request's address leaves only its host's name to the semantic arm; a description is read
//!   by both arms without its addresses (a link keeps its words).

use rust_stemmers::{Algorithm, Stemmer};

/// Splits `text` into lower-case words (no stop-word removal, no stemming).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    Tokenizer::default().for_each_word(text, |w| out.push(w.to_string()));
    out
}

/// Query words, each marked `true` when it only occurs inside a literal value — a path, URL,
/// file name, e-mail address, CSS selector or quoted string. Pasted requests carry such
/// arguments (`./src/utils/file_utils.py`, `'Project Overview'`); they are data for the call,
/// not words about which tool to call, so the ranking counts them less.
pub fn query_words(query: &str) -> Vec<QueryWord> {
    let mut out = Vec::new();
    let mut tok = Tokenizer::default();
    for (chunk, literal) in marked_chunks(query) {
        let content = without_url_syntax(chunk);
        tok.for_each_word_marked(&content, |w, camel| {
            // a bare number is a value too (`2020`, `1150 points`)
            let number = w.bytes().all(|b| b.is_ascii_digit());
            out.push(QueryWord {
                text: w.to_string(),
                literal: literal || number,
                camel,
            });
        });
    }
    out
}

/// The query's whitespace-separated chunks, each marked `true` when it is (inside) a literal
/// value: a quoted string, or a chunk that reads as a path, URL, e-mail address, selector or
/// file name ([`is_literal_chunk`]).
fn marked_chunks(query: &str) -> Vec<(&str, bool)> {
    const TRAILING: [char; 7] = ['.', ',', ';', ':', '?', '!', ')'];
    let mut out = Vec::new();
    let mut in_quote: Option<char> = None;
    for chunk in query.split_whitespace() {
        let mut literal = in_quote.is_some();
        let mut body = chunk.trim_end_matches(TRAILING);
        if in_quote.is_none() {
            if let Some(open) = body
                .chars()
                .next()
                .filter(|c| matches!(c, '\'' | '"' | '`' | '\u{2018}' | '\u{201c}'))
            {
                in_quote = Some(match open {
                    '\u{2018}' => '\u{2019}',
                    '\u{201c}' => '\u{201d}',
                    c => c,
                });
                literal = true;
                body = &body[open.len_utf8()..];
            }
        }
        if in_quote.is_some_and(|close| body.ends_with(close)) {
            in_quote = None;
        }
        literal |= is_literal_chunk(chunk);
        out.push((chunk, literal));
    }
    out
}

/// `chunk` without the syntax of a web address in it: the scheme (`https://`), `www.` and the
/// top-level domain (`.com`, `.org`, `.io`, and a generic level under a country's, `.com.cn`,
/// `.co.uk`) of `https://www.linkedin.com/in/johndoe`, which leaves `linkedin/in/johndoe`.
/// Every address carries them, so they say nothing about which tool is meant, and
/// documentation links in tool descriptions would match them. A chunk without an address is
/// returned as it is.
fn without_url_syntax(chunk: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let Some((prefix_end, host)) = web_address(chunk) else {
        return Cow::Borrowed(chunk);
    };
    Cow::Owned(format!(
        "{}{} {}",
        &chunk[..prefix_end],
        host_name_labels(&chunk[host.clone()]).join("."),
        &chunk[host.end..]
    ))
}

/// Where the web address in `chunk` is: the end of what precedes it (its scheme, or `www.`
/// when it has none, starts there) and the byte range of its host. `None` when the chunk holds
/// no address.
fn web_address(chunk: &str) -> Option<(usize, std::ops::Range<usize>)> {
    let (prefix_end, host_start) = match chunk.find("://") {
        Some(i) => {
            let scheme_start = chunk[..i]
                .char_indices()
                .rev()
                .take_while(|(_, c)| c.is_ascii_alphabetic())
                .last()
                .map_or(i, |(j, _)| j);
            if scheme_start == i {
                return None;
            }
            (scheme_start, i + 3)
        }
        None => match chunk.find(|c: char| c.is_alphanumeric()) {
            Some(i) if chunk[i..].get(..4).is_some_and(|p| p.eq_ignore_ascii_case("www.")) => (i, i),
            _ => return None,
        },
    };
    let host_len = chunk[host_start..]
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '-' | '_')))
        .unwrap_or(chunk.len() - host_start);
    let host = chunk[host_start..host_start + host_len].trim_end_matches('.');
    Some((prefix_end, host_start..host_start + host.len()))
}

/// The labels of a host that name it: `linkedin` of `www.linkedin.com`, `sina` of
/// `sina.com.cn`, `play` and `google` of `play.google.com`. The top-level domain goes, then a
/// generic second level under it (`com`, `co`, `org`, `net`, `gov`, `edu`, `ac`), then `www`,
/// each only while a label remains.
fn host_name_labels(host: &str) -> Vec<&str> {
    const GENERIC: [&str; 7] = ["com", "co", "org", "net", "gov", "edu", "ac"];
    let mut labels: Vec<&str> = host.split('.').collect();
    if labels.len() >= 2 {
        labels.pop();
        if labels.len() >= 2 && GENERIC.iter().any(|g| labels[labels.len() - 1].eq_ignore_ascii_case(g)) {
            labels.pop();
        }
        if labels.len() >= 2 && labels[0].eq_ignore_ascii_case("www") {
            labels.remove(0);
        }
    }
    labels
}

/// The name of the service a web address in `chunk` points at, as words (`linkedin` of
/// `https://www.linkedin.com/in/johndoe`, `play google` of `https://play.google.com/store/…`):
/// the request is about that service even where its text never names it (`gather the funding
/// history at https://www.crunchbase.com/organization/acme`). `None` without an address, and
/// for the hosts that name nothing: the reserved example domains (`example.com`, `*.test`,
/// RFC 2606), `localhost` and IP addresses.
fn host_name(chunk: &str) -> Option<String> {
    let (_, host) = web_address(chunk)?;
    let host = &chunk[host];
    let all: Vec<&str> = host.split('.').collect();
    let is =
        |label: Option<&&str>, names: &[&str]| label.is_some_and(|l| names.iter().any(|n| l.eq_ignore_ascii_case(n)));
    let reserved =
        is(all.last(), &["example", "localhost", "test", "invalid"]) || is(all.iter().rev().nth(1), &["example"]);
    let ip = all.iter().all(|l| l.bytes().all(|b| b.is_ascii_digit()));
    if reserved || ip {
        return None;
    }
    Some(host_name_labels(host).join(" "))
}

/// `text` without its web addresses, for the semantic arm's text of a tool: a description's
/// links (`[See the docs](https://docs.example.com/api/access)`, `<https://…>`, a bare
/// address) point somewhere else and say nothing of what the tool does, as a request's
/// addresses are left out of its text ([`without_literals`]). A markdown link keeps its
/// words; every other whitespace-separated chunk that holds an address goes. A text with an
/// address has its words joined by single spaces; one without is returned as it is.
pub fn without_web_addresses(text: &str) -> std::borrow::Cow<'_, str> {
    if text.split_whitespace().all(|c| web_address(c).is_none()) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for chunk in text.split_whitespace() {
        let kept = match chunk.find("](") {
            Some(i) if web_address(&chunk[i + 2..]).is_some() => &chunk[..i],
            _ if web_address(chunk).is_some() => "",
            _ => chunk,
        };
        if !kept.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(kept);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `42`, `3.5`, `1,000` (punctuation around it aside).
fn is_number(chunk: &str) -> bool {
    let bare = chunk.trim_matches(|c: char| !c.is_alphanumeric());
    bare.chars().any(|c| c.is_ascii_digit()) && bare.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',')
}

/// The query as the semantic arm reads it: without its literal values (quoted strings, paths,
/// URLs, e-mail addresses, selectors, file names and bare numbers), which are data for the
/// call, not words about the tool — `read ./test_project_root/requirements.txt` must not
/// read as a request about projects. A web address leaves the name of the service it points
/// at (`host_name`). A query that is nothing but values stays whole.
pub fn without_literals(query: &str) -> String {
    let kept: Vec<std::borrow::Cow<'_, str>> = marked_chunks(query)
        .into_iter()
        .filter_map(|(chunk, literal)| match literal {
            false if !is_number(chunk) => Some(chunk.into()),
            false => None,
            true => host_name(chunk).map(Into::into),
        })
        .collect();
    if kept.is_empty() {
        query.trim().to_owned()
    } else {
        kept.join(" ")
    }
}

/// One word of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryWord {
    /// Lower case.
    pub text: String,
    /// Only occurs inside a literal value (see [`query_words`]).
    pub literal: bool,
    /// Continues the previous word past a camelCase boundary (`bay` of `eBay`).
    pub camel: bool,
}

/// A whitespace-free chunk that reads as a value rather than a word.
fn is_literal_chunk(chunk: &str) -> bool {
    const TRAILING: [char; 9] = ['.', ',', ';', ':', '?', '!', ')', '\'', '"'];
    let c = chunk.trim_end_matches(TRAILING);
    let c = c.trim_start_matches(['(', '\'', '"']);
    if c.contains("://") || c.contains(['/', '\\', '@', '=']) {
        return true;
    }
    if (c.starts_with('#') || c.starts_with('.')) && c.len() > 1 {
        return true;
    }
    // `file.ext`, `www.example.com`, `v1.2`: a dot between letters or digits
    let b = c.as_bytes();
    (1..b.len().saturating_sub(1))
        .any(|i| b[i] == b'.' && b[i - 1].is_ascii_alphanumeric() && b[i + 1].is_ascii_alphanumeric())
}

/// Reusable buffers for splitting many texts without allocating per word (index build).
#[derive(Default)]
pub struct Tokenizer {
    chars: Vec<char>,
    word: String,
}

impl Tokenizer {
    /// Calls `f` with each lower-case word of `text`, in order.
    pub fn for_each_word(&mut self, text: &str, mut f: impl FnMut(&str)) {
        self.for_each_word_marked(text, |w, _| f(w));
    }

    /// [`Tokenizer::for_each_word`], also telling `f` whether the word continues the previous
    /// one past a camelCase boundary (`bay` of `eBay`).
    pub fn for_each_word_marked(&mut self, text: &str, mut f: impl FnMut(&str, bool)) {
        self.chars.clear();
        self.chars.extend(text.chars());
        self.word.clear();
        let chars = &self.chars;
        let cur = &mut self.word;
        let mut i = 0;
        // the word being built continues the previous one (a camelCase split)
        let mut camel = false;
        while i < chars.len() {
            let c = chars[i];
            if c.is_ascii_alphanumeric() || (!c.is_ascii() && c.is_alphanumeric() && !is_ideograph(c)) {
                if !cur.is_empty() && is_camel_boundary(chars, i) {
                    f(cur, camel);
                    cur.clear();
                    camel = true;
                }
                if c.is_ascii() {
                    cur.push(c.to_ascii_lowercase());
                } else {
                    cur.extend(c.to_lowercase());
                }
            } else {
                if !cur.is_empty() {
                    f(cur, camel);
                    cur.clear();
                }
                camel = false;
                if is_ideograph(c) {
                    let mut buf = [0u8; 4];
                    f(c.encode_utf8(&mut buf), false);
                } else if c == '\'' || c == '\u{2019}' {
                    // `user's` → `user`, `I'm` → `i`: an English clitic is noise, not a word.
                    i += clitic_len(&chars[i + 1..]);
                }
            }
            i += 1;
        }
        if !cur.is_empty() {
            f(cur, camel);
            cur.clear();
        }
    }
}

/// Length of an English clitic (`s`, `m`, `re`, `ll`, `t`, `d`, `ve`) at the start of `rest`
/// when it ends the word there; 0 otherwise. Looks at three characters at most (a clitic has
/// two), so a long word after an apostrophe is not scanned twice.
fn clitic_len(rest: &[char]) -> usize {
    const CLITICS: [&str; 7] = ["s", "m", "re", "ll", "t", "d", "ve"];
    let n = rest.iter().take(3).take_while(|c| c.is_alphanumeric()).count();
    if n > 2 {
        return 0;
    }
    let word: String = rest[..n].iter().flat_map(|c| c.to_lowercase()).collect();
    if CLITICS.contains(&word.as_str()) {
        n
    } else {
        0
    }
}

/// A camelCase boundary before `chars[i]`: `aB` (lower→upper), or `ABc` (the last capital of an
/// acronym that starts a new word) unless the lower case is a plural `s` (`URLs`, `IDs`).
fn is_camel_boundary(chars: &[char], i: usize) -> bool {
    let c = chars[i];
    if !c.is_uppercase() || i == 0 {
        return false;
    }
    let prev = chars[i - 1];
    if prev.is_lowercase() {
        return true;
    }
    let plural = chars.get(i + 1) == Some(&'s') && !chars.get(i + 2).is_some_and(|c| c.is_alphanumeric());
    prev.is_uppercase() && chars.get(i + 1).is_some_and(|n| n.is_lowercase()) && !plural
}

/// Scripts written without spaces between words.
pub fn is_ideograph(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // hiragana, katakana
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified
        | 0xAC00..=0xD7AF // hangul syllables
        | 0xF900..=0xFAFF)
}

/// English words that say nothing about which tool is meant. Kept short on purpose: words like
/// `get`, `list`, `new`, `all` or `by` are parts of tool names and stay searchable.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "been",
    "but",
    "can",
    "could",
    "did",
    "do",
    "does",
    "for",
    "from",
    "had",
    "has",
    "have",
    "he",
    "her",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "let",
    "lets",
    "like",
    "me",
    "might",
    "my",
    "need",
    "of",
    "on",
    "or",
    "our",
    "please",
    "she",
    "should",
    "so",
    "some",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "to",
    "too",
    "us",
    "very",
    "want",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "also",
    "just",
    "using",
    "via",
    "e",
    "g",
    "etc",
    "i'm",
    "im",
    "hi",
    "hello",
    "thanks",
    "kindly",
    "wanna",
    "gonna",
    "help",
    "looking",
    // the scaffolding of a pasted request: says how someone asks, not what for
    "interested",
    "trying",
    "wondering",
    "currently",
    "specifically",
    "particularly",
    "especially",
    "provide",
    "provided",
    "information",
    "info",
    "details",
    "tell",
    "give",
    "know",
    "able",
    "possible",
    "assist",
    "going",
    "hoping",
    "wish",
    "may",
    "must",
    "shall",
    "such",
    "each",
    "every",
    "both",
    "really",
    "sure",
    "okay",
    "ok",
    "needs",
    "needed",
    "wants",
    "wanted",
    "being",
    "here",
    "now",
    "own",
    "same",
    "other",
    "others",
    "something",
    "anything",
    "someone",
    "thing",
    "things",
    "way",
    "ways",
    "certain",
    "following",
    "whether",
    "various",
    "several",
    "different",
    // prepositions that never name what a tool does (`after`, `before`, `between` can: dates)
    "through",
    "within",
    "without",
    "across",
    "around",
    "along",
    "upon",
    "among",
    "toward",
    "towards",
    "onto",
];

pub fn is_stop_word(w: &str) -> bool {
    STOP_WORDS.contains(&w)
}

/// The analyzer: stop words out, Snowball English stems in.
pub struct Analyzer {
    stemmer: Stemmer,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Analyzer(english)")
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }
}

impl Analyzer {
    /// The index term of one lower-case word.
    pub fn stem(&self, word: &str) -> String {
        if word.len() <= 3 || word.chars().any(|c| c.is_ascii_digit()) {
            return word.to_string();
        }
        self.stemmer.stem(word).into_owned()
    }

    /// Terms of `text`, in order, stop words removed.
    pub fn terms(&self, text: &str) -> Vec<String> {
        words(text)
            .into_iter()
            .filter(|w| !is_stop_word(w))
            .map(|w| self.stem(&w))
            .collect()
    }
}
