//! Unit tests of the analyzer and the ranking rules, on a small hand-made catalog.
//! (The real catalogs and the seed examples are exercised by
//! `crates/search-eval/tests/search_eval.rs`.)

use super::analyzer::{query_words, words, Analyzer};
use super::*;
use crate::catalog_file::load_catalog;

fn catalog() -> Vec<CatalogTool> {
    let text = r#"{"tools": [
      {"name": "gmail-send_message", "description": "Send an email message to specified recipients.",
       "inputSchema": {"type": "object", "properties": {"to": {"type": "array", "description": "Recipient email addresses"}, "subject": {"type": "string"}, "body": {"type": "string"}}}},
      {"name": "gmail-list_threads", "description": "List threads in the user's mailbox",
       "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "maxResults": {"type": "integer"}}}},
      {"name": "gmail-get_profile", "description": "Get the current user's Gmail profile"},
      {"name": "gmail-stop_mail_watch", "description": "Stop receiving push notifications for the given user mailbox"},
      {"name": "calendar-create-event", "description": "Create a new calendar event",
       "inputSchema": {"type": "object", "properties": {"summary": {"type": "string"}, "start": {"type": "string", "description": "Start time"}}}},
      {"name": "calendar-list-events", "description": "List events in a date range"},
      {"name": "github-create_issue", "description": "Create a new issue in a GitHub repository",
       "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string"}}}},
      {"name": "github-list_issues", "description": "List issues in a GitHub repository"},
      {"name": "github-search_repositories", "description": "Search for GitHub repositories"},
      {"name": "filesystem-read_file", "description": "Read the complete contents of a file from the file system"},
      {"name": "filesystem-list_directory", "description": "Get a detailed listing of all files and directories in a specified path"},
      {"name": "browser_navigate", "server": "playwright", "description": "Navigate to a URL"},
      {"name": "browser_take_screenshot", "server": "playwright", "description": "Take a screenshot of the current page"},
      {"name": "browser_click", "server": "playwright", "description": "Perform click on a web page"},
      {"name": "target_widget", "server": "misc", "description": "Widget targeting helper"}
    ]}"#;
    load_catalog(text).expect("fixture parses")
}

fn names(index_tools: &[CatalogTool], hits: &[Hit]) -> Vec<String> {
    hits.iter().map(|h| index_tools[h.doc].tool.name.clone()).collect()
}

fn top(query: &str) -> Vec<String> {
    let tools = catalog();
    let index = Index::build(&tools);
    names(&tools, &index.search(query, 5))
}

// ---- analyzer ----

#[test]
fn words_split_separators_camel_case_and_acronyms() {
    assert_eq!(words("gmail-send_message"), ["gmail", "send", "message"]);
    assert_eq!(
        words("threadId includeBodyHtml"),
        ["thread", "id", "include", "body", "html"]
    );
    assert_eq!(words("HTMLParser v2"), ["html", "parser", "v2"]);
    // a plural acronym is one word
    assert_eq!(words("listURLs IDs"), ["list", "urls", "ids"]);
}

#[test]
fn words_drop_english_clitics_and_split_ideographs() {
    assert_eq!(
        words("the user's inbox, I'm sure"),
        ["the", "user", "inbox", "i", "sure"]
    );
    assert_eq!(words("搜索结果"), ["搜", "索", "结", "果"]);
}

#[test]
fn analyzer_removes_stop_words_and_stems() {
    let a = Analyzer::default();
    assert_eq!(a.terms("list the threads of my mailbox"), ["list", "thread", "mailbox"]);
    assert_eq!(a.terms("Creating events"), a.terms("create event"));
    // short words and words with digits are kept as written
    assert_eq!(a.stem("ids"), "ids");
    assert_eq!(a.stem("v1beta"), "v1beta");
}

#[test]
fn query_words_mark_pasted_values_as_literal() {
    let w = query_words("read ./src/main.rs and 'Project Overview' from bob@example.com 2023 now");
    let literal: Vec<&str> = w.iter().filter(|w| w.literal).map(|w| w.text.as_str()).collect();
    let intent: Vec<&str> = w.iter().filter(|w| !w.literal).map(|w| w.text.as_str()).collect();
    assert_eq!(intent, ["read", "and", "from", "now"]);
    assert_eq!(
        literal,
        ["src", "main", "rs", "project", "overview", "bob", "example", "com", "2023"]
    );
    assert!(query_words("user's profile").iter().all(|w| !w.literal));
}

#[test]
fn query_words_remember_camel_case_splits() {
    let w = query_words("eBay URLs searchPapers");
    let parts: Vec<(&str, bool)> = w.iter().map(|w| (w.text.as_str(), w.camel)).collect();
    assert_eq!(
        parts,
        [
            ("e", false),
            ("bay", true),
            ("urls", false),
            ("search", false),
            ("papers", true)
        ]
    );
}

/// The stems a query word expands to through the alias table (`known`: the catalog has the
/// word itself).
fn alias_targets(w: &str, known: bool) -> Vec<String> {
    let a = Analyzer::default();
    aliases::table()
        .lookup(w, &a.stem(w), known)
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

#[test]
fn aliases_map_synonyms_and_other_languages() {
    let a = Analyzer::default();
    assert!(alias_targets("ticket", true).contains(&a.stem("issue")));
    assert!(alias_targets("invia", false).contains(&a.stem("send")));
    assert!(alias_targets("inviare", false).contains(&a.stem("send")));
    assert!(alias_targets("evento", false).contains(&a.stem("event")));
    // foreign forms only stand in for words the catalog does not know
    assert!(alias_targets("inviare", true).is_empty());
    // the abbreviations tools' users write reach the words tools are described with, one way
    assert!(alias_targets("pr", true).contains(&a.stem("pull")));
    assert!(alias_targets("pr", true).contains(&a.stem("request")));
    assert!(alias_targets("k8s", false).contains(&a.stem("kubernetes")));
    assert!(!alias_targets("pull", true).contains(&"pr".to_string()));
}

#[test]
fn an_abbreviation_reaches_the_tool_that_spells_it_out() {
    let text = r#"{"tools": [
      {"name": "github-get_pull_request_files", "description": "Get the list of files changed in a pull request"},
      {"name": "grafana-validate_provisioning_file", "description": "Validate the changed files of a provisioning repository at a branch or PR"},
      {"name": "github-list_commits", "description": "List commits of a branch"}
    ]}"#;
    let tools = load_catalog(text).expect("fixture parses");
    let index = Index::build(&tools);
    let got = names(&tools, &index.search("pr files changed", 3));
    assert_eq!(
        got.first().map(String::as_str),
        Some("github-get_pull_request_files"),
        "{got:?}"
    );
}

// ---- ranking ----

#[test]
fn exact_name_short_circuits_to_rank_one() {
    assert_eq!(top("gmail-send_message")[0], "gmail-send_message");
    assert_eq!(top("GMAIL-SEND_MESSAGE")[0], "gmail-send_message");
}

#[test]
fn name_without_prefix_and_any_separator_gets_a_top_slot() {
    assert_eq!(top("create issue")[0], "github-create_issue");
    assert_eq!(top("createIssue")[0], "github-create_issue");
    assert_eq!(top("browser navigate")[0], "browser_navigate");
}

#[test]
fn one_typo_in_a_name_is_tolerated() {
    assert_eq!(top("browser_navgate")[0], "browser_navigate");
    assert_eq!(top("navgate to a page")[0], "browser_navigate");
}

#[test]
fn keywords_rank_the_matching_tool_first() {
    assert_eq!(top("send gmail email")[0], "gmail-send_message");
    assert_eq!(top("create calendar event tomorrow")[0], "calendar-create-event");
    assert_eq!(top("take a screenshot")[0], "browser_take_screenshot");
}

#[test]
fn stemming_matches_inflections() {
    assert_eq!(top("thread")[0], "gmail-list_threads");
    assert_eq!(top("listing directories")[0], "filesystem-list_directory");
}

#[test]
fn substring_reaches_a_source_but_short_substrings_do_not_match_everything() {
    let mail = top("mail");
    assert!(mail.iter().all(|n| n.starts_with("gmail-")), "{mail:?}");
    assert!(!mail.is_empty());
    // `get` is inside `target_widget`; three letters never expand
    assert!(!top("get").contains(&"target_widget".to_string()));
}

#[test]
fn other_languages_reach_english_tools() {
    assert_eq!(top("invia email")[0], "gmail-send_message");
    assert_eq!(top("crea evento")[0], "calendar-create-event");
}

#[test]
fn chinese_japanese_and_russian_requests_reach_english_tools() {
    // the run `创建一个新的` holds the table's `创建` and `新`; `一个`, `的` are dropped
    assert_eq!(top("创建一个新的 GitHub 问题")[0], "github-create_issue");
    assert_eq!(top("截图当前页面")[0], "browser_take_screenshot");
    assert_eq!(top("カレンダーのイベントを作成")[0], "calendar-create-event");
    // inflected: `почтой` (by mail) is not in the table; it reaches `почта` by its Russian stem
    assert_eq!(top("отправить почтой")[0], "gmail-send_message");
    assert!(top("почтой").first().is_some_and(|t| t.starts_with("gmail-")));
    // Korean glues particles to its words: `메일을` is `메일` (mail) + the object marker
    assert_eq!(top("메일을 보내줘")[0], "gmail-send_message");
    assert_eq!(top("깃허브 저장소 검색")[0], "github-search_repositories");
    // a run with no word of the table stays unknown: nothing rather than a guess
    assert!(top("你好世界").is_empty());
    assert!(top("안녕하세요").is_empty());
    // bounded: a 4,096-character run (the longest query the service accepts) is read from its
    // first 256 characters by the lexical arm, as any query's first 256 words are; the
    // semantic arm's English reading has at most a word per character (the model reads 256
    // tokens of it)
    let long = "创建一个新的仓库".repeat(512);
    assert!(top(&long).first().is_some_and(|t| t.starts_with("github-")));
    assert!(semantic::query_text(&long).split_whitespace().count() <= MAX_QUERY_CHARS);
}

#[test]
fn synonyms_bridge_vocabulary() {
    let t = top("github tickets");
    assert!(t[0].starts_with("github-") && t[0].contains("issue"), "{t:?}");
}

#[test]
fn nothing_confident_means_no_results() {
    assert!(top("xyzzy plugh qqq").is_empty());
    assert!(top("").is_empty());
    assert!(top("   ").is_empty());
    assert!(top("order a large pepperoni pizza").is_empty());
}

#[test]
fn results_never_exceed_the_limit() {
    let tools = catalog();
    let index = Index::build(&tools);
    assert_eq!(index.search("list", 2).len(), 2);
    assert!(index.search("list", 0).is_empty());
}

#[test]
fn ranking_does_not_depend_on_catalog_order() {
    let tools = catalog();
    let mut reversed = tools.clone();
    reversed.reverse();
    let a = Index::build(&tools);
    let b = Index::build(&reversed);
    for q in ["list", "github", "file", "mail", "create issue", "send email to bob"] {
        let x = names(&tools, &a.search(q, 10));
        let y = names(&reversed, &b.search(q, 10));
        assert_eq!(x, y, "{q}");
    }
}

#[test]
fn literal_values_weigh_less_than_intent_words() {
    // the path mentions `github` and `issue`, the request asks to read a file
    assert_eq!(
        top("read the file ./github/issue_template.md")[0],
        "filesystem-read_file"
    );
}

#[test]
fn search_many_answers_each_query_separately() {
    let tools = catalog();
    let index = Index::build(&tools);
    let qs = vec![
        "create issue".to_string(),
        "xyzzy".to_string(),
        "screenshot".to_string(),
    ];
    let all = index.search_many(&qs, 3);
    assert_eq!(all.len(), 3);
    assert_eq!(names(&tools, &all[0])[0], "github-create_issue");
    assert!(all[1].is_empty());
    assert_eq!(names(&tools, &all[2])[0], "browser_take_screenshot");
}

#[test]
fn explain_rebuilds_the_search_score() {
    let tools = catalog();
    let index = Index::build(&tools);
    for q in ["send gmail email", "list github issues", "mail", "create issue"] {
        for h in index.search(q, 5) {
            let e = index.explain(q, h.doc);
            assert!((e.value - h.score).abs() < 1e-9, "{q}: {} vs {}", e.value, h.score);
            assert!(!e.details.is_empty());
        }
    }
    let missing = index.explain("send gmail email", 9);
    assert_eq!(missing.value, 0.0);
    assert!(index.explain("x", 10_000).description.contains("no tool"));
    let json = serde_json::to_value(index.explain("mail", 0)).unwrap();
    assert!(json.get("value").is_some() && json.get("description").is_some());
}

#[test]
fn empty_index_answers_nothing() {
    let index = Index::build(&[]);
    assert!(index.is_empty());
    assert!(index.search("anything", 10).is_empty());
}

#[test]
fn index_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Index>();
}

fn top_in(catalog: &str, query: &str) -> Vec<String> {
    let tools = load_catalog(catalog).expect("fixture parses");
    let index = Index::build(&tools);
    names(&tools, &index.search(query, 5))
}

#[test]
fn a_camel_case_brand_the_catalog_knows_whole_stays_whole() {
    let catalog = r#"{"tools": [
      {"name": "shop-search_products", "description": "Search for products on Ebay in a given country"},
      {"name": "maps-bay_area", "description": "Points of interest around the bay: beaches, piers, marinas"},
      {"name": "shop-list_deals", "description": "Deals of the day"}
    ]}"#;
    assert_eq!(top_in(catalog, "eBay search")[0], "shop-search_products");
    // a split the catalog does not know whole keeps its parts
    assert_eq!(top("searchPapers"), top("search papers"));
}

#[test]
fn a_camel_case_word_is_found_in_lower_case() {
    let catalog = r#"{"tools": [
      {"name": "grafana-query_prometheus", "description": "Query a PromQL-compatible datasource with a PromQL expression"},
      {"name": "grafana-query_loki_logs", "description": "Run a LogQL query against a Loki datasource"},
      {"name": "jobs-run_batch", "description": "Run a batch of jobs at once"},
      {"name": "video-search", "description": "Search videos on YouTube",
       "inputSchema": {"type": "object", "properties": {"maxResults": {"type": "integer"}}}},
      {"name": "web-search", "description": "Search the web"}
    ]}"#;
    // `promql` is no word of the catalog as written (`prom`, `ql`): only its whole form meets it
    assert_eq!(top_in(catalog, "run promql query")[0], "grafana-query_prometheus");
    assert_eq!(top_in(catalog, "youtube search")[0], "video-search");
    assert_eq!(top_in(catalog, "maxresults")[0], "video-search");
    // the parts are still words of the text
    assert_eq!(top_in(catalog, "prom ql")[0], "grafana-query_prometheus");
    // the whole word is an occurrence beside its parts, not a word more of the tool's length
    let tools = load_catalog(
        r#"{"tools": [
      {"name": "prom_one", "description": "Query a PromQL datasource"},
      {"name": "prom_two", "description": "Query a Prom QL datasource"}
    ]}"#,
    )
    .expect("fixture parses");
    let index = Index::build(&tools);
    assert_eq!(index.docs[0].length, index.docs[1].length);
    // names too: `clickup` meets `ClickUp_create_task` (without it, `clickup` is a word no
    // tool has, and the short request gets nothing), and name coverage still counts the name's
    // words as written
    let catalog = r#"{"tools": [
      {"name": "Basecamp_create_task", "description": "Create a task in a list"},
      {"name": "ClickUp_create_task", "description": "Create a task in a list"}
    ]}"#;
    assert_eq!(top_in(catalog, "new task in clickup")[0], "ClickUp_create_task");
    let tools = load_catalog(catalog).expect("fixture parses");
    let index = Index::build(&tools);
    assert_eq!(index.docs[1].name_terms, 4, "click, up, create, task");
}

#[test]
fn a_snapshot_is_not_a_screenshot() {
    // a snapshot is a point-in-time copy (of a volume, a database, a page's accessibility
    // tree), not an image of the screen: the words are no synonyms, and each language's word
    // for a snapshot reaches `snapshot`
    let catalog = r#"{"tools": [
      {"name": "screen-capture", "description": "Take a screenshot of the current page"},
      {"name": "volume-create_snapshot", "description": "Create a point-in-time snapshot of a disk volume"}
    ]}"#;
    assert_eq!(top_in(catalog, "take a screenshot"), ["screen-capture"]);
    assert_eq!(top_in(catalog, "snapshot the volume"), ["volume-create_snapshot"]);
    let a = Analyzer::default();
    assert!(!alias_targets("screenshot", true).contains(&a.stem("snapshot")));
    assert!(!alias_targets("snapshot", true).contains(&a.stem("screenshot")));
    assert!(alias_targets("快照", false).contains(&a.stem("snapshot")));
    assert!(alias_targets("截图", false).contains(&a.stem("screenshot")));
}

#[test]
fn parameter_values_the_schema_enumerates_are_searchable() {
    let catalog = r#"{"tools": [
      {"name": "web-search", "description": "Search the web",
       "inputSchema": {"type": "object", "properties": {
         "topic": {"type": "string", "enum": ["general", "news"]},
         "country": {"type": "string", "enum": ["france", "italy"]}}}},
      {"name": "web-fetch", "description": "Fetch a web page and return its text"}
    ]}"#;
    assert_eq!(top_in(catalog, "web news about france")[0], "web-search");
}

#[test]
fn a_common_word_is_not_read_as_the_source_containing_it() {
    let catalog = r#"{"tools": [
      {"name": "casinosearch-tournaments", "server": "casinosearch", "description": "Casino tournaments list"},
      {"name": "books-search", "server": "books", "description": "Search books by title"},
      {"name": "books-get", "server": "books", "description": "Get a book"},
      {"name": "films-search", "server": "films", "description": "Search films by title"}
    ]}"#;
    let t = top_in(catalog, "search books by title");
    assert_eq!(t[0], "books-search");
    assert!(!t.contains(&"casinosearch-tournaments".to_string()), "{t:?}");
}

#[test]
fn a_build_on_several_threads_equals_a_one_thread_build() {
    // 15 tools × 20 copies, renamed, so runs share words, pairs, sources and typo targets.
    let base = catalog();
    let mut tools = Vec::new();
    for i in 0..20 {
        for ct in &base {
            let mut v = ct.tool.to_value();
            v["name"] = format!(
                "{}{}",
                ct.tool.name,
                if i % 3 == 0 { String::new() } else { format!("_v{i}") }
            )
            .into();
            let mut t = ct.clone();
            t.tool = std::sync::Arc::new(serde_json::from_value(v).unwrap());
            tools.push(t);
        }
    }
    let one = build::build_on(&tools, &PARAMS, 1);
    let queries = [
        "send an email",
        "gmail-send_message",
        "sendmessage",
        "screenshot of the page",
        "create event in calendar",
        "githb isues",
        "read file contents",
        "mailbox push notifications",
        "start time summary",
    ];
    for threads in [2, 3, 4, 7] {
        let many = build::build_on(&tools, &PARAMS, threads);
        assert_eq!(one.heap_report(), many.heap_report(), "threads {threads}");
        for q in queries {
            let a: Vec<(usize, u64)> = one.search(q, 20).iter().map(|h| (h.doc, h.score.to_bits())).collect();
            let b: Vec<(usize, u64)> = many.search(q, 20).iter().map(|h| (h.doc, h.score.to_bits())).collect();
            assert_eq!(a, b, "threads {threads}, query {q:?}");
            assert!(!a.is_empty() || q == "githb isues", "query {q:?} finds something");
        }
    }
}

// ---- hybrid search (hand-made vectors: one axis per tool, so similarities are chosen) ----

/// Vectors where tool `i` points along axis `i`; a query vector mixes the axes it names.
fn axis_vectors(n: usize) -> semantic::Vectors {
    let rows: Vec<Vec<f32>> = (0..n)
        .map(|i| {
            let mut v = vec![0.0; n];
            v[i] = 1.0;
            v
        })
        .collect();
    semantic::Vectors::build(n, n, |i| Some(rows[i].as_slice()))
}

fn query_vector(n: usize, weights: &[(usize, f32)]) -> Vec<f32> {
    let mut v = vec![0.0f32; n];
    for &(i, w) in weights {
        v[i] = w;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
    v.iter().map(|x| x / norm).collect()
}

/// The semantic arm's input for one search.
fn arm<'a>(vectors: &'a semantic::Vectors, query: &'a [f32]) -> Semantic<'a> {
    Semantic { vectors, query }
}

fn position(tools: &[CatalogTool], name: &str) -> usize {
    tools.iter().position(|t| t.tool.name == name).expect("tool in fixture")
}

#[test]
fn the_semantic_arm_answers_a_need_in_other_words() {
    let tools = catalog();
    let index = Index::build(&tools);
    let n = tools.len();
    let vectors = axis_vectors(n);
    // one word of the query (`page`) is the catalog's, and it leads lexically elsewhere
    let q = "grab an image of what the page shows";
    let shot = position(&tools, "browser_take_screenshot");
    let qv = query_vector(n, &[(shot, 0.9), (position(&tools, "browser_click"), 0.3)]);
    let sem = arm(&vectors, &qv);
    let hits = index.search_hybrid(q, 5, Some(sem));
    assert!(
        names(&tools, &hits).contains(&"browser_take_screenshot".to_string()),
        "the semantic arm's nearest tool is among the hits: {:?}",
        names(&tools, &hits)
    );
}

#[test]
fn a_request_the_model_doubts_is_answered_only_at_its_cosine_bar() {
    let tools = catalog();
    let index = Index::build(&tools);
    let n = tools.len();
    // no word of the query is in the catalog, in any form: lexically nothing, and doubtful
    // under either abstention rule (the lexical arm abstains; the catalog knows none of its
    // words)
    let q = "blorf the zibbles quuxly";
    assert!(index.search(q, 5).is_empty());
    let shot = position(&tools, "browser_take_screenshot");
    let model = crate::fusion::FusionModel::builtin();
    // the query points mostly along an axis no tool has; its cosine to the nearest tool varies
    let dim = n + 1;
    let rows: Vec<Vec<f32>> = (0..n)
        .map(|i| {
            let mut v = vec![0.0; dim];
            v[i] = 1.0;
            v
        })
        .collect();
    let wide = semantic::Vectors::build(n, dim, |i| Some(rows[i].as_slice()));
    for cosine in [0.2f32, 0.5, 0.9] {
        let mut vague = vec![0.0f32; dim];
        vague[n] = 0.98;
        vague[shot] = cosine;
        let hits = index.search_hybrid(q, 5, Some(arm(&wide, &vague)));
        if f64::from(cosine) < model.abstain_below {
            assert!(hits.is_empty(), "cosine {cosine}: {:?}", names(&tools, &hits));
        } else {
            assert!(names(&tools, &hits).contains(&"browser_take_screenshot".to_string()));
        }
    }
    assert!(model.abstain_below > 0.2, "a faint likeness is no answer");
}

#[test]
fn names_the_query_spells_stay_first_whatever_the_semantic_arm_prefers() {
    let tools = catalog();
    let index = Index::build(&tools);
    let n = tools.len();
    let vectors = axis_vectors(n);
    let qv = query_vector(n, &[(position(&tools, "github-list_issues"), 1.0)]);
    let sem = arm(&vectors, &qv);
    let hits = index.search_hybrid("github-create_issue", 5, Some(sem));
    assert_eq!(names(&tools, &hits)[0], "github-create_issue");
}

#[test]
fn both_arms_agreeing_outrank_either_alone() {
    let tools = catalog();
    let index = Index::build(&tools);
    let n = tools.len();
    let vectors = axis_vectors(n);
    let create = position(&tools, "github-create_issue");
    let list = position(&tools, "github-list_issues");
    // lexically `list_issues` and `create_issue` both match `issue`; the vector says create
    let qv = query_vector(n, &[(create, 0.8), (list, 0.2)]);
    let sem = arm(&vectors, &qv);
    let hits = index.search_hybrid("open an issue", 5, Some(sem));
    assert_eq!(names(&tools, &hits)[0], "github-create_issue");
    // the explanation's root is the score the search gave, the model's terms below it (the
    // last node is the abstention's verdict, not a part)
    let e = index.explain_hybrid("open an issue", create, Some(sem));
    assert!((e.value - hits[0].score).abs() < 1e-9, "{}", e.to_text());
    let (verdict, terms) = e.details.split_last().unwrap();
    let parts: f64 = terms.iter().map(|d| d.value).sum();
    assert!((parts - e.value).abs() < 1e-9, "{}", e.to_text());
    assert!(verdict.description.contains("nearest tool's cosine"), "{}", e.to_text());
    assert!(
        terms
            .iter()
            .any(|t| t.description.starts_with("cosine_share =") && t.value > 0.0),
        "the semantic arm counts: {}",
        e.to_text()
    );
}

#[test]
fn vectors_of_another_catalog_or_dimension_leave_the_search_lexical() {
    let tools = catalog();
    let index = Index::build(&tools);
    let lexical = index.search("create issue", 5);
    let short = axis_vectors(3);
    let qv = query_vector(3, &[(0, 1.0)]);
    let sem = arm(&short, &qv);
    assert_eq!(index.search_hybrid("create issue", 5, Some(sem)), lexical);
    let full = axis_vectors(tools.len());
    let sem = arm(&full, &qv);
    assert_eq!(
        index.search_hybrid("create issue", 5, Some(sem)),
        lexical,
        "query of another dimension"
    );
    assert_eq!(index.search_hybrid("create issue", 5, None), lexical);
}

#[test]
fn the_semantic_arm_reads_the_request_without_its_values() {
    assert_eq!(
        semantic::query_text("Read the files at ./test_project_root/requirements.txt and 'a b' now, 42 times"),
        "Read the files at and now, times"
    );
    assert_eq!(
        semantic::query_text("https://example.com"),
        "https://example.com",
        "all values: kept whole"
    );
}

#[test]
fn a_description_is_embedded_without_its_web_addresses() {
    use crate::analyzer::without_web_addresses;
    assert_eq!(
        without_web_addresses(
            "Gets the access control of a member. [See the docs](https://learn.microsoft.com/en-us/linkedin/x).\nAlso <https://x.io/a> and www.example.org/b, or see https://y.dev"
        ),
        "Gets the access control of a member. [See the docs Also and or see"
    );
    // no address: the text as it is, its line breaks too
    let plain = "Send a message.\n\nArgs:\n  to: e-mail address (a@b.c), see ./docs/x.md";
    assert!(matches!(without_web_addresses(plain), std::borrow::Cow::Borrowed(t) if t == plain));
}

#[test]
fn the_semantic_arm_reads_the_service_a_web_address_points_at() {
    // the request names its service only in the address: the arm reads the host's name
    for (query, text) in [
        (
            "Gather the funding history at https://www.crunchbase.com/organization/acme.",
            "Gather the funding history at crunchbase",
        ),
        (
            "Read the reviews of https://play.google.com/store/apps/details?id=com.x now",
            "Read the reviews of play google now",
        ),
        (
            "fetch https://www.sina.com.cn and www.bbc.co.uk/news",
            "fetch sina and bbc",
        ),
        ("open https://api.github.com/repos/a/b", "open api github"),
    ] {
        assert_eq!(semantic::query_text(query), text);
    }
    // hosts that name no service leave nothing: reserved example domains, local hosts, IPs
    assert_eq!(
        semantic::query_text(
            "fetch https://example.com, https://docs.example.org/x, http://localhost:8080/api, http://10.0.0.1/x and https://site.test/"
        ),
        "fetch and"
    );
}

#[test]
fn a_lexical_winner_that_stands_out_stays_first() {
    let tools = catalog();
    let index = Index::build(&tools);
    let n = tools.len();
    let vectors = axis_vectors(n);
    let lexical = index.search("gmail profile", 5);
    assert_eq!(names(&tools, &lexical)[0], "gmail-get_profile");
    assert!(
        lexical.len() == 1 || lexical[1].score < 0.7 * lexical[0].score,
        "{lexical:?}"
    );
    // the semantic arm prefers another tool outright; the lexical winner keeps rank 1
    let qv = query_vector(n, &[(position(&tools, "calendar-list-events"), 1.0)]);
    let sem = arm(&vectors, &qv);
    let hits = index.search_hybrid("gmail profile", 5, Some(sem));
    assert_eq!(names(&tools, &hits)[0], "gmail-get_profile");
}

#[test]
fn a_lexical_winner_on_one_stray_word_is_no_lead() {
    // `zephyr` is in one tool's name, each other word of the request in another tool's
    // description: the name match stands out, but covers a fifth of the request
    let tools = load_catalog(
        r#"{"tools": [
      {"name": "acme-zephyr", "description": "Zephyr helper"},
      {"name": "acme-one", "description": "Quartz crystals"},
      {"name": "acme-two", "description": "Violet flowers"},
      {"name": "acme-three", "description": "Walnut trees"},
      {"name": "acme-four", "description": "Meadow grass"},
      {"name": "acme-five", "description": "Unrelated tool"}
    ]}"#,
    )
    .expect("fixture parses");
    let index = Index::build(&tools);
    let q = "zephyr quartz violet walnut meadow";
    let lexical = index.search(q, 5);
    assert_eq!(names(&tools, &lexical)[0], "acme-zephyr");
    assert!(lexical[1].score < 0.7 * lexical[0].score, "{lexical:?}");
    let n = tools.len();
    let vectors = axis_vectors(n);
    // the semantic arm backs a tool the lexical arm also found: together they outweigh the
    // stray-word winner, which is not kept first
    let qv = query_vector(n, &[(position(&tools, "acme-one"), 1.0)]);
    let hits = index.search_hybrid(q, 5, Some(arm(&vectors, &qv)));
    assert_eq!(names(&tools, &hits)[0], "acme-one");
    let e = index.explain_hybrid(q, position(&tools, "acme-zephyr"), Some(arm(&vectors, &qv)));
    assert!(e.description.starts_with("learned score (rank 2)"), "{}", e.to_text());
}

#[test]
fn parameter_descriptions_that_run_to_pages_weigh_less() {
    // the same word once in an ordinary parameter description and once in one that runs to
    // pages (far beyond 3 x the catalog's average): without damping they would tie, and the
    // verbose tool would win the tie by name
    let filler: Vec<String> = (0..300).map(|i| format!("w{i}")).collect();
    let mut tools = vec![
        format!(
            r#"{{"name": "aaa-verbose", "description": "Run a step",
              "inputSchema": {{"type": "object", "properties": {{"step": {{"type": "string",
                "description": "Report the insights of this step. {}"}}}}}}}}"#,
            filler.join(" ")
        ),
        r#"{"name": "zzz-short", "description": "Run a step",
           "inputSchema": {"type": "object", "properties": {"step": {"type": "string",
             "description": "Report the insights of this step"}}}}"#
            .to_string(),
    ];
    // a catalog's ordinary tools: one short parameter description each
    for s in [
        "weather", "maps", "stocks", "music", "mail", "calendar", "files", "chat",
    ] {
        tools.push(format!(
            r#"{{"name": "{s}-get", "description": "Get {s}",
              "inputSchema": {{"type": "object", "properties": {{"id": {{"type": "string", "description": "The {s} id"}}}}}}}}"#
        ));
    }
    let catalog = format!(r#"{{"tools": [{}]}}"#, tools.join(","));
    let tools = load_catalog(&catalog).expect("fixture parses");
    let index = Index::build(&tools);
    let hits = index.search("insights", 5);
    assert_eq!(names(&tools, &hits), ["zzz-short", "aaa-verbose"]);
    assert!(hits[1].score < 0.8 * hits[0].score, "{hits:?}");
}

#[test]
fn a_verbose_request_is_weighed_against_the_tools_length() {
    // a tool whose text runs long and mentions every generic word of a pasted request, a
    // short one named after the request's subject, and a catalog's ordinary tools
    let mut tools = vec![
        r#"{"name": "zen-analyze", "description": "Performs comprehensive analysis of code with systematic investigation and expert validation. Use for detailed evaluation of architecture, patterns, dependencies, performance and maintainability. Walks through the code base step by step, records findings and hypotheses, and calls an expert model to validate them before reporting.",
           "inputSchema": {"type": "object", "properties": {
             "step": {"type": "string", "description": "The current analysis step: which files to examine, which hypotheses to test, what information is still missing and what to do next in the investigation"},
             "findings": {"type": "string", "description": "Findings so far: modules read, call paths traced, performance hot spots, architectural smells and the evidence for each"},
             "model": {"type": "string", "description": "The expert model that validates the analysis once the investigation is complete"}}}}"#
            .to_string(),
        r#"{"name": "brightdata-linkedin_person_profile", "description": "Read structured linkedin people profile data",
           "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}}}"#
            .to_string(),
    ];
    for s in [
        "weather", "maps", "stocks", "music", "mail", "calendar", "files", "chat",
    ] {
        tools.push(format!(
            r#"{{"name": "{s}-get", "description": "Get the {s} of a user by id"}}"#
        ));
    }
    let catalog = format!(r#"{{"tools": [{}]}}"#, tools.join(","));
    let tools = load_catalog(&catalog).expect("fixture parses");
    let index = Index::build(&tools);
    // 31 content words, five of them (`analyze`, `detailed`, `comprehensively`, `evaluate`,
    // `patterns`) in the long tool's text, three (`structured`, `linkedin`, `profile`) in the
    // short one's
    let verbose = "Analyze and extract detailed, structured information from the LinkedIn profile at \
        https://www.linkedin.com/in/johndoe to comprehensively evaluate an individual's \
        qualifications, domain-specific expertise, career trajectory, and notable professional \
        achievements, with a particular focus on leadership growth, collaboration patterns, \
        technical depth and long-term trends across roles.";
    let hits = index.search(verbose, 5);
    assert_eq!(
        names(&tools, &hits)[0],
        "brightdata-linkedin_person_profile",
        "{hits:?}"
    );
    let e = index.explain(verbose, position(&tools, "zen-analyze"));
    assert!(
        e.to_text()
            .contains("a verbose request, normalised by the tool's length"),
        "{}",
        e.to_text()
    );
    // a request of a few words is not: the tool that matches them is the answer, however long
    assert_eq!(top_in(&catalog, "detailed analysis of code patterns")[0], "zen-analyze");
    let e = index.explain("detailed analysis of code patterns", position(&tools, "zen-analyze"));
    assert!(!e.to_text().contains("verbose request"), "{}", e.to_text());
}

#[test]
fn query_words_drop_the_syntax_of_web_addresses() {
    let w = query_words(
        "profile at (https://www.linkedin.com/in/johndoe), www.example.org/com/x, mail bob@acme.com or see http://localhost:8080/api",
    );
    let texts: Vec<&str> = w.iter().map(|w| w.text.as_str()).collect();
    // scheme, `www` and the top-level domain are every address's syntax; the rest is kept
    // (as literal words), a path word equal to them too; an e-mail address is not a web address
    assert_eq!(
        texts,
        [
            "profile",
            "at",
            "linkedin",
            "in",
            "johndoe",
            "example",
            "com",
            "x",
            "mail",
            "bob",
            "acme",
            "com",
            "or",
            "see",
            "localhost",
            "8080",
            "api"
        ]
    );
    assert!(w.iter().filter(|w| w.text == "linkedin").all(|w| w.literal));
    // what only looks like an address start is left alone, whatever its characters
    let texts: Vec<String> = query_words("l'hôte www").into_iter().map(|w| w.text).collect();
    assert_eq!(texts, ["l", "hôte", "www"]);
    // a generic level under a country's domain is syntax too
    let texts: Vec<String> = query_words("see https://www.sina.com.cn/news and bbc.co.uk")
        .into_iter()
        .map(|w| w.text)
        .collect();
    assert_eq!(texts, ["see", "sina", "news", "and", "bbc", "co", "uk"]);
}

#[test]
fn web_addresses_match_nothing_on_either_side() {
    // a documentation link in a description, a bare address in a parameter description
    let catalog = r#"{"tools": [
      {"name": "admin-org_access", "description": "Organization access control. [See the docs](https://learn.microsoft.com/en-us/linkedin/access)",
       "inputSchema": {"type": "object", "properties": {"org": {"type": "string", "description": "The org, as in https://www.acme.com/org"}}}},
      {"name": "people-person_profile", "description": "Read a LinkedIn member's profile"},
      {"name": "people-person_posts", "description": "Read a member's posts"}
    ]}"#;
    for query in [
        // a request's address syntax (`https`, `www`, `com`) is no word
        "person profile at https://www.linkedin.com/in/johndoe",
        // a description's link target is no word of it
        "linkedin profile",
    ] {
        let t = top_in(catalog, query);
        assert_eq!(t[0], "people-person_profile", "{query}");
        assert!(!t.contains(&"admin-org_access".to_string()), "{query}: {t:?}");
    }
    // the link's own words stay
    assert_eq!(top_in(catalog, "see the docs")[0], "admin-org_access");
}

#[test]
fn a_tool_name_that_repeats_its_server_name_is_indexed_by_its_own_words() {
    for (name, source, own) in [
        (
            "smithery.Bright_Data-brightdata-mcp_web_data_linkedin_person_profile",
            "smithery.Bright_Data",
            "web_data_linkedin_person_profile",
        ),
        (
            "glama.Zen_MCP_Server-zen_codereview",
            "glama.Zen_MCP_Server",
            "codereview",
        ),
        (
            "mcpso.mcp-harbor-mcp-harbor_list_projects",
            "mcpso.mcp-harbor",
            "list_projects",
        ),
        ("slack-slack_post_message", "slack", "post_message"),
        // nothing repeated: the name as it is (without its `server-` prefix)
        ("github-create_issue", "github", "create_issue"),
        ("weather-weatherapi_search", "weather", "weatherapi_search"),
        ("browser_navigate", "playwright", "browser_navigate"),
        // at least one segment always stays
        ("slack-slack_", "slack", "slack_"),
        ("slack-slack", "slack", "slack"),
        ("mcp-mcp_run", "mcp", "run"),
    ] {
        assert_eq!(own_name(name, source), own, "{name}");
    }
}

#[test]
fn a_short_request_for_an_operation_no_matching_tool_offers_gets_nothing() {
    // `delete` starts two tools' own names (after their `server-` prefix): the catalog's word
    // for an operation
    let catalog = r#"{"tools": [
      {"name": "slack-slack_post_message", "description": "Post a new message to a Slack channel"},
      {"name": "slack-slack_list_channels", "description": "List public channels in the workspace"},
      {"name": "slack-slack_get_channel_history", "description": "Get recent messages from a channel"},
      {"name": "slack-slack_reply_to_thread", "description": "Reply to a message thread in Slack"},
      {"name": "slack-slack_add_reaction", "description": "Add a reaction emoji to a Slack message"},
      {"name": "slack-slack_get_message", "description": "Get one message of a Slack channel by its timestamp"},
      {"name": "calendar-delete_event", "description": "Delete a calendar event"},
      {"name": "calendar-create_event", "description": "Create a calendar event"},
      {"name": "github-delete_file", "description": "Delete a file from a GitHub repository"},
      {"name": "github-create_issue", "description": "Open an issue in a GitHub repository"},
      {"name": "forum-remove_post", "description": "Remove a forum post you wrote"}
    ]}"#;
    let tools = load_catalog(catalog).expect("fixture parses");
    let index = Index::build(&tools);
    let search = |q: &str| names(&tools, &index.search(q, 5));
    // the Slack tools post, list, read and react to messages; none deletes (the tools that
    // delete other things rank below them)
    assert_eq!(search("delete a message in my slack channel"), Vec::<String>::new());
    // a tool that offers it in other words (`remove` is a synonym) answers it
    assert_eq!(search("delete my forum post")[0], "forum-remove_post");
    assert_eq!(search("delete the calendar event")[0], "calendar-delete_event");
    // a first word that names no operation of the catalog (`show` starts no tool name) is not
    // held against the tools; nor is an operation word in a long request
    assert!(search("show my slack channels").contains(&"slack-slack_list_channels".to_string()));
    assert!(!search("delete ... or rather post a new message to the slack channel about the team lunch").is_empty());
    // a name the query spells keeps its slot
    assert_eq!(search("delete slack_post_message")[0], "slack-slack_post_message");
    // the explanation names the rule
    let post = position(&tools, "slack-slack_post_message");
    let e = index.explain("delete a message in my slack channel", post).to_text();
    assert!(
        e.contains("operation `delet` ") && e.contains("is not offered by this tool"),
        "{e}"
    );

    // the hybrid search applies it to the fused ranking: the vector prefers posting
    let n = tools.len();
    let vectors = axis_vectors(n);
    let qv = query_vector(n, &[(post, 0.9), (1, 0.3)]);
    let sem = arm(&vectors, &qv);
    assert!(index
        .search_hybrid("delete a message in my slack channel", 5, Some(sem))
        .is_empty());
    let e = index.explain_hybrid("delete a message in my slack channel", post, Some(sem));
    assert_eq!(e.value, 0.0);
    assert!(e.description.starts_with("not returned"), "{}", e.to_text());
    let hits = index.search_hybrid("delete my forum post", 5, Some(sem));
    assert!(names(&tools, &hits).contains(&"forum-remove_post".to_string()));
}

#[test]
fn an_operation_is_offered_by_a_tool_that_also_has_what_the_request_names() {
    // `create` starts two tools' own names (after their `server-` prefix); neither creates a
    // Slack channel, and the Slack tools create nothing
    let catalog = r#"{"tools": [
      {"name": "slack-slack_post_message", "description": "Post a message to a Slack channel"},
      {"name": "slack-slack_list_channels", "description": "List public channels in the workspace"},
      {"name": "calendar-create_event", "description": "Create a calendar event"},
      {"name": "calendar-list_events", "description": "List the events of a calendar"},
      {"name": "notes-create_note", "description": "Create a note"},
      {"name": "notes-search_notes", "description": "Search your notes"}
    ]}"#;
    let tools = load_catalog(catalog).expect("fixture parses");
    let index = Index::build(&tools);
    let search = |q: &str| names(&tools, &index.search(q, 5));
    // the tools that create things are among the best five, but not for a channel
    assert_eq!(search("create slack channel"), Vec::<String>::new());
    let e = index
        .explain("create slack channel", position(&tools, "calendar-create_event"))
        .to_text();
    assert!(e.contains("is not offered by this tool"), "{e}");
    // the operation on what the request names is offered
    assert_eq!(search("create calendar event")[0], "calendar-create_event");
    assert_eq!(search("create note")[0], "notes-create_note");
    // a word the catalog does not know is offered by no tool, though a pasted value's words
    // (data, not what the request asks for) cover enough of the request to keep it from
    // abstaining on coverage; with a known word beside it, the known one decides
    assert_eq!(search("create sms \"calendar event\""), Vec::<String>::new());
    assert_eq!(search("create note sms")[0], "notes-create_note");
    // an operation alone, or with only literal values, asks nothing more of the tool
    assert!(search("create").contains(&"notes-create_note".to_string()));
    assert!(!search("create \"calendar event\"").is_empty());
}
