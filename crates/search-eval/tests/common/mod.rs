//! What the search-quality tests share: where the workspace and the visible sets are.

use std::path::{Path, PathBuf};

/// The workspace root (this crate is `crates/search-eval`).
pub fn workspace_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir.ancestors().nth(2).unwrap_or(crate_dir).to_path_buf()
}

/// The visible evaluation sets and catalogs, `../shared/bench` beside the workspace, or `None`
/// (the test skips) when they are absent; under `REQUIRE_PEERS=1` (CI, which has them) their
/// absence fails the test instead. Every test that reads them starts here.
pub fn bench_or_skip(test: &str) -> Option<PathBuf> {
    let required = std::env::var("REQUIRE_PEERS").as_deref() == Ok("1");
    bench_at(&workspace_root().join("../shared/bench"), required, test)
}

/// [`bench_or_skip`] for the folder `dir`.
pub fn bench_at(dir: &Path, required: bool, test: &str) -> Option<PathBuf> {
    if dir.is_dir() {
        return Some(dir.to_path_buf());
    }
    assert!(
        !required,
        "{test}: no evaluation sets at {} but REQUIRE_PEERS=1",
        dir.display()
    );
    eprintln!("skipping {test}: no evaluation sets at {}", dir.display());
    None
}
