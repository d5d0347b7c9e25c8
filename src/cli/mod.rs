//! Subcommands besides `serve`: `demo` (proxy + embedded upstream), `demo-upstream` (only the
//! embedded upstream, serving any catalog file: benchmarks and offline stacks), `search` and
//! `eval` (offline ranking over a catalog file, through the same code path as `mcp_search`).

pub mod demo;
pub mod eval;
pub mod search;
pub mod upstream;
pub mod vectors;
