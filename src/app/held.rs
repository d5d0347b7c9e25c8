//! A 2026-07-28 client's call held while it asks (see the module docs of `app`): the call
//! runs as a task; when its upstream asks, it is held (a `HeldCall` at the asking desk) and
//! its questions become the client's `input_required` round; the retry answers them and
//! drives it on.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use proxy_actors::asking::{Ask, HeldCall, Hold, Take};
use proxy_actors::upstream::{cancel_pair, CallTool, CancelToken};
use proxy_core::asking::{Decline, Timeouts};
use proxy_core::request_state::{self, Claims, Resume};
use proxy_core::tools::CallOutcome;
use proxy_metrics::Metrics;
use upstream_http::UpstreamError;

use super::call::{relay, state_refused, CallId};
use super::{failure, App, CallContext, Peers};

impl<P: Peers> App<P> {
    /// Waits for a 2026-07-28 client's call (running as a task) to end or to ask something;
    /// its notifications go to the client's request meanwhile. When it asks, it is held and
    /// its questions become the client's `input_required` round.
    pub(super) async fn drive(
        &self,
        mut held: HeldCall,
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
    async fn hold(&self, mut held: HeldCall, ask: Ask, holder: &str, id: &CallId) -> Result<CallOutcome, HeldCall> {
        if !held.take_questions(ask) {
            return Err(held);
        }
        let requests = held.round();
        let (upstream, tool) = (held.upstream.clone(), held.tool.clone());
        let hold = Hold {
            group: holder.to_string(),
            call: held,
        };
        match self.desk.send(hold).await {
            Ok(Ok(held_id)) => Ok(CallOutcome::InputRequired {
                state: self.seal(id, Resume::Held { id: held_id }),
                upstream,
                tool,
                requests,
            }),
            Ok(Err(mut back)) => {
                // too many calls held for this client: its questions are declined
                back.decline_waiting(Decline::GroupFull);
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
        let Ok(Some(mut held)) = self.desk.send(Take(held_id.to_string())).await else {
            return self.counted(state_refused(
                &id.name,
                "the call that asked is no longer held: it expired (ELICITATION_TIMEOUT_SEC), was resumed already, or is held by another instance of the proxy (keep a client on one instance); call the tool again without requestState".into(),
            ));
        };
        held.answer_waiting(responses);
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
            expires: self.timeouts.state_expiry(request_state::unix_now()),
        })
    }
}

/// A 2026-07-28 client's call that can be asked, started as a task ([`relay`]) that may be
/// held between the client's requests: the [`HeldCall`] (its outcome, questions,
/// notifications and the handle whose drop cancels it), and the client's own notification
/// sink and cancel token, which [`App::drive`] serves.
pub(super) fn spawn_held<P: Peers>(
    metrics: Arc<Metrics>,
    to: P::Upstream,
    upstream: &str,
    mut call: CallTool,
    repairs: Vec<String>,
    questions: mpsc::Receiver<Ask>,
    timeouts: Timeouts,
) -> (HeldCall, Option<mpsc::Sender<Value>>, Option<CancelToken>) {
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
    let held = HeldCall::new(
        outcome,
        questions,
        events,
        cancel,
        (upstream.to_string(), tool),
        timeouts,
    );
    (held, client_events, client_cancel)
}

/// A held call whose task ended without an outcome, or whose client went away.
fn gone(held: &HeldCall) -> CallOutcome {
    CallOutcome::Failed(failure(
        &held.upstream,
        &held.tool,
        UpstreamError::Cancelled(upstream_http::CancelReason::ClientGone),
    ))
}

/// A notification of a held call, to the client's current request (if it takes them).
fn forward(events: &Option<mpsc::Sender<Value>>, note: Value) {
    if let Some(tx) = events {
        let _ = tx.try_send(note);
    }
}
