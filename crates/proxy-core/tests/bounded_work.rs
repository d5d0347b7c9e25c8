//! Bounded memory on hostile input: one search or one index build must not allocate memory
//! growing with the square of a word's length (a 60,000-character word once cost gigabytes:
//! every one-character deletion of it was built for typo matching).
//!
//! The peak heap is measured by a counting global allocator, which is process-wide: this binary
//! has this one test, and its scenarios run one after the other.
//!
//! Each scenario runs at a moderate size first, then at the full one: a regression fails at the
//! first size, with a few hundred megabytes measured, instead of taking the machine's memory.

use peak_alloc::PeakAlloc;
use serde_json::json;
use tool_search::catalog_file::load_catalog;
use tool_search::model::CatalogTool;
use tool_search::Index;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

/// The most one search or one build may hold at once above what was held before it.
const BOUND: usize = 64 << 20;

/// Sizes (characters) of the long word or name, moderate first.
const SIZES: [usize; 2] = [12_000, 60_000];

/// Peak heap bytes allocated while `f` runs, above what was allocated before it.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = ALLOC.current_usage();
    ALLOC.reset_peak_usage();
    let out = f();
    (out, ALLOC.peak_usage().saturating_sub(base))
}

/// Deterministic pseudo-random lower-case letters (xorshift; no two deletions alike).
struct Letters(u64);

impl Letters {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn word(&mut self, len: usize) -> String {
        (0..len).map(|_| (b'a' + (self.next() % 26) as u8) as char).collect()
    }
}

fn small_catalog() -> Vec<CatalogTool> {
    load_catalog(
        r#"{"tools": [
          {"name": "gmail-send_message", "description": "Send an email message to recipients"},
          {"name": "gmail-list_threads", "description": "List threads in the mailbox"},
          {"name": "github-create_issue", "description": "Create a new issue in a repository"},
          {"name": "github-search_repositories", "description": "Search for repositories"},
          {"name": "browser_navigate", "server": "playwright", "description": "Navigate to a URL"},
          {"name": "browser_take_screenshot", "server": "playwright", "description": "Take a screenshot"}
        ]}"#,
    )
    .expect("fixture parses")
}

/// A catalog with hostile names: one word of `n` letters, `n` characters of separated words,
/// and a title of one `n`-letter word.
fn hostile_catalog(n: usize, rng: &mut Letters) -> Vec<CatalogTool> {
    let mut many = String::new();
    while many.len() < n {
        let len = 3 + (rng.next() % 12) as usize;
        many.push_str(&rng.word(len));
        many.push(if rng.next() % 2 == 0 { '_' } else { '-' });
    }
    let text = json!({"tools": [
        {"name": format!("srv-{}", rng.word(n)), "description": "one long word"},
        {"name": many, "description": "many words"},
        {"name": "srv-titled", "title": rng.word(n), "description": "a long title"},
        {"name": "srv-plain", "description": "Send an email message"},
    ]})
    .to_string();
    load_catalog(&text).expect("hostile catalog parses")
}

/// A query of about `bytes` bytes: ordinary words with an `n`-letter word every so often.
fn long_query(bytes: usize, n: usize, rng: &mut Letters) -> String {
    let mut q = String::with_capacity(bytes + n);
    while q.len() < bytes {
        if rng.next() % 64 == 0 {
            q.push_str(&rng.word(n));
        } else {
            let len = 1 + (rng.next() % 14) as usize;
            q.push_str(&rng.word(len));
        }
        q.push(' ');
    }
    q
}

#[test]
fn search_and_build_hold_little_memory_for_huge_words() {
    let tools = small_catalog();
    let index = Index::build(&tools);
    let mut rng = Letters(0x9e37_79b9_7f4a_7c15);
    let mut failures: Vec<String> = Vec::new();
    let check = |failures: &mut Vec<String>, what: String, bytes: usize| {
        eprintln!("{what}: peak {} KiB", bytes >> 10);
        if bytes >= BOUND {
            failures.push(format!("{what}: peak {bytes} bytes >= {BOUND}"));
        }
    };
    for n in SIZES {
        let word = rng.word(n);
        let (hits, bytes) = peak_of(|| index.search(&word, 10));
        check(&mut failures, format!("search for one {n}-letter word"), bytes);
        drop(hits);
        // mcp_describe / mcp_call suggest names through the same search
        let name = format!("browser_{word}");
        let (_, bytes) = peak_of(|| index.search(&name, 3));
        check(&mut failures, format!("search for a {n}-letter tool name"), bytes);
        let (_, bytes) = peak_of(|| index.explain(&word, 0));
        check(&mut failures, format!("explain a {n}-letter word"), bytes);

        let hostile = hostile_catalog(n, &mut rng);
        let (built, bytes) = peak_of(|| Index::build(&hostile));
        check(&mut failures, format!("build with {n}-character tool names"), bytes);
        drop(built);
        if !failures.is_empty() {
            break; // the full size would only cost more
        }
    }
    if failures.is_empty() {
        let word = rng.word(1 << 20);
        let (_, bytes) = peak_of(|| index.search(&word, 10));
        check(&mut failures, "search for one 1 MiB word".into(), bytes);
        let query = long_query(1 << 20, SIZES[1], &mut rng);
        let (_, bytes) = peak_of(|| index.search(&query, 10));
        check(&mut failures, "search for a 1 MiB query".into(), bytes);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
