//! Where the tests find `../shared` (the benchmark catalogs and evaluation sets), and how a
//! test that needs it skips on a clone that has none.
//!
//! One file, included with `#[path]` by every test tree that reads `../shared` (the root
//! crate's `tests/common`, `crates/search-eval/tests/common`, `benches/search.rs`), so the rule
//! is written once:
//!
//! - `SHARED_DIR` names the folder; unset, it is `../shared` beside the workspace.
//! - A missing file skips the test: one line on stderr naming the test, the path and why, and
//!   the same line appended to the file `SHARED_SKIP_LOG` names (`scripts/test.sh` counts them).
//! - `REQUIRE_SHARED=1` (set by `.ci/run`; CI always has `../shared`) turns the skip into a
//!   failure. `REQUIRE_PEERS` does not: a user's clone has every peer `scripts/test.sh`
//!   installs, but never `../shared`.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// The workspace root: the nearest ancestor of the including crate with a `Cargo.lock`.
pub fn workspace_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or(crate_dir)
        .to_path_buf()
}

/// The shared folder: `SHARED_DIR`, else `../shared` beside the workspace.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("SHARED_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace_root().join("../shared"),
    }
}

/// True when `REQUIRE_SHARED=1`: a missing shared file fails the test instead of skipping it.
pub fn shared_required() -> bool {
    std::env::var("REQUIRE_SHARED").as_deref() == Ok("1")
}

/// `relative` inside the shared folder (a file or a folder) when it exists; otherwise `None`
/// after saying that `test` skipped, or a panic under `REQUIRE_SHARED=1`.
pub fn shared_or_skip(relative: &str, test: &str) -> Option<PathBuf> {
    match shared_at(&shared_dir(), relative, shared_required(), test) {
        Ok(path) => Some(path),
        Err(skip) => {
            record_skip(&skip);
            None
        }
    }
}

/// `relative` inside `shared` when it exists; else the line that says `test` skips (a panic
/// when `required`).
pub fn shared_at(shared: &Path, relative: &str, required: bool, test: &str) -> Result<PathBuf, String> {
    let path = shared.join(relative);
    if path.exists() {
        return Ok(path);
    }
    assert!(
        !required,
        "{test}: {} is missing and REQUIRE_SHARED=1 (CI must have ../shared)",
        path.display()
    );
    Err(format!(
        "skipped {test}: needs {} (no ../shared on this clone; SHARED_DIR names another)",
        path.display()
    ))
}

/// Says a skip on stderr and, when `SHARED_SKIP_LOG` names a file, appends it there (one
/// line, one write: tests of one binary run on several threads).
fn record_skip(line: &str) {
    eprintln!("{line}");
    let Some(log) = std::env::var_os("SHARED_SKIP_LOG").filter(|l| !l.is_empty()) else {
        return;
    };
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()));
    if let Err(e) = appended {
        eprintln!("could not record the skip in {}: {e}", PathBuf::from(log).display());
    }
}
