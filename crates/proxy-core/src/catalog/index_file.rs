//! The search index persisted beside the manifest (`<manifest>.index`), so that a start from
//! the manifest loads the index instead of building it (the build was most of start → ready
//! with a large catalog; see docs/performance.md).
//!
//! The file is a cache, never a source of truth: it holds the build that wrote it
//! ([`build_identity`]: the executable's size and modification time), the snapshot's
//! [`index_key`](super::Snapshot::index_key) (the tools, in index order, with their
//! definitions), a SHA-256 of the payload, and the payload
//! ([`tool_search::Index::to_bytes`], which is bounds- and id-checked on load). Anything that
//! does not match (another build, other tools, a damaged file) is ignored and the index built
//! as before; the file is replaced atomically after a snapshot whose index was built.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};
use tool_search::{CorruptIndex, Index};

use super::manifest;

const MAGIC: &[u8; 8] = b"MSPIDXF1";

/// A file larger than this is not read (11,739 tools make 13 MB).
const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// Where the index of the manifest at `manifest` is kept.
pub fn path_for(manifest: &Path) -> PathBuf {
    let mut p = manifest.as_os_str().to_owned();
    p.push(".index");
    PathBuf::from(p)
}

/// This build, as far as an index file is concerned: the running executable's size and
/// modification time (a rebuilt or upgraded binary writes its own index). Empty when the
/// executable cannot be examined; no file is then read or written.
pub fn build_identity() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let Some(meta) = std::env::current_exe().ok().and_then(|p| std::fs::metadata(p).ok()) else {
            return String::new();
        };
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        format!("{}:{}:{}", env!("CARGO_PKG_VERSION"), meta.len(), mtime)
    })
}

/// The header that ties a payload to a build and a catalog.
fn header(identity: &str, key: &str) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    for part in [identity, key] {
        h.extend_from_slice(&(part.len() as u32).to_le_bytes());
        h.extend_from_slice(part.as_bytes());
    }
    h
}

/// Why an index file that exists was not used (the index is then built).
#[derive(Debug)]
pub enum IndexFileError {
    /// Larger than [`MAX_FILE_BYTES`]: not read at all.
    TooLarge { limit: u64 },
    /// The file could not be examined or read.
    Io { path: PathBuf, source: std::io::Error },
    /// Its header names another build or other tools.
    OtherBuildOrTools,
    /// It ends before its checksum.
    CutShort,
    /// The payload does not match its checksum.
    Checksum,
    /// The payload passed its checksum but is not an index this build reads.
    Corrupt(CorruptIndex),
}

impl std::fmt::Display for IndexFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLarge { limit } => write!(f, "larger than the {limit}-byte limit"),
            Self::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::OtherBuildOrTools => f.write_str("written by another build or for other tools"),
            Self::CutShort => f.write_str("cut short"),
            Self::Checksum => f.write_str("damaged (checksum)"),
            Self::Corrupt(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for IndexFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Corrupt(e) => Some(e),
            _ => None,
        }
    }
}

/// The index kept beside the manifest at `manifest` if it was written by `identity` for
/// `key` and is intact; `Err` says why a file that exists was not used.
pub fn load(manifest: &Path, identity: &str, key: &str) -> Result<Option<Index>, IndexFileError> {
    if identity.is_empty() {
        return Ok(None);
    }
    let path = &path_for(manifest);
    let io = |source| IndexFileError::Io {
        path: path.clone(),
        source,
    };
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_FILE_BYTES => {
            return Err(IndexFileError::TooLarge { limit: MAX_FILE_BYTES });
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    }
    let bytes = std::fs::read(path).map_err(io)?;
    let head = header(identity, key);
    let Some(rest) = bytes.strip_prefix(head.as_slice()) else {
        return Err(IndexFileError::OtherBuildOrTools);
    };
    let Some((digest, payload)) = rest.split_first_chunk::<32>() else {
        return Err(IndexFileError::CutShort);
    };
    if Sha256::digest(payload).as_slice() != digest {
        return Err(IndexFileError::Checksum);
    }
    Index::from_bytes(payload).map(Some).map_err(IndexFileError::Corrupt)
}

/// Writes `index` for `identity` and `key` beside the manifest at `manifest`, atomically
/// (the manifest's own writer: see [`manifest::store_beside`]).
pub fn store(manifest: &Path, identity: &str, key: &str, index: &Index) -> std::io::Result<()> {
    if identity.is_empty() {
        return Ok(());
    }
    let payload = index.to_bytes();
    let digest = Sha256::digest(&payload);
    manifest::store_beside(manifest, &path_for(manifest), ".index.", |w| {
        w.write_all(&header(identity, key))?;
        w.write_all(&digest)?;
        w.write_all(&payload)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Snapshot, UpstreamState};
    use mcp_wire::types::Tool;

    fn snapshot(names: &[&str]) -> Snapshot {
        let tools = names
            .iter()
            .map(|n| {
                let t: Tool =
                    serde_json::from_value(serde_json::json!({"name": n, "description": format!("does {n}")})).unwrap();
                std::sync::Arc::new(t)
            })
            .collect();
        let state = UpstreamState {
            label: "u".into(),
            url: "http://u/mcp".into(),
            tools,
            ..Default::default()
        };
        Snapshot::build(vec![state], 1, &Default::default())
    }

    #[test]
    fn an_index_is_loaded_only_by_its_build_for_its_tools() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("manifest.json");
        let path = path_for(&manifest);
        assert!(path.ends_with("manifest.json.index"));
        let s = snapshot(&["send_email", "list_files"]);
        assert!(s.index_built);
        assert!(load(&manifest, "b1", &s.index_key).unwrap().is_none(), "no file yet");
        store(&manifest, "b1", &s.index_key, &s.index).unwrap();
        let loaded = load(&manifest, "b1", &s.index_key).unwrap().expect("loaded");
        assert_eq!(loaded.to_bytes(), s.index.to_bytes());
        assert!(load(&manifest, "b2", &s.index_key).is_err(), "another build");
        let other = snapshot(&["list_files", "send_email"]);
        assert_ne!(other.index_key, s.index_key, "the order is part of the key");
        assert!(load(&manifest, "b1", &other.index_key).is_err(), "other tools");
        assert!(
            load(&manifest, "", &s.index_key).unwrap().is_none(),
            "no identity, no file"
        );

        // A snapshot built with a loader takes the loaded index and does not ask to persist it.
        let states = s.upstreams.clone();
        let again = Snapshot::build_loading(states, 2, &Default::default(), &|key| {
            load(&manifest, "b1", key).ok().flatten()
        });
        assert!(!again.index_built);
        assert_eq!(again.index.to_bytes(), s.index.to_bytes());
        assert_eq!(again.index.search("send an email", 3).first().map(|h| h.doc), Some(0));

        // Damage anywhere is refused (the checksum covers the payload).
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let e = load(&manifest, "b1", &s.index_key).unwrap_err();
        assert!(matches!(e, IndexFileError::Checksum));
        assert_eq!(e.to_string(), "damaged (checksum)");
        std::fs::write(&path, &bytes[..20]).unwrap();
        assert!(load(&manifest, "b1", &s.index_key).is_err());
    }
}
