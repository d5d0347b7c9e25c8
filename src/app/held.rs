//! A 2026-07-28 client's call held while it asks (see the module docs of `app`): the call
//! runs as a task, driven by `proxy_actors::asking` (when its upstream asks, it is held at
//! the asking desk and its questions become the client's `input_required` round; the retry
//! answers them and drives it on). Here: the task started, and what was driven told as the
//! call's outcome, its round's `requestState` sealed.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use proxy_actors::asking::{self as desk, Ask, Driven, HeldCall};
use proxy_actors::upstream::UpstreamError;
use proxy_actors::upstream::{cancel_pair, CallTool, CancelToken};
use proxy_core::asking::{self, CallKey, Timeouts};
use proxy_core::request_state::{self, Resume};
use proxy_core::tools::CallOutcome;
use proxy_metrics::Metrics;

use super::call::{relay, state_refused};
use super::{failure, App, CallContext, Peers};

impl<P: Peers> App<P> {
    /// Drives a 2026-07-28 client's call (running as a task) until it ends or asks something
    /// (`proxy_actors::asking::drive`): an ended call's round is sealed; a call that asks is
    /// held, and its questions become the client's `input_required` round.
    pub(super) async fn drive(
        &self,
        held: HeldCall,
        events: Option<mpsc::Sender<Value>>,
        cancel: Option<CancelToken>,
        holder: String,
        id: &CallKey,
    ) -> CallOutcome {
        let driven = desk::drive(&self.desk, held, events, cancel, &holder).await;
        self.driven(driven, id)
    }

    /// A 2026-07-28 client's retry of a held call: its answers go to the waiting questions
    /// (a question it did not answer gets an error), and the call is driven on.
    pub(super) async fn resume_held(
        &self,
        held_id: &str,
        responses: Option<Value>,
        ctx: CallContext,
        id: &CallKey,
    ) -> CallOutcome {
        let group = &ctx.talk.holder;
        match desk::resume(&self.desk, held_id, responses, ctx.events, ctx.cancel, group).await {
            Some(driven) => self.driven(driven, id),
            None => self.counted(state_refused(
                &id.name,
                "the call that asked is no longer held: it expired (ELICITATION_TIMEOUT_SEC), was resumed already, or is held by another instance of the proxy (keep a client on one instance); call the tool again without requestState".into(),
            )),
        }
    }

    /// What a driven call tells its client: its outcome (a passed-through round sealed), the
    /// round of a held call (sealed with the held id), or why it failed.
    fn driven(&self, driven: Driven, id: &CallKey) -> CallOutcome {
        match driven {
            Driven::Ended(outcome) => self.sealed(outcome, id),
            Driven::Asked {
                held,
                requests,
                upstream,
                tool,
            } => CallOutcome::InputRequired {
                state: asking::seal(
                    &self.sealer,
                    id,
                    Resume::Held { id: held },
                    &self.timeouts,
                    request_state::unix_now(),
                ),
                upstream,
                tool,
                requests,
            },
            Driven::Gone { upstream, tool } => {
                let e = UpstreamError::Cancelled(proxy_actors::upstream::CancelReason::ClientGone);
                CallOutcome::Failed(failure(&upstream, &tool, e))
            }
            Driven::DeskGone { upstream, tool } => {
                CallOutcome::Failed(failure(&upstream, &tool, UpstreamError::Unavailable))
            }
        }
    }

    /// A 2026-07-28 upstream's `input_required` round, passed through: the upstream's state
    /// sealed in the proxy's own.
    pub(super) fn sealed(&self, outcome: CallOutcome, id: &CallKey) -> CallOutcome {
        asking::seal_passed(&self.sealer, id, outcome, &self.timeouts, request_state::unix_now())
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
