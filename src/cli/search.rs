//! `mcp-search-proxy search`: rank a catalog file's tools for a query, offline, through the same
//! `Index::search` that answers `mcp_search`.

use std::path::PathBuf;
use std::process::ExitCode;

use tool_search::catalog_file::load_catalog_path;
use tool_search::Index;

/// Search a catalog file the way `mcp_search` would.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// Catalog file: `{"tools": [...]}` or `{"upstreams": [{"label", "tools"}]}` (a manifest).
    #[arg(long)]
    pub catalog: PathBuf,
    /// Results to show.
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Print each result's score as a labelled tree.
    #[arg(long)]
    pub explain: bool,
    /// The query (several words are joined with spaces).
    #[arg(required = true, num_args = 1..)]
    pub query: Vec<String>,
}

impl SearchArgs {
    pub fn run(&self) -> ExitCode {
        let tools = match load_catalog_path(&self.catalog) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("mcp-search-proxy search: {e}");
                return ExitCode::from(2);
            }
        };
        let index = Index::build(&tools);
        let query = self.query.join(" ");
        let hits = index.search(&query, self.limit);
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
                for line in index.explain(&query, h.doc).to_text().lines() {
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
            query: vec!["send".into(), "message".into()],
        };
        assert_eq!(args.run(), ExitCode::SUCCESS);
        let bad = SearchArgs {
            catalog: PathBuf::from("/nonexistent.json"),
            limit: 3,
            explain: false,
            query: vec!["x".into()],
        };
        assert_eq!(bad.run(), ExitCode::from(2));
    }
}
