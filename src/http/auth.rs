//! Inbound authentication: `Authorization: Bearer <token>` against `PROXY_TOKENS`.
//!
//! The proxy holds every upstream credential, so whoever can call it can use them: with
//! tokens configured, every `/mcp` request must present one (`/healthz` and `/readyz` stay
//! open for probes). Tokens are compared as SHA-256 digests, every configured token each time
//! and without an early exit, so the time taken says nothing about how much of a token was
//! right nor which one. A match yields the client's group name, which logs carry; the token
//! itself is never logged.

use sha2::{Digest, Sha256};

use crate::config::ClientToken;

/// The configured tokens, as digests.
#[derive(Clone, Default)]
pub struct Authenticator {
    entries: Vec<([u8; 32], String)>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let groups: Vec<&str> = self.entries.iter().map(|(_, g)| g.as_str()).collect();
        f.debug_struct("Authenticator").field("groups", &groups).finish()
    }
}

/// Why a request was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A bearer token that matches no configured token.
    Invalid,
}

impl Authenticator {
    pub fn new(tokens: &[ClientToken]) -> Authenticator {
        Authenticator {
            entries: tokens.iter().map(|t| (digest(&t.token), t.group.clone())).collect(),
        }
    }

    /// Whether any token is configured (else every request is let in).
    pub fn enabled(&self) -> bool {
        !self.entries.is_empty()
    }

    /// The group of the client presenting `authorization` (the header's value), or why not.
    /// `Ok(None)` when authentication is off.
    pub fn check(&self, authorization: Option<&[u8]>) -> Result<Option<&str>, Refusal> {
        if !self.enabled() {
            return Ok(None);
        }
        let value = authorization.ok_or(Refusal::Missing)?;
        let token = bearer(value).ok_or(Refusal::Missing)?;
        let presented = digest_bytes(token);
        let mut found: Option<&str> = None;
        for (d, group) in &self.entries {
            // Constant time over the digest; no early exit over the entries.
            let same = d.iter().zip(presented.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
            if same && found.is_none() {
                found = Some(group.as_str());
            }
        }
        found.map(Some).ok_or(Refusal::Invalid)
    }
}

/// The token of a `Bearer` authorization value (scheme case-insensitive).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let value = value.trim_ascii();
    if value.len() < 7 || !value[..7].eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = value[7..].trim_ascii();
    (!token.is_empty()).then_some(token)
}

fn digest(token: &str) -> [u8; 32] {
    digest_bytes(token.as_bytes())
}

fn digest_bytes(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> Authenticator {
        Authenticator::new(&[
            ClientToken {
                group: "team-a".into(),
                token: "a-very-long-token-0001".into(),
            },
            ClientToken {
                group: "team-b".into(),
                token: "b-very-long-token-0002".into(),
            },
        ])
    }

    #[test]
    fn a_valid_token_names_its_group() {
        let a = auth();
        assert_eq!(a.check(Some(b"Bearer a-very-long-token-0001")), Ok(Some("team-a")));
        assert_eq!(a.check(Some(b"bearer  b-very-long-token-0002 ")), Ok(Some("team-b")));
    }

    #[test]
    fn missing_malformed_and_wrong_tokens_are_refused() {
        let a = auth();
        assert_eq!(a.check(None), Err(Refusal::Missing));
        assert_eq!(a.check(Some(b"Basic dXNlcjpwYXNz")), Err(Refusal::Missing));
        assert_eq!(a.check(Some(b"Bearer ")), Err(Refusal::Missing));
        assert_eq!(a.check(Some(b"Bearer a-very-long-token-000")), Err(Refusal::Invalid));
        assert_eq!(a.check(Some(b"Bearer a-very-long-token-00011")), Err(Refusal::Invalid));
    }

    #[test]
    fn without_tokens_everyone_is_let_in() {
        assert_eq!(Authenticator::default().check(None), Ok(None));
        assert!(!format!("{:?}", auth()).contains("token-0001"));
    }
}
