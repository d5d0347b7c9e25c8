//! Subcommands besides `serve`: `demo` (proxy + embedded upstream) and `demo-upstream` (only the
//! embedded upstream, serving any catalog file: benchmarks and offline stacks). The offline
//! `search` and `eval` are the `search-eval` crate's binary.

pub mod demo;
pub mod upstream;
