//! Search hits' parameter lines on a real catalog: every tool of `deployment.json` (557 real
//! MCP tools) gets a line within the budget, every required parameter is named unless the line
//! had to be cut, and nested objects are summarised, never written out whole.
//!
//! Skips with a message when `../shared/bench` is absent (`SHARED_DIR` names another folder),
//! unless `REQUIRE_SHARED=1` (CI), where that fails.

#[path = "../../../tests/support/shared_dir.rs"]
mod shared_dir;

use proxy_core::tools::signature::{signature, SIGNATURE_CHARS};
use tool_search::catalog_file::load_catalog_path;

#[test]
fn every_deployment_tool_gets_a_line_within_the_budget() {
    let test = "every_deployment_tool_gets_a_line_within_the_budget";
    let Some(path) = shared_dir::shared_or_skip("bench/catalogs/deployment.json", test) else {
        return;
    };
    let tools = load_catalog_path(&path).expect("the catalog loads");
    assert_eq!(tools.len(), 557);
    let (mut whole, mut fewer_optional, mut cut, mut objects) = (0, 0, 0, 0);
    for t in &tools {
        let schema = t.tool.input_schema();
        let line = signature(&schema);
        let length = line.chars().count();
        assert!(
            length <= SIGNATURE_CHARS,
            "{}: {length} characters: {line}",
            t.tool.name
        );
        if line.ends_with('…') {
            cut += 1;
        } else {
            for required in t.tool.required_params() {
                assert!(
                    line.contains(&format!("{required}: ")),
                    "{}: required `{required}` missing from {line}",
                    t.tool.name
                );
            }
            if line.contains(" optional") {
                fewer_optional += 1;
            } else {
                whole += 1;
            }
        }
        // a summarised object names its properties, one level deep, never a nested brace
        for part in line.split('{').skip(1) {
            objects += 1;
            let inside = part.split('}').next().unwrap_or_default();
            assert!(
                !inside.contains(':'),
                "{}: an object written out whole: {line}",
                t.tool.name
            );
        }
    }
    eprintln!(
        "{} tools: {whole} whole, {fewer_optional} without some optional parameters, {cut} cut; {objects} objects summarised",
        tools.len()
    );
    assert!(whole >= tools.len() * 8 / 10, "most tools fit whole ({whole})");
    assert!(cut <= tools.len() / 50, "few lines are cut ({cut})");
    assert!(objects > 0, "the catalog's nested objects are summarised");
}
