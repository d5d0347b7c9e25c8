//! The sets a run reads: the visible evaluation sets (`../shared/bench/eval`, see
//! [`crate::eval::visible_sets`]) and this project's own training sets (`data/*.json`,
//! [`load_own_set`]), each as its catalog's tools and its queries.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tool_search::catalog_file::{load_catalog, load_catalog_path};
use tool_search::eval::EvalQuery;
use tool_search::model::CatalogTool;

use crate::eval::{load_query_file, visible_sets};

/// One set: its name, its catalog's tools and its queries.
#[derive(Debug)]
pub struct LoadedSet {
    pub name: String,
    pub tools: Vec<CatalogTool>,
    pub queries: Vec<EvalQuery>,
}

/// Where the visible sets and the sentence model are: the arguments `train` and
/// `train-encoder` share.
#[derive(clap::Args, Debug, Default)]
pub struct SetInputs {
    /// The folder of evaluation sets (as `--all-visible`).
    #[arg(long, default_value = "../shared/bench/eval")]
    pub eval_dir: PathBuf,
    /// Where `deployment.json` is, the catalog of sets without their own.
    #[arg(long, default_value = "../shared/bench/catalogs")]
    pub catalogs_dir: PathBuf,
    /// The sentence model (as `EMBED_MODEL`): its tool vectors are the frozen targets.
    #[arg(long)]
    pub embed_model: PathBuf,
    /// Where tool and query vectors are kept between runs.
    #[arg(long, default_value = "target/vector-cache")]
    pub vector_cache: PathBuf,
}

/// Every visible set of `eval_dir` (in name order), loaded.
pub fn load_visible(eval_dir: &Path, catalogs_dir: &Path) -> Result<Vec<LoadedSet>, String> {
    visible_sets(eval_dir, catalogs_dir)?
        .into_iter()
        .map(|(name, catalog, queries)| {
            Ok(LoadedSet {
                name,
                tools: load_catalog_path(&catalog).map_err(|e| e.to_string())?,
                queries: load_query_file(&queries)?,
            })
        })
        .collect()
}

/// One of this project's own sets (`crates/search-eval/data/*.json`): `{"catalog": FILE in
/// `catalogs_dir`, "servers": [...], "queries": [...]}`, its requests asked over the catalog's
/// tools of those servers. Named by the file's stem. A gold name that is not among those tools
/// is an error.
pub fn load_own_set(file: &Path, catalogs_dir: &Path) -> Result<LoadedSet, String> {
    #[derive(serde::Deserialize)]
    struct OwnSet {
        catalog: String,
        servers: Vec<String>,
        queries: Vec<EvalQuery>,
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let set: OwnSet = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    let catalog_path = catalogs_dir.join(&set.catalog);
    let all: Value = serde_json::from_str(
        &std::fs::read_to_string(&catalog_path).map_err(|e| format!("{}: {e}", catalog_path.display()))?,
    )
    .map_err(|e| format!("{}: {e}", catalog_path.display()))?;
    let tools: Vec<Value> = all["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["server"].as_str().is_some_and(|s| set.servers.iter().any(|w| w == s)))
        .cloned()
        .collect();
    let tools = load_catalog(&json!({ "tools": tools }).to_string()).map_err(|e| format!("{}: {e}", file.display()))?;
    for q in &set.queries {
        if let Some(n) = q
            .groups()
            .iter()
            .flatten()
            .find(|n| !tools.iter().any(|t| &t.tool.name == *n))
        {
            return Err(format!(
                "{}: {}: gold tool {n} is not among the servers' tools",
                file.display(),
                q.id
            ));
        }
    }
    let name = file
        .file_stem()
        .map_or_else(|| "own".into(), |s| s.to_string_lossy().into_owned());
    Ok(LoadedSet {
        name,
        tools,
        queries: set.queries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_own_set_is_asked_over_its_servers_tools_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("cat.json"),
            r#"{"tools": [
                {"name": "a-send", "server": "a", "description": "Send."},
                {"name": "a-list", "server": "a"},
                {"name": "b-other", "server": "b"}]}"#,
        )
        .unwrap();
        let file = dir.path().join("mine.json");
        std::fs::write(
            &file,
            r#"{"catalog": "cat.json", "servers": ["a"], "queries": [
                {"id": "1", "query": "tell them", "gold_groups": [["a-send"]], "kind": "everyday"},
                {"id": "2", "query": "fly to Rome", "gold_groups": [], "kind": "near-miss"}]}"#,
        )
        .unwrap();
        let set = load_own_set(&file, dir.path()).unwrap();
        assert_eq!(set.name, "mine");
        let names: Vec<&str> = set.tools.iter().map(|t| t.tool.name.as_str()).collect();
        assert_eq!(names, ["a-send", "a-list"]);
        assert_eq!(set.queries.len(), 2);
        std::fs::write(
            &file,
            r#"{"catalog": "cat.json", "servers": ["a"], "queries": [
                {"id": "1", "query": "x", "gold_groups": [["b-other"]]}]}"#,
        )
        .unwrap();
        let e = load_own_set(&file, dir.path()).unwrap_err();
        assert!(e.contains("b-other is not among"), "{e}");
    }
}
