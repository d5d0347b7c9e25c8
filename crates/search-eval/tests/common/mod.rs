//! What the search-quality tests share: where the workspace and the visible sets are.

#[path = "../../../../tests/support/shared_dir.rs"]
mod shared_dir;

use std::path::PathBuf;

#[allow(unused_imports)] // each test binary uses some of them
pub use shared_dir::{shared_at, workspace_root};

/// The visible evaluation sets and catalogs (`bench` in the shared folder), or `None` (the test
/// skips, saying so) when they are absent; under `REQUIRE_SHARED=1` (CI, which has them) their
/// absence fails the test instead. Every test that reads them starts here.
pub fn bench_or_skip(test: &str) -> Option<PathBuf> {
    shared_dir::shared_or_skip("bench", test)
}
