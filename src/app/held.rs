//! A 2026-07-28 client's call held while it asks (see the module docs of `app`): the call
//! runs as a task; when its upstream asks, it is held (`HeldCalls`) and its questions become
//! the client's `input_required` round; the retry answers them and drives it on.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use mcp_wire::asks;
use mcp_wire::jsonrpc::{self, RpcError};
use proxy_actors::held::{Expire, Hold, Take};
use proxy_actors::upstream::UpstreamError;
use proxy_actors::upstream::{cancel_pair, Ask, CallTool, CancelHandle, CancelToken, Reply};
use proxy_core::request_state::{self, Claims, Resume};
use proxy_core::tools::CallOutcome;
use proxy_metrics::Metrics;

use super::call::{relay, state_refused, CallId};
use super::{failure, App, CallContext, Peers};

/// A call held for a 2026-07-28 client while it answers the call's questions (see the module
/// docs): the running call's outcome, its questions (asked and waiting, and the next ones),
/// its notifications, and the handle whose drop cancels it upstream.
pub struct Held {
    outcome: oneshot::Receiver<CallOutcome>,
    questions: mpsc::Receiver<Ask>,
    waiting: Vec<(String, Ask)>,
    next_key: u32,
    events: mpsc::Receiver<Value>,
    cancel: CancelHandle,
    upstream: String,
    tool: String,
}

impl Held {
    /// Takes `ask` and any more questions already sent, each under its key (`q1`, `q2`, …),
    /// and drops the waiting questions the call stopped waiting for (timed out on its side).
    fn take_questions(&mut self, ask: Ask) {
        let mut asked = vec![ask];
        while let Ok(more) = self.questions.try_recv() {
            asked.push(more);
        }
        for ask in asked {
            let key = format!("q{}", self.next_key);
            self.next_key += 1;
            self.waiting.push((key, ask));
        }
        self.waiting.retain(|(_, ask)| !ask.reply.is_closed());
    }
}

/// How long an expired held call may take to end of itself once its questions were told they
/// timed out, before it is cancelled upstream.
const EXPIRY_GRACE: Duration = Duration::from_secs(2);

impl Expire for Held {
    /// As for a 2025-era client that does not answer: the questions time out (the upstream is
    /// told so and its tool may end as it sees fit); a call still running after
    /// [`EXPIRY_GRACE`] is cancelled.
    fn expire(mut self) {
        for (_, ask) in self.waiting.drain(..) {
            let _ = ask.reply.send(Reply::TimedOut);
        }
        actix::spawn(async move {
            let _ = tokio::time::timeout(EXPIRY_GRACE, &mut self.outcome).await;
            self.cancel.cancel(proxy_actors::upstream::CancelReason::Unanswered);
        });
    }
}

impl<P: Peers> App<P> {
    /// Waits for a 2026-07-28 client's call (running as a task) to end or to ask something;
    /// its notifications go to the client's request meanwhile. When it asks, it is held and
    /// its questions become the client's `input_required` round.
    pub(super) async fn drive(
        &self,
        mut held: Held,
        events: Option<mpsc::Sender<Value>>,
        mut cancel: Option<CancelToken>,
        holder: String,
        id: &CallId,
    ) -> CallOutcome {
        let cancelled = async {
            match cancel.as_mut() {
                Some(t) => t.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        loop {
            tokio::select! {
                // an ended call is never held for one more useless round
                biased;
                outcome = &mut held.outcome => {
                    while let Ok(note) = held.events.try_recv() {
                        forward(&events, note);
                    }
                    let outcome = outcome.unwrap_or_else(|_| gone(&held));
                    return self.sealed(outcome, id);
                }
                Some(note) = held.events.recv() => forward(&events, note),
                // the client's request went away (dropping `held` cancels the call upstream)
                _ = &mut cancelled => return gone(&held),
                Some(ask) = held.questions.recv() => match self.hold(held, ask, &holder, id).await {
                    Ok(outcome) => return outcome,
                    Err(back) => held = back,
                },
            }
        }
    }

    /// A held call's new questions (`ask`, and any more already sent): the call is held and
    /// its waiting questions become the client's `input_required` round. `Err`: the call goes
    /// on being driven (its questions were all closed, or declined: too many calls held for
    /// this client).
    async fn hold(&self, mut held: Held, ask: Ask, holder: &str, id: &CallId) -> Result<CallOutcome, Held> {
        held.take_questions(ask);
        if held.waiting.is_empty() {
            return Err(held);
        }
        let requests: Vec<asks::InputRequest> = held
            .waiting
            .iter()
            .map(|(key, ask)| asks::InputRequest {
                key: key.clone(),
                method: ask.method.clone(),
                params: ask.params.clone(),
            })
            .collect();
        let (upstream, tool) = (held.upstream.clone(), held.tool.clone());
        let hold = Hold {
            client: holder.to_string(),
            item: held,
            ttl: self.question_timeout,
        };
        match self.held.send(hold).await {
            Ok(Ok(held_id)) => Ok(CallOutcome::InputRequired {
                state: self.seal(id, Resume::Held { id: held_id }),
                upstream,
                tool,
                requests: asks::input_requests_map(&requests),
            }),
            Ok(Err(mut back)) => {
                // too many calls held for this client: its questions are declined
                for (_, ask) in back.waiting.drain(..) {
                    let _ = ask.reply.send(Reply::Error(RpcError::new(
                        jsonrpc::INTERNAL_ERROR,
                        "The proxy's client has too many calls waiting for its answers (MAX_PENDING_QUESTIONS); this question was not asked",
                    )));
                }
                Err(back)
            }
            Err(_) => Ok(CallOutcome::Failed(failure(
                &upstream,
                &tool,
                UpstreamError::Unavailable,
            ))),
        }
    }

    /// A 2026-07-28 client's retry of a held call: its answers go to the waiting questions
    /// (a question it did not answer gets an error), and the call is driven on.
    pub(super) async fn resume_held(
        &self,
        held_id: &str,
        responses: Option<Value>,
        ctx: CallContext,
        id: &CallId,
    ) -> CallOutcome {
        let Ok(Some(mut held)) = self.held.send(Take::<Held>::new(held_id)).await else {
            return self.counted(state_refused(
                &id.name,
                "the call that asked is no longer held: it expired (ELICITATION_TIMEOUT_SEC), was resumed already, or is held by another instance of the proxy (keep a client on one instance); call the tool again without requestState".into(),
            ));
        };
        let responses = match responses {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        for (key, ask) in held.waiting.drain(..) {
            let reply = match responses.get(&key) {
                Some(answer) => Reply::Result(answer.clone()),
                None => Reply::Error(RpcError::new(
                    jsonrpc::INVALID_PARAMS,
                    format!("The client's retry carried no answer for this question (inputResponses has no {key:?})"),
                )),
            };
            let _ = ask.reply.send(reply);
        }
        self.drive(held, ctx.events, ctx.cancel, ctx.talk.holder, id).await
    }

    /// A 2026-07-28 upstream's `input_required` round, passed through: the upstream's state
    /// sealed in the proxy's own.
    pub(super) fn sealed(&self, outcome: CallOutcome, id: &CallId) -> CallOutcome {
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
                    state: self.seal(id, resume),
                    upstream,
                    tool,
                    requests,
                }
            }
            other => other,
        }
    }

    fn seal(&self, id: &CallId, resume: Resume) -> String {
        self.sealer.seal(&Claims {
            tool: id.name.clone(),
            digest: id.digest.clone(),
            holder: id.holder.clone(),
            resume,
            expires: request_state::unix_now() + self.question_timeout.as_secs(),
        })
    }
}

/// A 2026-07-28 client's call that can be asked, started as a task ([`relay`]) that may be
/// held between the client's requests: the [`Held`] call (its outcome, questions,
/// notifications and the handle whose drop cancels it), and the client's own notification
/// sink and cancel token, which [`App::drive`] serves.
pub(super) fn spawn_held<P: Peers>(
    metrics: Arc<Metrics>,
    to: P::Upstream,
    upstream: &str,
    mut call: CallTool,
    repairs: Vec<String>,
    questions: mpsc::Receiver<Ask>,
) -> (Held, Option<mpsc::Sender<Value>>, Option<CancelToken>) {
    let (tx_events, events) = mpsc::channel(proxy_actors::upstream::NOTIFICATION_BUFFER);
    let client_events = call.notifications.replace(tx_events);
    let (cancel, token) = cancel_pair();
    let client_cancel = call.cancel.replace(token);
    let (done, outcome) = oneshot::channel();
    let tool = call.name.clone();
    actix_web::rt::spawn({
        let upstream = upstream.to_string();
        async move {
            let _ = done.send(relay::<P>(metrics, to, &upstream, call, repairs).await);
        }
    });
    let held = Held {
        outcome,
        questions,
        waiting: Vec::new(),
        next_key: 1,
        events,
        cancel,
        upstream: upstream.to_string(),
        tool,
    };
    (held, client_events, client_cancel)
}

/// A held call whose task ended without an outcome, or whose client went away.
fn gone(held: &Held) -> CallOutcome {
    CallOutcome::Failed(failure(
        &held.upstream,
        &held.tool,
        UpstreamError::Cancelled(proxy_actors::upstream::CancelReason::ClientGone),
    ))
}

/// A notification of a held call, to the client's current request (if it takes them).
fn forward(events: &Option<mpsc::Sender<Value>>, note: Value) {
    if let Some(tx) = events {
        let _ = tx.try_send(note);
    }
}
