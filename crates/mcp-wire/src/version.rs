//! Protocol versions and their negotiation.

/// The handshake-era ("legacy") versions the proxy serves, newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The version the proxy offers when it initializes an upstream, and answers to a client that
/// asks for a version it does not know.
pub const LATEST_LEGACY: &str = "2025-11-25";

/// What a client that sends no `MCP-Protocol-Version` header is assumed to speak (spec 2025-06-18).
pub const DEFAULT_HEADERLESS: &str = "2025-03-26";

/// The version a legacy server answers to a client's `initialize` request: the client's own
/// version when supported, else the newest one (the client then decides whether to proceed).
pub fn negotiate_legacy(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| LEGACY_VERSIONS.iter().find(|v| **v == r).copied())
        .unwrap_or(LATEST_LEGACY)
}

/// Whether an `MCP-Protocol-Version` header value names a legacy version this proxy serves.
pub fn is_supported_legacy(v: &str) -> bool {
    LEGACY_VERSIONS.contains(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_versions_and_falls_back_to_latest() {
        assert_eq!(negotiate_legacy(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate_legacy(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate_legacy(Some("1999-01-01")), LATEST_LEGACY);
        assert_eq!(negotiate_legacy(None), LATEST_LEGACY);
        assert!(is_supported_legacy("2025-11-25"));
        assert!(!is_supported_legacy("2026-07-28"));
    }
}

/// The protocol era a peer speaks: the 2025-era session protocol or the stateless 2026-07-28
/// revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// 2025-era handshake (`initialize`), possibly with a sticky session.
    Legacy,
    /// 2026-07-28: stateless, every request self-describing.
    Modern,
}

impl Era {
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}
