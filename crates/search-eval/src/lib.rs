//! search-eval: the research harness of the tool search. It ranks through the same
//! `tool_search::Index::search_hybrid` that answers `mcp_search`, over files instead of
//! upstreams.
//!
//! # Layout
//!
//! - [`eval`] (`search-eval [FLAGS]`, no subcommand): retrieval metrics (R@1, R@5, MRR,
//!   abstention, ...) of one query set with gold labels, or of every visible set at once, with
//!   per-query comparison against saved rankings (`--baseline`) and, with a model, the semantic
//!   arm and each arm alone (`--arms`).
//! - [`search`] (`search-eval search --catalog FILE QUERY`): one query's ranking of a catalog
//!   file's tools, with `--explain` for each score's parts.
//! - [`train`] (`search-eval train --embed-model DIR`): fits the hybrid search's fusion model
//!   on the licensed sets, judged leaving one set out, and writes the model file the search
//!   ships with; `train/fit.rs` holds its arithmetic (Adam on the terms, boosted trees).
//! - [`train_encoder`] (`search-eval train-encoder --embed-model DIR`): gathers the licensed
//!   training data and fine-tunes the query side of the sentence model; [`tune`] is its loop
//!   (loss over each request's whole catalog, AdamW, the learning curve). The delta it writes
//!   is what `embed` merges into the query encoder.
//! - [`sets`]: the sets a run reads, visible ones and this project's own (`data/`).
//! - [`vectors`]: the semantic arm's vectors for both, the model's kept in a cache folder
//!   between runs, or another model's vectors read from files (`--vectors`, after
//!   `--export-texts`).
//!
//! Its tests (`tests/`) hold the retrieval floors on the visible sets (`../shared/bench`).
//!
//! # Why a crate of its own
//!
//! Nothing here runs in a deployment: it reads evaluation sets and catalog files, keeps a
//! vector cache, writes rankings and texts for outside models. Kept out of the
//! `mcp-search-proxy` binary, it leaves the service's command line to what a deployment runs
//! (`serve`, `demo`, `demo-upstream`), and the harness can grow flags and tables without
//! touching or rebuilding the service. It depends only on the search (`tool-search`) and the
//! model (`embed`), the two pieces whose quality it measures.

#![forbid(unsafe_code)]

pub mod eval;
pub mod search;
pub mod sets;
pub mod train;
pub mod train_encoder;
pub mod tune;
pub mod vectors;
