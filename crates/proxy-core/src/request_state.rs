//! The proxy's own `requestState` for a 2026-07-28 `mcp_call` that needs input.
//!
//! When a tool asks its caller something, a modern client gets an `input_required` result and
//! retries the same `mcp_call` with `inputResponses` and the `requestState` it was given. That
//! state is the client's to hold, so it is **sealed**: it binds where the call resumes (an
//! upstream's own `requestState`, or a call the proxy holds for a 2025-era upstream), the
//! `mcp_call` it belongs to (tool name and a digest of its arguments) and an expiry, under an
//! HMAC-SHA256 tag, together with the client it was issued to (its token group: a state that
//! leaks does not let another group resume the call). A state that was altered, belongs to
//! another call or client, or has expired is refused with a message that says which. With the same key (`REQUEST_STATE_SECRET`) every
//! instance can verify every state: a stateless round resumes on any of them.
//!
//! Wire form: `base64url(JSON claims) "." base64url(tag)`, no padding. The claims are
//! readable by the client (they name the upstream and the tool, which the client knows);
//! an upstream's own state inside them is the upstream's business to protect.
//!
//! `hmac` + `sha2` (RustCrypto) give the MAC and its constant-time check; `base64` the text form.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Where a sealed call resumes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resume {
    /// A 2026-07-28 upstream's round: its label and its own `requestState` (if it gave one).
    Upstream { upstream: String, state: Option<String> },
    /// A call held by the proxy instance that minted this id (a 2025-era upstream waits for
    /// the answers on its open call).
    Held { id: String },
}

/// What a sealed state says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The upstream tool's name, as the `mcp_call` gave it.
    pub tool: String,
    /// [`call_digest`] of the `mcp_call`'s tool name and arguments.
    pub digest: String,
    /// The client it was issued to (its `PROXY_TOKENS` group; empty without tokens).
    pub holder: String,
    pub resume: Resume,
    /// Unix seconds after which the state is refused.
    pub expires: u64,
}

/// Why a client's `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not a state this proxy minted (bad shape, or the tag does not match: altered, or
    /// sealed under another key).
    Tampered,
    /// Sealed for another tool or other arguments.
    OtherCall,
    /// Issued to another client (token group).
    OtherClient,
    /// Past its expiry.
    Expired,
}

impl Refused {
    pub fn message(&self) -> &'static str {
        match self {
            Refused::Tampered => "requestState was not issued by this proxy (altered, truncated, or sealed under another REQUEST_STATE_SECRET); call the tool again without requestState and inputResponses",
            Refused::OtherCall => "requestState belongs to another call of the call tool (mcp_call): retry with the same name and arguments that returned it, or call again without requestState",
            Refused::OtherClient => "requestState was issued to another client (PROXY_TOKENS group); call the tool again without requestState",
            Refused::Expired => "requestState has expired (the answers came after ELICITATION_TIMEOUT_SEC); call the tool again without requestState and inputResponses",
        }
    }
}

/// Seals and opens states under one key.
#[derive(Clone)]
pub struct Sealer {
    key: [u8; 32],
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer { key: <redacted> }")
    }
}

/// States longer than this are refused unread (the claims hold at most an upstream's own
/// state, itself bounded where it is read).
/// (An upstream's state of up to 64 KiB can grow 6-fold escaped in JSON, then by a third in
/// base64.)
pub const MAX_STATE_CHARS: usize = 1024 * 1024;

impl Sealer {
    /// A key derived from a configured secret (shared by instances that must verify each
    /// other's states), or a random one of this process.
    pub fn new(secret: Option<&str>) -> Sealer {
        let key = match secret {
            Some(s) => Sha256::digest(s.as_bytes()).into(),
            None => {
                let mut k = [0u8; 32];
                if getrandom::fill(&mut k).is_err() {
                    // no OS randomness (practically never): a key from the clock and the pid,
                    // still unknown to clients
                    let nanos = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos());
                    k = Sha256::digest(format!("{nanos}:{}", std::process::id())).into();
                }
                k
            }
        };
        Sealer { key }
    }

    fn tag(&self, claims: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        mac.update(claims);
        mac
    }

    pub fn seal(&self, claims: &Claims) -> String {
        let json = serde_json::to_vec(claims).unwrap_or_default();
        let tag = self.tag(&json).finalize().into_bytes();
        format!("{}.{}", URL_SAFE_NO_PAD.encode(&json), URL_SAFE_NO_PAD.encode(tag))
    }

    /// The claims of `state`, if this key sealed it, it is for the call `(tool, digest)` of
    /// `holder`, and it has not expired at `now` (unix seconds).
    pub fn open(&self, state: &str, tool: &str, digest: &str, holder: &str, now: u64) -> Result<Claims, Refused> {
        if state.len() > MAX_STATE_CHARS {
            return Err(Refused::Tampered);
        }
        let (body, tag) = state.split_once('.').ok_or(Refused::Tampered)?;
        let json = URL_SAFE_NO_PAD.decode(body).map_err(|_| Refused::Tampered)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| Refused::Tampered)?;
        self.tag(&json).verify_slice(&tag).map_err(|_| Refused::Tampered)?;
        let claims: Claims = serde_json::from_slice(&json).map_err(|_| Refused::Tampered)?;
        if claims.tool != tool || claims.digest != digest {
            return Err(Refused::OtherCall);
        }
        if claims.holder != holder {
            return Err(Refused::OtherClient);
        }
        if claims.expires < now {
            return Err(Refused::Expired);
        }
        Ok(claims)
    }
}

/// A digest of an `mcp_call` (tool name and arguments) that does not depend on the order of
/// object members: a client that re-serialises the same arguments still matches.
pub fn call_digest(tool: &str, arguments: &Value) -> String {
    let mut h = Sha256::new();
    h.update(tool.as_bytes());
    h.update([0]);
    canonical(arguments, &mut h);
    URL_SAFE_NO_PAD.encode(h.finalize())
}

fn canonical(v: &Value, h: &mut Sha256) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            h.update(b"{");
            for k in keys {
                h.update(serde_json::to_string(k).unwrap_or_default().as_bytes());
                h.update(b":");
                canonical(&m[k], h);
                h.update(b",");
            }
            h.update(b"}");
        }
        Value::Array(a) => {
            h.update(b"[");
            for x in a {
                canonical(x, h);
                h.update(b",");
            }
            h.update(b"]");
        }
        other => h.update(other.to_string().as_bytes()),
    }
}

/// Now, in unix seconds.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(resume: Resume) -> Claims {
        Claims {
            tool: "deploy".into(),
            digest: call_digest("deploy", &json!({"env": "prod"})),
            holder: "team-a".into(),
            resume,
            expires: 1000,
        }
    }

    #[test]
    fn a_sealed_state_opens_for_its_call_until_it_expires() {
        let s = Sealer::new(Some("secret"));
        let d = call_digest("deploy", &json!({"env": "prod"}));
        for resume in [
            Resume::Upstream {
                upstream: "a".into(),
                state: Some("opaque".into()),
            },
            Resume::Upstream {
                upstream: "a".into(),
                state: None,
            },
            Resume::Held { id: "h1".into() },
        ] {
            let c = claims(resume);
            let state = s.seal(&c);
            assert_eq!(s.open(&state, "deploy", &d, "team-a", 999), Ok(c.clone()));
            assert_eq!(s.open(&state, "deploy", &d, "team-a", 1000), Ok(c.clone()));
            assert_eq!(s.open(&state, "deploy", &d, "team-a", 1001), Err(Refused::Expired));
            assert_eq!(s.open(&state, "undeploy", &d, "team-a", 0), Err(Refused::OtherCall));
            assert_eq!(s.open(&state, "deploy", &d, "team-b", 0), Err(Refused::OtherClient));
            let other = call_digest("deploy", &json!({"env": "dev"}));
            assert_eq!(s.open(&state, "deploy", &other, "team-a", 0), Err(Refused::OtherCall));
            // another instance with the same secret opens it; another secret does not
            assert_eq!(
                Sealer::new(Some("secret")).open(&state, "deploy", &d, "team-a", 0),
                Ok(c)
            );
            assert_eq!(
                Sealer::new(Some("other")).open(&state, "deploy", &d, "team-a", 0),
                Err(Refused::Tampered)
            );
            assert_eq!(
                Sealer::new(None).open(&state, "deploy", &d, "team-a", 0),
                Err(Refused::Tampered)
            );
        }
    }

    #[test]
    fn any_change_to_a_state_is_refused() {
        let s = Sealer::new(None);
        let d = call_digest("deploy", &json!({"env": "prod"}));
        let state = s.seal(&claims(Resume::Held { id: "h1".into() }));
        // every byte changed, and every cut
        for i in 0..state.len() {
            let mut b = state.clone().into_bytes();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(b).unwrap();
            if altered != state {
                assert!(s.open(&altered, "deploy", &d, "team-a", 0).is_err(), "byte {i}");
            }
            assert!(s.open(&state[..i], "deploy", &d, "team-a", 0).is_err(), "cut at {i}");
        }
        // claims re-encoded with another resume point but the old tag
        let (_, tag) = state.split_once('.').unwrap();
        let forged = serde_json::to_vec(&claims(Resume::Held { id: "h2".into() })).unwrap();
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(forged));
        assert_eq!(s.open(&forged, "deploy", &d, "team-a", 0), Err(Refused::Tampered));
        for junk in ["", ".", "a.b", "not base64!.x", &"A".repeat(MAX_STATE_CHARS + 1)] {
            assert_eq!(
                s.open(junk, "deploy", &d, "team-a", 0),
                Err(Refused::Tampered),
                "{junk:.20}"
            );
        }
    }

    #[test]
    fn the_digest_ignores_member_order_but_not_values_or_nesting() {
        let a = call_digest("t", &json!({"x": 1, "y": {"b": [1, 2], "a": "s"}}));
        let b: Value = serde_json::from_str(r#"{"y": {"a": "s", "b": [1, 2]}, "x": 1}"#).unwrap();
        assert_eq!(a, call_digest("t", &b));
        assert_ne!(a, call_digest("t", &json!({"x": 1, "y": {"b": [2, 1], "a": "s"}})));
        assert_ne!(a, call_digest("u", &json!({"x": 1, "y": {"b": [1, 2], "a": "s"}})));
        assert_ne!(call_digest("t", &json!({"a": "1"})), call_digest("t", &json!({"a": 1})));
        assert_ne!(call_digest("t", &json!(null)), call_digest("t", &json!({})));
    }
}
