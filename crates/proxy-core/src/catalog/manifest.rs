//! The manifest: the last good catalog on disk, so search works before any upstream answers.
//!
//! Written atomically (temp file in the same directory, fsync, rename, fsync of the
//! directory): a crash mid-write leaves the previous manifest intact, never a torn one; the
//! temp files such crashes leave behind are removed at the next start
//! ([`remove_stale_temp_files`]).
//!
//! Upstream URLs are stored redacted ([`crate::redact::url`]): a credential in a URL never
//! reaches the disk. Upstreams are matched to their entries by the redacted URL, then by label.
//! Tools loaded from a manifest pass the same admission as a listing ([`super::ingest`]), so a
//! manifest written by an older version cannot bring in what a refresh would refuse.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::snapshot::{Snapshot, UpstreamState};
use mcp_wire::types::Tool;

pub const FORMAT: &str = "mcp-search-proxy/manifest@1";

#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub fingerprint: String,
    pub written_at_ms: u64,
    pub upstreams: Vec<ManifestUpstream>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ManifestUpstream {
    pub label: String,
    pub url: String,
    #[serde(default)]
    pub listed_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The era the upstream spoke (a hint that spares the discovery probe at the next start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub era: Option<mcp_wire::Era>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Schema hash per tool name (the change journal compares against these).
    #[serde(default)]
    pub hashes: std::collections::BTreeMap<String, String>,
    pub tools: Vec<std::sync::Arc<Tool>>,
}

impl Manifest {
    pub fn from_snapshot(s: &Snapshot, now_ms: u64) -> Manifest {
        Manifest {
            format: FORMAT.into(),
            fingerprint: s.fingerprint.clone(),
            written_at_ms: now_ms,
            upstreams: s
                .upstreams
                .iter()
                .map(|u| ManifestUpstream {
                    label: u.label.clone(),
                    url: crate::redact::url(&u.url),
                    listed_at_ms: u.listed_at_ms,
                    instructions: u.instructions.clone(),
                    era: u.era,
                    protocol_version: u.protocol_version.clone(),
                    ttl_ms: u.ttl_ms,
                    hashes: u
                        .tools
                        .iter()
                        .map(|t| (t.name.clone(), super::snapshot::tool_hash(t)))
                        .collect(),
                    tools: u.tools.clone(),
                })
                .collect(),
        }
    }

    /// The era recorded for the upstream at `url`, if any.
    pub fn era_of(&self, url: &str) -> Option<mcp_wire::Era> {
        let url = crate::redact::url(url);
        self.upstreams.iter().find(|u| u.url == url).and_then(|u| u.era)
    }

    /// Upstream states for the configured upstreams, matched by URL (then by label); entries
    /// for upstreams no longer configured are dropped, since their tools could not be routed.
    pub fn into_states(self, configured: &[(String, String)]) -> Vec<UpstreamState> {
        let mut entries = self.upstreams;
        configured
            .iter()
            .map(|(label, url)| {
                let redacted = crate::redact::url(url);
                let pos = entries
                    .iter()
                    .position(|e| e.url == redacted)
                    .or_else(|| entries.iter().position(|e| &e.label == label));
                match pos {
                    Some(i) => {
                        let e = entries.swap_remove(i);
                        // Hashes this proxy wrote spare re-hashing every tool at start.
                        for t in &e.tools {
                            if let Some(h) = e.hashes.get(&t.name).and_then(|h| u64::from_str_radix(h, 16).ok()) {
                                t.set_known_hash(h);
                            }
                        }
                        let (tools, _) = super::ingest::admit(label, e.tools);
                        UpstreamState {
                            label: label.clone(),
                            url: url.clone(),
                            tools,
                            listed_at_ms: e.listed_at_ms,
                            instructions: e.instructions.as_deref().map(super::ingest::admit_instructions),
                            era: e.era,
                            protocol_version: e.protocol_version,
                            ttl_ms: e.ttl_ms,
                            ..Default::default()
                        }
                    }
                    None => UpstreamState {
                        label: label.clone(),
                        url: url.clone(),
                        ..Default::default()
                    },
                }
            })
            .collect()
    }
}

/// Why a manifest file was not used (the catalog then starts empty).
#[derive(Debug)]
pub enum ManifestError {
    /// The file exists but could not be read.
    Io { path: PathBuf, source: std::io::Error },
    /// The file is not a manifest's JSON.
    Invalid { path: PathBuf, source: serde_json::Error },
    /// The file is a manifest of another format.
    Format { path: PathBuf, found: String },
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::Invalid { path, source } => write!(f, "{} is not a valid manifest: {source}", path.display()),
            Self::Format { path, found } => {
                write!(f, "{} has format {found:?}, expected {FORMAT:?}", path.display())
            }
        }
    }
}

impl std::error::Error for ManifestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Invalid { source, .. } => Some(source),
            Self::Format { .. } => None,
        }
    }
}

/// Reads a manifest; `Ok(None)` when the file does not exist.
pub fn load(path: &Path) -> Result<Option<Manifest>, ManifestError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ManifestError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let m: Manifest = serde_json::from_slice(&bytes).map_err(|source| ManifestError::Invalid {
        path: path.to_path_buf(),
        source,
    })?;
    if m.format != FORMAT {
        return Err(ManifestError::Format {
            path: path.to_path_buf(),
            found: m.format,
        });
    }
    Ok(Some(m))
}

/// The directory of the manifest and the prefix of its temp files (`.manifest.json.tmp`).
fn temp_prefix(path: &Path) -> (std::path::PathBuf, String) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("manifest.json");
    (dir, format!(".{file_name}.tmp"))
}

/// Removes the temp files that writes interrupted by a crash left beside the manifest; returns
/// how many. Called once at start, before this process writes any (one process per manifest).
pub fn remove_stale_temp_files(path: &Path) -> usize {
    let (dir, prefix) = temp_prefix(path);
    let Ok(entries) = std::fs::read_dir(&dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

/// Writes a manifest atomically.
pub fn store(path: &Path, manifest: &Manifest) -> std::io::Result<()> {
    // Streamed: an 11k-tool manifest is ~18 MB that need not exist in memory at once.
    store_beside(path, path, "", |w| {
        serde_json::to_writer(w, manifest).map_err(std::io::Error::other)
    })
}

/// Writes `path` (the manifest at `manifest`, or a file kept beside it) atomically: into a
/// temp file under the manifest's temp prefix (`tag` tells the files apart; an interrupted
/// write is swept at start by [`remove_stale_temp_files`]), synced, renamed over `path`, the
/// directory synced.
pub(crate) fn store_beside(
    manifest: &Path,
    path: &Path,
    tag: &str,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let (dir, prefix) = temp_prefix(manifest);
    std::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!("{prefix}{tag}{}", std::process::id()));
    let result = (|| {
        let mut w = std::io::BufWriter::with_capacity(256 * 1024, std::fs::File::create(&tmp)?);
        write(&mut w)?;
        w.flush()?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    }

    #[test]
    fn round_trips_and_matches_configured_upstreams() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/manifest.json");
        let states = vec![
            UpstreamState {
                label: "a".into(),
                url: "http://a/mcp".into(),
                tools: vec![tool("t1").into()],
                listed_at_ms: Some(5),
                ..Default::default()
            },
            UpstreamState {
                label: "b".into(),
                url: "http://b/mcp".into(),
                tools: vec![tool("t2").into()],
                ..Default::default()
            },
        ];
        let snap = Snapshot::build(states, 1, &Default::default());
        store(&path, &Manifest::from_snapshot(&snap, 42)).unwrap();
        let m = load(&path).unwrap().unwrap();
        assert_eq!(m.fingerprint, snap.fingerprint);
        assert_eq!(m.upstreams[0].hashes.len(), 1);
        // "a" renamed but same URL, "b" removed, "c" new.
        let configured = vec![
            ("a2".to_string(), "http://a/mcp".to_string()),
            ("c".to_string(), "http://c/mcp".to_string()),
        ];
        let st = m.into_states(&configured);
        assert_eq!(st[0].label, "a2");
        assert_eq!(st[0].tools.len(), 1);
        assert_eq!(st[0].listed_at_ms, Some(5));
        assert!(st[1].tools.is_empty());
        let rebuilt = Snapshot::build(st, 2, &Default::default());
        assert_eq!(rebuilt.tools.len(), 1);
    }

    #[test]
    fn credentials_in_urls_are_not_stored_and_entries_still_match() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        let url = "http://user:hunter2@h/mcp?api_key=sk-secret";
        let states = vec![UpstreamState {
            label: "a".into(),
            url: url.into(),
            tools: vec![tool("t1").into()],
            era: Some(mcp_wire::Era::Legacy),
            ..Default::default()
        }];
        let snap = Snapshot::build(states, 1, &Default::default());
        store(&path, &Manifest::from_snapshot(&snap, 1)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("hunter2") && !text.contains("sk-secret"), "{text}");
        let m = load(&path).unwrap().unwrap();
        assert_eq!(m.era_of(url), Some(mcp_wire::Era::Legacy));
        let st = m.into_states(&[("renamed".to_string(), url.to_string())]);
        assert_eq!(st[0].tools.len(), 1);
        assert_eq!(st[0].url, url, "the state keeps the configured URL");
    }

    #[test]
    fn stale_temp_files_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        std::fs::write(dir.path().join(".manifest.json.tmp123"), b"{half").unwrap();
        std::fs::write(dir.path().join(".manifest.json.tmp9"), b"").unwrap();
        std::fs::write(dir.path().join("other.json"), b"{}").unwrap();
        std::fs::write(&path, b"{}").unwrap();
        assert_eq!(remove_stale_temp_files(&path), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["manifest.json", "other.json"]);
    }

    #[test]
    fn tools_from_a_manifest_pass_admission() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        let states = vec![UpstreamState {
            label: "a".into(),
            url: "http://a/mcp".into(),
            tools: vec![tool("good").into(), tool("bad\u{1b}name").into()],
            ..Default::default()
        }];
        let snap = Snapshot::build(states, 1, &Default::default());
        store(&path, &Manifest::from_snapshot(&snap, 1)).unwrap();
        let st = load(&path)
            .unwrap()
            .unwrap()
            .into_states(&[("a".into(), "http://a/mcp".into())]);
        let names: Vec<&str> = st[0].tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["good"]);
    }

    #[test]
    fn missing_file_is_none_and_garbage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(&dir.path().join("nope.json")).unwrap().is_none());
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, b"{not json").unwrap();
        assert!(load(&bad).is_err());
    }
}
