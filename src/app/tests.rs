//! Unit tests of [`App::call`]'s steps over small fakes of its peers: a catalog whose
//! snapshot the test publishes (and which may publish a next one when asked to refresh), and
//! upstreams that record each [`CallTool`] and answer from a script.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::rc::Rc;

use actix::MailboxError;
use serde_json::json;

use super::peers::{CallReply, Refreshed};
use super::*;
use mcp_wire::asks::Askable;
use mcp_wire::raw::RawObject;
use proxy_actors::asking::Ask;
use proxy_actors::upstream::{CallTool, Called};
use proxy_core::asking::{Answer, Question, Round, RoundAnswers};
use proxy_core::catalog::UpstreamState;
use proxy_core::policy::Policy;
use proxy_core::tools::CallRequest;
use tokio::sync::oneshot;

/// How a fake upstream answers one call.
enum Script {
    /// With this, at once.
    Answer(Result<RawObject, UpstreamError>),
    /// It asks its client `method` (as a 2025 upstream does on an open call), then ends with
    /// a text result holding the answer it got.
    Ask(&'static str),
}

/// What a fake upstream was sent.
#[derive(Debug)]
struct Sent {
    upstream: String,
    name: String,
    arguments: Value,
    round: Option<RoundAnswers>,
    pass_input_required: bool,
}

/// The fakes' shared record: what was sent and refreshed, and what comes next.
#[derive(Default)]
struct Record {
    scripts: VecDeque<Script>,
    sent: Vec<Sent>,
    refreshes: Vec<(RefreshReason, Option<u64>)>,
    /// Published when the catalog is asked to refresh.
    after_refresh: Option<Snapshot>,
    publish: Option<watch::Sender<Arc<Snapshot>>>,
}

/// The fake catalog and upstreams: an upstream label without an actor is not in `labels`.
#[derive(Clone)]
struct Fakes {
    labels: Vec<&'static str>,
    record: Rc<RefCell<Record>>,
}

#[derive(Clone)]
struct FakeUpstream {
    label: String,
    record: Rc<RefCell<Record>>,
}

impl Peers for Fakes {
    type Upstream = FakeUpstream;

    fn upstream(&self, label: &str) -> Option<FakeUpstream> {
        self.labels.contains(&label).then(|| FakeUpstream {
            label: label.to_string(),
            record: self.record.clone(),
        })
    }

    fn call(upstream: FakeUpstream, call: CallTool) -> impl Future<Output = CallReply> + 'static {
        let script = {
            let mut record = upstream.record.borrow_mut();
            record.sent.push(Sent {
                upstream: upstream.label.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                round: call.interaction.round.clone(),
                pass_input_required: call.interaction.pass_input_required,
            });
            record.scripts.pop_front()
        };
        async move {
            match script {
                Some(Script::Answer(answer)) => Ok(answer.map(called)),
                Some(Script::Ask(method)) => Ok(Ok(Called::Done(asked(call, method).await))),
                // no more script: the actor is gone
                None => Err(MailboxError::Closed),
            }
        }
    }

    fn refresh(&self, refresh: Refresh) -> impl Future<Output = Refreshed> + 'static {
        let mut record = self.record.borrow_mut();
        record.refreshes.push((refresh.reason, refresh.seen_generation));
        if let Some(next) = record.after_refresh.take() {
            if let Some(publish) = &record.publish {
                publish.send_replace(Arc::new(next));
            }
        }
        // what the catalog answers is not read by a call
        std::future::ready(Err(MailboxError::Closed))
    }
}

/// A result as the actor returns it: a 2026-07-28 round read once, passed to the caller.
fn called(result: RawObject) -> Called {
    match Round::read(&result) {
        Some(Ok(round)) => Called::Round(round),
        _ => Called::Done(result),
    }
}

/// A fake upstream that asks its client `method` during the call, and returns the reply.
async fn asked(call: CallTool, method: &str) -> RawObject {
    let asker = call.interaction.asker.expect("a call that may ask");
    let (reply, answer) = oneshot::channel();
    let ask = Ask {
        question: Question::new(method, Some(json!({"message": "Which colour?"}))),
        reply,
    };
    asker.send(ask).await.expect("the question is taken");
    let answer = match answer.await {
        Ok(Answer::Result(v)) => v,
        other => json!({"not answered": format!("{other:?}")}),
    };
    result(&json!({"content": [{"type": "text", "text": answer.to_string()}]}))
}

fn result(v: &Value) -> RawObject {
    RawObject::parse(&v.to_string()).unwrap()
}

fn tool(name: &str) -> Arc<mcp_wire::types::Tool> {
    Arc::new(
        serde_json::from_value(json!({
            "name": name,
            "description": format!("The {name} tool."),
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        }))
        .unwrap(),
    )
}

/// A snapshot of `generation` with each upstream's tools.
fn snapshot(generation: u64, upstreams: &[(&str, &[&str])]) -> Snapshot {
    let states = upstreams
        .iter()
        .map(|(label, names)| UpstreamState {
            label: label.to_string(),
            url: format!("http://{label}.test/mcp"),
            tools: names.iter().map(|n| tool(n)).collect(),
            ..Default::default()
        })
        .collect();
    Snapshot::build(states, generation, &Policy::default())
}

/// An application over the fakes: upstream `up` serves `echo`; `down` (`offline`) has no
/// actor.
fn app(record: &Rc<RefCell<Record>>) -> App<Fakes> {
    app_with(record, snapshot(1, &[("up", &["echo"]), ("down", &["offline"])]))
}

fn app_with(record: &Rc<RefCell<Record>>, snap: Snapshot) -> App<Fakes> {
    let (publish, snapshots) = watch::channel(Arc::new(snap));
    record.borrow_mut().publish = Some(publish);
    let fakes = Fakes {
        labels: vec!["up", "up2"],
        record: record.clone(),
    };
    let (_, semantic) = watch::channel(SemanticState::off("tests"));
    let asking = crate::config::Asking::default();
    App::with_peers(fakes, snapshots, Arc::new(Metrics::new()), semantic, &asking)
}

fn record(scripts: Vec<Script>) -> Rc<RefCell<Record>> {
    Rc::new(RefCell::new(Record {
        scripts: scripts.into(),
        ..Default::default()
    }))
}

fn request(name: &str, arguments: Value) -> CallRequest {
    CallRequest {
        name: name.into(),
        arguments,
        pinned: false,
    }
}

/// The context of a 2026-07-28 client's call (asked in rounds), of client group `g`.
fn modern(askable: Askable, retry: Option<Retry>) -> CallContext {
    CallContext {
        talk: Talk {
            askable,
            asking: Asking::Rounds,
            retry,
            holder: "g".into(),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// How many calls the metrics counted for `upstream`, `tool` and `outcome`.
fn counted(app: &App<Fakes>, upstream: &str, tool: &str, outcome: &str) -> f64 {
    let text = app.metrics.encode(&app.snapshot(), 0);
    let labels = format!(r#"upstream="{upstream}",tool="{tool}",outcome="{outcome}""#);
    text.lines()
        .filter(|l| l.starts_with("mcp_proxy_tool_calls_total{") && l.contains(&labels))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn text_of(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::Relayed { result, .. } => result.to_value()["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        other => panic!("not relayed: {other:?}"),
    }
}

#[actix::test]
async fn a_call_is_relayed_to_the_upstream_that_owns_the_tool_with_its_repairs() {
    let ok = result(&json!({"content": [{"type": "text", "text": "hi"}]}));
    let record = record(vec![Script::Answer(Ok(ok))]);
    let app = app(&record);
    // a name repaired (case), then found
    let outcome = app
        .call(request("ECHO", json!({"text": "x"})), CallContext::default())
        .await;
    let CallOutcome::Relayed {
        upstream,
        tool,
        result,
        tool_error,
    } = &outcome
    else {
        panic!("relayed: {outcome:?}")
    };
    assert_eq!((upstream.as_str(), tool.as_str(), *tool_error), ("up", "echo", false));
    let result = result.to_value();
    assert_eq!(result["content"][0]["text"], "hi");
    assert!(
        result["_meta"].to_string().contains("ECHO"),
        "the repair is told to the client: {result}"
    );
    let rec = record.borrow();
    assert_eq!(rec.sent.len(), 1);
    let sent = &rec.sent[0];
    assert_eq!((sent.upstream.as_str(), sent.name.as_str()), ("up", "echo"));
    assert_eq!(sent.arguments, json!({"text": "x"}));
    assert!(!sent.pass_input_required, "a 2025-era call is not passed rounds");
    assert!(rec.refreshes.is_empty(), "a known name asks for no refresh");
    assert_eq!(counted(&app, "up", "echo", "ok"), 1.0);
}

#[actix::test]
async fn an_unknown_name_asks_for_one_refresh_and_is_resolved_in_the_next_snapshot() {
    let ok = result(&json!({"content": []}));
    let record = record(vec![Script::Answer(Ok(ok))]);
    let app = app(&record);
    record.borrow_mut().after_refresh = Some(snapshot(2, &[("up", &["echo", "fresh"])]));
    let outcome = app
        .call(request("fresh", json!({"text": "x"})), CallContext::default())
        .await;
    assert!(
        matches!(&outcome, CallOutcome::Relayed { tool, .. } if tool == "fresh"),
        "{outcome:?}"
    );
    let rec = record.borrow();
    assert_eq!(rec.refreshes, vec![(RefreshReason::UnknownTool, Some(1))]);
    assert_eq!(rec.sent.len(), 1);
}

#[actix::test]
async fn a_name_still_unknown_after_the_refresh_is_an_unknown_tool_and_nothing_is_sent() {
    let record = record(vec![]);
    let app = app(&record);
    let outcome = app
        .call(request("no_such_thing", json!({})), CallContext::default())
        .await;
    let CallOutcome::UnknownTool { name, .. } = &outcome else {
        panic!("unknown: {outcome:?}")
    };
    assert_eq!(name, "no_such_thing");
    let rec = record.borrow();
    assert_eq!(rec.refreshes.len(), 1, "exactly one refresh");
    assert!(rec.sent.is_empty());
    assert_eq!(counted(&app, NO_UPSTREAM, OTHER, "unknown_tool"), 1.0);
}

#[actix::test]
async fn invalid_arguments_are_rejected_and_not_routed() {
    let record = record(vec![]);
    let app = app(&record);
    // `text` is required
    let outcome = app.call(request("echo", json!({})), CallContext::default()).await;
    assert!(
        matches!(&outcome, CallOutcome::Rejected { upstream, tool, .. } if upstream == "up" && tool == "echo"),
        "{outcome:?}"
    );
    assert!(record.borrow().sent.is_empty());
    assert!(record.borrow().refreshes.is_empty());
    assert_eq!(counted(&app, "up", "echo", "rejected"), 1.0);
}

#[actix::test]
async fn a_tool_whose_upstream_has_no_actor_has_no_route() {
    let record = record(vec![]);
    let app = app(&record);
    let outcome = app
        .call(request("offline", json!({"text": "x"})), CallContext::default())
        .await;
    assert!(
        matches!(&outcome, CallOutcome::NoRoute { upstream, tool } if upstream == "down" && tool == "offline"),
        "{outcome:?}"
    );
    assert!(record.borrow().sent.is_empty());
    assert_eq!(counted(&app, "down", "offline", "upstream_error"), 1.0);
}

/// The application sends a call once: a failing upstream is reported as it failed (the
/// upstream actor itself retries a lost session once; the client decides on the rest from
/// `retryable`).
#[actix::test]
async fn an_upstream_failure_is_reported_with_its_advice_after_one_send() {
    let timeout = UpstreamError::Wire(upstream_http::WireError::Timeout {
        elapsed: Duration::from_secs(3),
    });
    let record = record(vec![
        Script::Answer(Err(timeout)),
        Script::Answer(Ok(result(&json!({})))),
    ]);
    let app = app(&record);
    let outcome = app
        .call(request("echo", json!({"text": "x"})), CallContext::default())
        .await;
    let CallOutcome::Failed(failure) = &outcome else {
        panic!("failed: {outcome:?}")
    };
    assert_eq!((failure.upstream.as_str(), failure.tool.as_str()), ("up", "echo"));
    assert!(failure.retryable && !failure.cancelled && !failure.client_side);
    assert!(!failure.advice.is_empty());
    assert_eq!(record.borrow().sent.len(), 1, "sent once");
    assert_eq!(counted(&app, "up", "echo", "upstream_error"), 1.0);
    // the actor gone (its mailbox closed): the upstream is unavailable
    let outcome = app
        .call(request("echo", json!({"text": "x"})), CallContext::default())
        .await;
    assert!(matches!(&outcome, CallOutcome::Relayed { .. }), "{outcome:?}");
    let outcome = app
        .call(request("echo", json!({"text": "x"})), CallContext::default())
        .await;
    assert!(
        matches!(&outcome, CallOutcome::Failed(f) if f.error == UpstreamError::Unavailable.to_string()),
        "{outcome:?}"
    );
}

/// A 2026-07-28 upstream's round that can't be asked of its client as is:
/// `input_required` with the upstream's state (`up-state`).
fn upstream_round() -> RawObject {
    result(&json!({
        "resultType": "input_required",
        "inputRequests": {"colour": {"method": "elicitation/create", "params": {"message": "Which?"}}},
        "requestState": "up-state",
    }))
}

#[actix::test]
async fn a_2026_round_is_sealed_and_its_retry_continues_the_round_upstream() {
    let done = result(&json!({"content": [{"type": "text", "text": "blue it is"}]}));
    let record = record(vec![Script::Answer(Ok(upstream_round())), Script::Answer(Ok(done))]);
    let app = app(&record);
    let args = json!({"text": "x"});
    let outcome = app
        .call(request("echo", args.clone()), modern(Askable::NONE, None))
        .await;
    let CallOutcome::InputRequired { requests, state, .. } = &outcome else {
        panic!("input required: {outcome:?}")
    };
    assert_eq!(requests["colour"]["method"], "elicitation/create");
    assert!(!state.is_empty() && state != "up-state", "the proxy's own sealed state");
    assert!(record.borrow().sent[0].pass_input_required);
    assert_eq!(counted(&app, "up", "echo", "input_required"), 1.0);

    let responses = json!({"colour": {"action": "accept", "content": {"c": "blue"}}});
    let retry = Retry {
        responses: Some(responses.clone()),
        state: Some(state.clone()),
    };
    let outcome = app
        .call(request("echo", args), modern(Askable::NONE, Some(retry)))
        .await;
    assert_eq!(text_of(&outcome), "blue it is");
    let rec = record.borrow();
    assert_eq!(rec.sent.len(), 2);
    assert_eq!(
        rec.sent[1].round,
        Some(RoundAnswers {
            responses: Some(responses),
            state: Some("up-state".into()),
        }),
        "the retry carries the answers and the upstream's own state"
    );
}

#[actix::test]
async fn a_state_not_sealed_for_this_call_is_refused_and_nothing_is_sent() {
    let record = record(vec![Script::Answer(Ok(upstream_round()))]);
    let app = app(&record);
    let retry = |state: &str| Retry {
        responses: None,
        state: Some(state.to_string()),
    };
    // tampered
    let outcome = app
        .call(
            request("echo", json!({"text": "x"})),
            modern(Askable::NONE, Some(retry("forged"))),
        )
        .await;
    assert!(
        matches!(&outcome, CallOutcome::StateRefused { tool, .. } if tool == "echo"),
        "{outcome:?}"
    );
    // sealed for other arguments
    let first = app
        .call(request("echo", json!({"text": "x"})), modern(Askable::NONE, None))
        .await;
    let CallOutcome::InputRequired { state, .. } = first else {
        panic!("input required")
    };
    let outcome = app
        .call(
            request("echo", json!({"text": "y"})),
            modern(Askable::NONE, Some(retry(&state))),
        )
        .await;
    assert!(matches!(&outcome, CallOutcome::StateRefused { .. }), "{outcome:?}");
    let rec = record.borrow();
    assert_eq!(rec.sent.len(), 1, "only the first call was sent");
    assert!(
        rec.refreshes.is_empty(),
        "a refused state is refused before the snapshot"
    );
    drop(rec);
    assert_eq!(counted(&app, NO_UPSTREAM, OTHER, "rejected"), 2.0);
}

#[actix::test]
async fn a_round_sealed_for_another_upstream_is_refused_before_it_is_routed() {
    let record = record(vec![Script::Answer(Ok(upstream_round()))]);
    let app = app(&record);
    let outcome = app
        .call(request("echo", json!({"text": "x"})), modern(Askable::NONE, None))
        .await;
    let CallOutcome::InputRequired { state, .. } = outcome else {
        panic!("input required")
    };
    // the tool moves to another upstream before the retry
    let moved = snapshot(2, &[("up2", &["echo"])]);
    record.borrow().publish.as_ref().unwrap().send_replace(Arc::new(moved));
    let retry = Retry {
        responses: Some(json!({})),
        state: Some(state),
    };
    let outcome = app
        .call(
            request("echo", json!({"text": "x"})),
            modern(Askable::NONE, Some(retry)),
        )
        .await;
    let CallOutcome::StateRefused { message, .. } = &outcome else {
        panic!("refused: {outcome:?}")
    };
    assert!(message.contains(r#"issued for upstream "up""#), "{message}");
    assert_eq!(record.borrow().sent.len(), 1);
}

/// A 2026-07-28 client that can be asked, and a 2025 upstream that asks on its open call:
/// the call is held, its question becomes the client's round, and the retry's answer reaches
/// the waiting upstream.
#[actix::test]
async fn a_held_call_asks_in_a_round_and_its_retry_answers_the_waiting_question() {
    let record = record(vec![Script::Ask("elicitation/create")]);
    let app = app(&record);
    let askable = Askable::from_capabilities(Some(&json!({"elicitation": {}})));
    let args = json!({"text": "x"});
    let outcome = app.call(request("echo", args.clone()), modern(askable, None)).await;
    let CallOutcome::InputRequired { requests, state, .. } = &outcome else {
        panic!("input required: {outcome:?}")
    };
    assert_eq!(
        requests,
        &json!({"q1": {"method": "elicitation/create", "params": {"message": "Which colour?"}}})
    );
    let retry = Retry {
        responses: Some(json!({"q1": {"action": "accept", "content": {"c": "red"}}})),
        state: Some(state.clone()),
    };
    let outcome = app
        .call(request("echo", args.clone()), modern(askable, Some(retry)))
        .await;
    assert_eq!(text_of(&outcome), r#"{"action":"accept","content":{"c":"red"}}"#);
    assert_eq!(record.borrow().sent.len(), 1, "one upstream call, resumed");
    // the held call was taken: a second retry with the same state finds nothing
    let again = Retry {
        responses: Some(json!({})),
        state: Some(state.clone()),
    };
    let outcome = app.call(request("echo", args), modern(askable, Some(again))).await;
    assert!(
        matches!(&outcome, CallOutcome::StateRefused { message, .. } if message.contains("no longer held")),
        "{outcome:?}"
    );
}
