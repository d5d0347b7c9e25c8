//! `search-eval search`: rank a catalog file's tools for a query, offline, through the same
//! `Index::search_hybrid` that answers `mcp_search` (lexical only unless `--embed-model`).

use std::path::PathBuf;
use std::process::ExitCode;

use tool_search::catalog_file::load_catalog_path;
use tool_search::model::CatalogTool;
use tool_search::semantic::{query_text, Vectors};
use tool_search::{Index, Semantic};

use crate::vectors::EvalEmbedder;

/// The catalog's vectors (cached) and the query's.
fn semantic_inputs(
    model: &std::path::Path,
    cache: &std::path::Path,
    tools: &[CatalogTool],
    query: &str,
) -> Result<(Vectors, Vec<f32>), String> {
    let mut e = EvalEmbedder::open(model, cache)?;
    let vectors = e.tool_vectors(tools)?;
    let text = query_text(query);
    let qv = e.query_vectors(&[text.as_str()])?.remove(&text).unwrap_or_default();
    Ok((vectors, qv))
}

/// Search a catalog file the way `mcp_search` would.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// Catalog file: `{"tools": [...]}` or `{"upstreams": [{"label", "tools"}]}` (a manifest).
    #[arg(long)]
    pub catalog: PathBuf,
    /// Results to show.
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Print each result's score as a labelled tree (with both arms' parts when hybrid).
    #[arg(long)]
    pub explain: bool,
    /// Rank with the semantic arm too, using the model in this directory (as `EMBED_MODEL`);
    /// the catalog's vectors are kept in --vector-cache.
    #[arg(long)]
    pub embed_model: Option<PathBuf>,
    /// Where tool and query vectors are kept between runs (with --embed-model).
    #[arg(long, default_value = "target/vector-cache")]
    pub vector_cache: PathBuf,
    /// The query (several words are joined with spaces).
    #[arg(required = true, num_args = 1..)]
    pub query: Vec<String>,
}

impl SearchArgs {
    pub fn run(&self) -> ExitCode {
        let tools = match load_catalog_path(&self.catalog) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("search-eval search: {e}");
                return ExitCode::from(2);
            }
        };
        let index = Index::build(&tools);
        let query = self.query.join(" ");
        let semantic = match &self.embed_model {
            None => None,
            Some(model) => match semantic_inputs(model, &self.vector_cache, &tools, &query) {
                Ok(v) => Some(v),
                Err(e) => {
                    eprintln!("search-eval search: {e}");
                    return ExitCode::from(2);
                }
            },
        };
        let sem = semantic.as_ref().map(|(vectors, qv)| Semantic {
            vectors,
            query: qv.as_slice(),
        });
        let hits = index.search_hybrid(&query, self.limit, sem);
        if hits.is_empty() {
            println!("no confident match for {query:?} among {} tools", tools.len());
        }
        for (rank, h) in hits.iter().enumerate() {
            let Some(t) = tools.get(h.doc) else { continue };
            let desc: String = t.tool.description_str().chars().take(100).collect();
            let desc = desc.split_whitespace().collect::<Vec<_>>().join(" ");
            println!(
                "{:>3}. {:>8.3}  {}  [{}]  {}",
                rank + 1,
                h.score,
                t.tool.name,
                t.source,
                desc
            );
            if self.explain {
                for line in index.explain_hybrid(&query, h.doc, sem).to_text().lines() {
                    println!("            {line}");
                }
            }
        }
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_runs_on_a_catalog_file() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = dir.path().join("catalog.json");
        std::fs::write(
            &catalog,
            r#"{"tools": [{"name": "gmail-send_message"}, {"name": "gmail-get_profile"}]}"#,
        )
        .unwrap();
        let args = SearchArgs {
            catalog,
            limit: 3,
            explain: true,
            embed_model: None,
            vector_cache: dir.path().join("vectors"),
            query: vec!["send".into(), "message".into()],
        };
        assert_eq!(args.run(), ExitCode::SUCCESS);
        let bad = SearchArgs {
            catalog: PathBuf::from("/nonexistent.json"),
            limit: 3,
            explain: false,
            embed_model: None,
            vector_cache: PathBuf::from("target/vector-cache"),
            query: vec!["x".into()],
        };
        assert_eq!(bad.run(), ExitCode::from(2));
    }
}
