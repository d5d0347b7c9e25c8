//! The era-pair translations, as pure functions: how a question arrives (a 2025 upstream's
//! request on the call's stream, a 2026-07-28 upstream's `input_required` [`Round`]), how the
//! upstream is told what the client can be asked ([`upstream_meta`]) and how it gets its
//! answer back ([`upstream_response`], [`RoundAnswers`]); and, on the client's side, the
//! round a 2026-07-28 client is given ([`input_requests`]) and the answers its retry carries
//! ([`answer_in_retry`]). Framing for a 2025-era client's stream is the HTTP layer's (the
//! wire); the reason a question is withdrawn there is [`Withdrawal`].

use serde_json::{json, Map, Value};

use mcp_wire::asks::{self, Askable};
use mcp_wire::modern;
use mcp_wire::raw::RawObject;

use super::question::{Answer, Decline, Keyed, Question};
use super::timeouts::Timeouts;

/// The log level a 2026-07-28 upstream is asked for on a 2025-era client's streamed call:
/// everything, as a 2025 server sends before any `logging/setLevel`.
pub const LEGACY_LOG_LEVEL: &str = "debug";

/// A request an upstream sent on a call's stream (`elicitation/create`,
/// `sampling/createMessage`, `roots/list`, `ping`, …): a message with a method and a string
/// or number id.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamRequest {
    pub id: Value,
    pub question: Question,
}

impl UpstreamRequest {
    /// `None` for notifications, responses and malformed ids.
    pub fn read(v: &Value) -> Option<UpstreamRequest> {
        let method = v.get("method")?.as_str()?;
        let id = v.get("id").filter(|id| id.is_string() || id.is_number())?;
        Some(UpstreamRequest {
            id: id.clone(),
            question: Question::new(method, v.get("params").cloned()),
        })
    }
}

/// The response a 2025 upstream gets for its request `id`: the client's result, or an error
/// saying why there is none.
pub fn upstream_response(id: &Value, answer: Answer, t: &Timeouts) -> Value {
    match answer {
        Answer::Result(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        other => json!({"jsonrpc": "2.0", "id": id, "error": other.error(t)}),
    }
}

/// The modern `_meta` envelope keys that describe the call's client to a 2026-07-28
/// upstream: what it can be asked, and its log level opt-in. Empty for a client that
/// declared neither (the proxy's own defaults then say the same, at no cost per call).
pub fn upstream_meta(askable: Askable, log_level: Option<&str>) -> Map<String, Value> {
    let mut m = Map::new();
    if askable.is_empty() && log_level.is_none() {
        return m;
    }
    m.insert(modern::META_CLIENT_CAPABILITIES.into(), askable.capabilities());
    if let Some(level) = log_level {
        m.insert(modern::META_LOG_LEVEL.into(), Value::from(level));
    }
    m
}

/// A 2026-07-28 `input_required` result, read once where it arrives (the upstream actor):
/// its `inputRequests` map as the upstream sent it, and its `requestState`.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub requests: Map<String, Value>,
    pub state: Option<String>,
}

/// An upstream `requestState` longer than the proxy carries ([`asks::MAX_UPSTREAM_STATE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateTooLong(pub usize);

impl std::fmt::Display for StateTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "input_required requestState is {} bytes, longer than the proxy's {}-byte limit",
            self.0,
            asks::MAX_UPSTREAM_STATE
        )
    }
}

impl Round {
    /// The round `result` is (`None` for any other result). The one parse of a round.
    pub fn read(result: &RawObject) -> Option<Result<Round, StateTooLong>> {
        let (requests, state) = asks::input_round(result)?;
        if let Some(s) = &state {
            if s.len() > asks::MAX_UPSTREAM_STATE {
                return Some(Err(StateTooLong(s.len())));
            }
        }
        Some(Ok(Round { requests, state }))
    }

    /// Its questions, keyed, in the map's order; entries without a string `method` are
    /// skipped (a pass-through round still carries them, as sent).
    pub fn questions(&self) -> Vec<Keyed<Question>> {
        self.requests
            .iter()
            .filter_map(|(key, r)| {
                Some(Keyed {
                    key: key.clone(),
                    item: Question::new(r.get("method")?.as_str()?, r.get("params").cloned()),
                })
            })
            .collect()
    }

    /// The next round's answers, from one answer per question (in order): the results under
    /// their keys, and the upstream's state. The first question without a result ends the
    /// call ([`Unanswered`]).
    pub fn answered(
        self,
        questions: Vec<Keyed<Question>>,
        answers: Vec<Answer>,
        t: &Timeouts,
    ) -> Result<RoundAnswers, Unanswered> {
        let mut responses = Map::new();
        for (q, answer) in questions.into_iter().zip(answers) {
            match answer {
                Answer::Result(v) => {
                    responses.insert(q.key, v);
                }
                other => {
                    return Err(Unanswered {
                        method: q.item.method.as_str().to_string(),
                        why: other.why(t),
                    })
                }
            }
        }
        Ok(RoundAnswers {
            responses: (!responses.is_empty()).then_some(Value::Object(responses)),
            state: self.state,
        })
    }
}

/// A question of a round the client did not answer: its method, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unanswered {
    pub method: String,
    pub why: String,
}

/// What a 2026-07-28 upstream's next round carries: the answers (`inputResponses`) and its
/// own `requestState`. From the proxy's own asking ([`Round::answered`]), or a 2026-07-28
/// client's retry (its `inputResponses` as sent, the state unsealed).
#[derive(Debug, Clone, PartialEq)]
pub struct RoundAnswers {
    pub responses: Option<Value>,
    pub state: Option<String>,
}

impl RoundAnswers {
    /// Puts them in a `tools/call`'s params, in place of an earlier round's.
    pub fn apply(self, params: &mut Map<String, Value>) {
        params.remove("inputResponses");
        params.remove("requestState");
        if let Some(responses) = self.responses {
            params.insert("inputResponses".into(), responses);
        }
        if let Some(state) = self.state {
            params.insert("requestState".into(), Value::from(state));
        }
    }
}

/// The `inputRequests` map a 2026-07-28 client is given for questions the proxy asks it
/// (a 2025 upstream's, on a held call).
pub fn input_requests<'a>(questions: impl IntoIterator<Item = (&'a str, &'a Question)>) -> Value {
    let map: Map<String, Value> = questions
        .into_iter()
        .map(|(key, q)| {
            let mut r = Map::new();
            r.insert("method".into(), Value::from(q.method.as_str()));
            if let Some(p) = &q.params {
                r.insert("params".into(), p.clone());
            }
            (key.to_string(), Value::Object(r))
        })
        .collect();
    Value::Object(map)
}

/// The answer a 2026-07-28 client's retry carries for the question under `key`.
pub fn answer_in_retry(responses: &Map<String, Value>, key: &str) -> Answer {
    match responses.get(key) {
        Some(answer) => Answer::Result(answer.clone()),
        None => Answer::Declined(Decline::NoAnswerInRetry { key: key.to_string() }),
    }
}

/// Why a question posed on a 2025-era client's stream was withdrawn (the client gets
/// `notifications/cancelled` with this reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withdrawal {
    CallEnded,
    SessionEnded,
    TimedOut,
}

impl Withdrawal {
    pub fn reason(self) -> &'static str {
        match self {
            Withdrawal::CallEnded => "the tool's call ended before the answer came",
            Withdrawal::SessionEnded => "the client's session ended",
            Withdrawal::TimedOut => "no answer within ELICITATION_TIMEOUT_SEC",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_wire::jsonrpc::RpcError;

    fn raw(v: Value) -> RawObject {
        RawObject::parse(&v.to_string()).unwrap()
    }

    #[test]
    fn an_input_required_result_gives_its_questions_and_state() {
        let r = raw(
            json!({"resultType": "input_required", "requestState": "s", "inputRequests": {
                "b": {"method": "sampling/createMessage", "params": {"maxTokens": 3}},
                "a": {"method": "elicitation/create"},
                "bad": {"params": {}},
            }}),
        );
        let round = Round::read(&r).unwrap().unwrap();
        assert_eq!(round.state.as_deref(), Some("s"));
        assert_eq!(round.requests.len(), 3, "the map as sent");
        let questions = round.questions();
        let methods: Vec<(&str, &str)> = questions
            .iter()
            .map(|q| (q.key.as_str(), q.item.method.as_str()))
            .collect();
        assert_eq!(methods, [("b", "sampling/createMessage"), ("a", "elicitation/create")]);
        assert_eq!(questions[0].item.params, Some(json!({"maxTokens": 3})));
        let empty = Round::read(&raw(json!({"resultType": "input_required"})))
            .unwrap()
            .unwrap();
        assert!(empty.questions().is_empty() && empty.state.is_none());
        for v in [
            json!({"resultType": "complete", "content": []}),
            json!({"content": [], "inputRequests": {"a": {"method": "roots/list"}}}),
            json!({"resultType": 5}),
        ] {
            assert_eq!(Round::read(&raw(v.clone())), None, "{v}");
        }
        let many: Map<String, Value> = (0..1000)
            .map(|i| (format!("k{i}"), json!({"method": "roots/list"})))
            .collect();
        let r = raw(json!({"resultType": "input_required", "inputRequests": many}));
        assert_eq!(
            Round::read(&r).unwrap().unwrap().questions().len(),
            1000,
            "all read: more than 16 fail the call"
        );
    }

    #[test]
    fn an_upstream_state_too_long_is_refused_where_it_is_read() {
        let long = "x".repeat(asks::MAX_UPSTREAM_STATE + 1);
        let r = raw(json!({"resultType": "input_required", "requestState": long}));
        let e = Round::read(&r).unwrap().unwrap_err();
        assert!(
            e.to_string().contains("longer than the proxy's 65536-byte limit"),
            "{e}"
        );
    }

    #[test]
    fn a_rounds_answers_go_under_their_keys_or_end_the_call() {
        let t = Timeouts::default();
        let round = Round {
            requests: Map::new(),
            state: Some("s".into()),
        };
        let qs = vec![
            Keyed {
                key: "a".into(),
                item: Question::new(asks::ROOTS, None),
            },
            Keyed {
                key: "b".into(),
                item: Question::new(asks::ELICIT, None),
            },
        ];
        let next = round
            .clone()
            .answered(qs.clone(), vec![Answer::Result(json!(1)), Answer::Result(json!(2))], &t)
            .unwrap();
        assert_eq!(next.responses, Some(json!({"a": 1, "b": 2})));
        assert_eq!(next.state.as_deref(), Some("s"));
        let mut params = json!({"name": "t", "inputResponses": {}, "requestState": "old"});
        next.apply(params.as_object_mut().unwrap());
        assert_eq!(
            params,
            json!({"name": "t", "inputResponses": {"a": 1, "b": 2}, "requestState": "s"})
        );
        let e = round
            .answered(qs, vec![Answer::Result(json!(1)), Answer::TimedOut], &t)
            .unwrap_err();
        assert_eq!(e.method, asks::ELICIT);
        assert!(e.why.contains("within 300 s"));
        let empty = Round {
            requests: Map::new(),
            state: None,
        }
        .answered(vec![], vec![], &t)
        .unwrap();
        assert_eq!(
            empty.responses, None,
            "no inputResponses for a round that asked nothing"
        );
    }

    #[test]
    fn an_upstream_request_has_a_method_and_a_string_or_number_id() {
        let v = json!({"jsonrpc": "2.0", "id": "q", "method": "elicitation/create", "params": {"message": "ok?"}});
        assert_eq!(
            UpstreamRequest::read(&v),
            Some(UpstreamRequest {
                id: json!("q"),
                question: Question::new(asks::ELICIT, Some(json!({"message": "ok?"}))),
            })
        );
        let ping = UpstreamRequest::read(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})).unwrap();
        assert_eq!((ping.id, ping.question.params), (json!(3), None));
        for v in [
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}),
            json!({"jsonrpc": "2.0", "id": null, "method": "roots/list"}),
            json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "roots/list"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": 5}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        ] {
            assert_eq!(UpstreamRequest::read(&v), None, "{v}");
        }
    }

    #[test]
    fn a_2025_upstream_gets_the_answer_under_its_own_id() {
        let t = Timeouts::new(std::time::Duration::from_secs(1));
        assert_eq!(
            upstream_response(&json!(7), Answer::Result(json!({"ok": 1})), &t).to_string(),
            r#"{"jsonrpc":"2.0","id":7,"result":{"ok":1}}"#
        );
        let refused = upstream_response(&json!("x"), Answer::Error(RpcError::new(-1, "no")), &t);
        assert_eq!(refused["error"], json!({"code": -1, "message": "no"}));
        let late = upstream_response(&json!(1), Answer::TimedOut, &t);
        assert_eq!(late["error"]["code"], json!(-32001));
        assert!(late["error"]["message"].as_str().unwrap().contains("within 1 s"));
        let gone = upstream_response(&json!(1), Answer::Gone, &t);
        assert_eq!(gone["error"]["code"], json!(-32800));
    }

    #[test]
    fn the_meta_tells_a_modern_upstream_what_the_client_can_be_asked_and_its_log_level() {
        let sampling = Askable::from_capabilities(Some(&json!({"sampling": {}})));
        assert_eq!(
            Value::Object(upstream_meta(sampling, Some("debug"))),
            json!({modern::META_CLIENT_CAPABILITIES: {"sampling": {}}, modern::META_LOG_LEVEL: "debug"})
        );
        assert!(
            upstream_meta(Askable::NONE, None).is_empty(),
            "the proxy's defaults say it"
        );
        let roots = Askable::from_capabilities(Some(&json!({"roots": {}})));
        assert_eq!(
            Value::Object(upstream_meta(roots, None)),
            json!({modern::META_CLIENT_CAPABILITIES: {"roots": {}}})
        );
    }

    #[test]
    fn a_held_calls_questions_become_a_round_and_a_retry_answers_them_by_key() {
        let a = Question::new(asks::SAMPLE, Some(json!({"maxTokens": 5})));
        let b = Question::new(asks::ELICIT, None);
        assert_eq!(
            input_requests([("q1", &a), ("q2", &b)]),
            json!({"q1": {"method": asks::SAMPLE, "params": {"maxTokens": 5}}, "q2": {"method": asks::ELICIT}})
        );
        let responses = json!({"q1": {"ok": true}});
        let responses = responses.as_object().unwrap();
        assert_eq!(answer_in_retry(responses, "q1"), Answer::Result(json!({"ok": true})));
        assert_eq!(
            answer_in_retry(responses, "q2"),
            Answer::Declined(Decline::NoAnswerInRetry { key: "q2".into() })
        );
    }
}
