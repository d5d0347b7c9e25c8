//! The 2026-07-28 client's side of a round, as pure functions: the `requestState` the proxy
//! seals for the client ([`seal`], [`seal_passed`]) and what the client's [`Retry`] continues
//! once that state is opened ([`open`] → [`Opened`]): an upstream's round (its answers go to
//! the upstream as the client sent them), or a call the proxy holds (a 2025 upstream asked on
//! it). The sealing itself (HMAC, claims, expiry) is `crate::request_state`'s.

use serde_json::Value;

use super::eras::RoundAnswers;
use super::timeouts::Timeouts;
use crate::request_state::{call_digest, Claims, Resume, Sealer};
use crate::tools::CallOutcome;

/// The `mcp_call` a sealed state belongs to: the tool name the client gave, the digest of
/// that name and the arguments, and the client group it is issued to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallKey {
    pub name: String,
    pub digest: String,
    pub holder: String,
}

impl CallKey {
    pub fn of(name: &str, arguments: &Value, holder: &str) -> CallKey {
        CallKey {
            digest: call_digest(name, arguments),
            name: name.to_string(),
            holder: holder.to_string(),
        }
    }
}

/// A 2026-07-28 client's retry of an `mcp_call` that needed input: its `inputResponses` and
/// the `requestState` it was given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retry {
    pub responses: Option<Value>,
    pub state: Option<String>,
}

/// What a retry continues, its `requestState` opened.
#[derive(Debug, Clone, PartialEq)]
pub enum Opened {
    /// No state: a fresh call.
    Fresh,
    /// An upstream's round: the upstream it was sealed for, and the round to continue.
    Upstream { sealed_for: String, round: RoundAnswers },
    /// A call held by this proxy, and the client's answers to its questions.
    Held { held: String, responses: Option<Value> },
    /// A state not issued by this proxy for this call and client, or expired: why.
    Refused(&'static str),
}

/// Opens a retry's `requestState` for the call `key` at `now` (Unix seconds).
pub fn open(sealer: &Sealer, key: &CallKey, retry: Retry, now: u64) -> Opened {
    let Some(state) = &retry.state else {
        return Opened::Fresh;
    };
    match sealer.open(state, &key.name, &key.digest, &key.holder, now) {
        Err(refused) => Opened::Refused(refused.message()),
        Ok(Claims {
            resume: Resume::Held { id },
            ..
        }) => Opened::Held {
            held: id,
            responses: retry.responses,
        },
        Ok(Claims {
            resume: Resume::Upstream { upstream, state },
            ..
        }) => Opened::Upstream {
            sealed_for: upstream,
            round: RoundAnswers {
                responses: retry.responses,
                state,
            },
        },
    }
}

/// The proxy's `requestState` for the call `key`, resuming at `resume`, issued at `now`: it
/// expires a question timeout later.
pub fn seal(sealer: &Sealer, key: &CallKey, resume: Resume, t: &Timeouts, now: u64) -> String {
    sealer.seal(&Claims {
        tool: key.name.clone(),
        digest: key.digest.clone(),
        holder: key.holder.clone(),
        resume,
        expires: t.state_expiry(now),
    })
}

/// A 2026-07-28 upstream's round passed through to the client: the upstream's own state
/// (`""` for none) sealed inside the proxy's. Any other outcome is returned as it is.
pub fn seal_passed(sealer: &Sealer, key: &CallKey, outcome: CallOutcome, t: &Timeouts, now: u64) -> CallOutcome {
    match outcome {
        CallOutcome::InputRequired {
            upstream,
            tool,
            requests,
            state,
        } => {
            let resume = Resume::Upstream {
                upstream: upstream.clone(),
                state: (!state.is_empty()).then_some(state),
            };
            CallOutcome::InputRequired {
                state: seal(sealer, key, resume, t, now),
                upstream,
                tool,
                requests,
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> CallKey {
        CallKey::of("a__search", &json!({"q": 1}), "group")
    }

    #[test]
    fn a_passed_round_is_sealed_and_its_retry_continues_it_upstream() {
        let sealer = Sealer::new(Some("secret"));
        let t = Timeouts::new(std::time::Duration::from_secs(60));
        let round = CallOutcome::InputRequired {
            upstream: "a".into(),
            tool: "search".into(),
            requests: json!({"k": {"method": "roots/list"}}),
            state: "upstream-state".into(),
        };
        let CallOutcome::InputRequired { state, requests, .. } = seal_passed(&sealer, &key(), round, &t, 1000) else {
            panic!("still a round")
        };
        assert_eq!(requests, json!({"k": {"method": "roots/list"}}), "the map as sent");
        let retry = Retry {
            responses: Some(json!({"k": {"roots": []}})),
            state: Some(state.clone()),
        };
        assert_eq!(
            open(&sealer, &key(), retry.clone(), 1000),
            Opened::Upstream {
                sealed_for: "a".into(),
                round: RoundAnswers {
                    responses: Some(json!({"k": {"roots": []}})),
                    state: Some("upstream-state".into()),
                },
            }
        );
        // another call, another client, or too late: refused
        let other = CallKey::of("a__search", &json!({"q": 2}), "group");
        assert!(matches!(open(&sealer, &other, retry.clone(), 1000), Opened::Refused(m) if m.contains("another call")));
        let stranger = CallKey::of("a__search", &json!({"q": 1}), "other");
        assert!(
            matches!(open(&sealer, &stranger, retry.clone(), 1000), Opened::Refused(m) if m.contains("another client"))
        );
        assert!(matches!(open(&sealer, &key(), retry, 1061), Opened::Refused(m) if m.contains("expired")));
        assert_eq!(open(&sealer, &key(), Retry::default(), 1000), Opened::Fresh);
    }

    #[test]
    fn a_held_calls_state_names_it() {
        let sealer = Sealer::new(None);
        let t = Timeouts::default();
        let state = seal(&sealer, &key(), Resume::Held { id: "h1".into() }, &t, 5);
        let retry = Retry {
            responses: None,
            state: Some(state),
        };
        assert_eq!(
            open(&sealer, &key(), retry, 5),
            Opened::Held {
                held: "h1".into(),
                responses: None
            }
        );
        let other = CallOutcome::StateRefused {
            tool: "t".into(),
            message: "m".into(),
        };
        assert!(matches!(
            seal_passed(&sealer, &key(), other, &t, 5),
            CallOutcome::StateRefused { .. }
        ));
    }
}
