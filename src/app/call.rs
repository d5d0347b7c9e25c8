//! `App::call` in steps: open a 2026-07-28 retry's `requestState`, resolve (one refresh
//! for a name the catalog lacks), prepare, route, relay. What each step hands the next is a
//! type of its own ([`Ready`], [`Routed`]); a call that ends before it is sent is [`Unsent`].

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use proxy_actors::catalog::{Refresh, RefreshReason};
use proxy_actors::retrieval::{self, ClientKey};
use proxy_actors::upstream::UpstreamError;
use proxy_actors::upstream::{CallTool, Called};
use proxy_core::asking::{self, CallKey, Opened, RoundAnswers};
use proxy_core::catalog::resolve::{resolve, Resolution};
use proxy_core::catalog::Snapshot;
use proxy_core::request_state;
use proxy_core::tools::{self, CallOutcome, CallRequest, Prepared};
use proxy_metrics::{self as metrics, Metrics};

use super::held::spawn_held;
use super::{failure, metric_of, App, Asking, CallContext, Peers};

/// A call prepared against the snapshot ([`App::prepare`]): the snapshot's tool `index`, its
/// repaired and validated arguments.
struct Ready {
    /// The name the client gave.
    name: String,
    index: usize,
    arguments: Value,
    repairs: Vec<String>,
    input_schema: Arc<Value>,
}

/// A call that ends before it is sent (unknown tool, refused arguments or state, no route):
/// its outcome, boxed (a rare path).
type Unsent = Box<CallOutcome>;

/// A prepared call with its route ([`App::route`]): the owning upstream, and the round it
/// continues.
struct Routed<P: Peers> {
    ready: Ready,
    round: Option<RoundAnswers>,
    to: P::Upstream,
}

impl<P: Peers> App<P> {
    /// `mcp_call` (or a pinned tool), in steps: a 2026-07-28 client's retry first opens its
    /// `requestState` (a held call is resumed, an upstream's round continued); then
    /// resolve (a name the catalog lacks: one refresh, and one more try), prepare (repair,
    /// validate), route (the owning upstream) and relay (`relay_call`). Each outcome that was
    /// never sent is counted once, here.
    pub async fn call(&self, req: CallRequest, mut ctx: CallContext) -> CallOutcome {
        let rounds = matches!(ctx.talk.asking, Asking::Rounds);
        let id = rounds.then(|| CallKey::of(&req.name, &req.arguments, &ctx.talk.holder));
        let mut round = None;
        if let (Some(retry), Some(id)) = (ctx.talk.retry.take(), &id) {
            match asking::open(&self.sealer, id, retry, request_state::unix_now()) {
                Opened::Fresh => {}
                Opened::Upstream { sealed_for, round: r } => round = Some((sealed_for, r)),
                // boxed: a rare path whose state would otherwise enlarge every call's future
                Opened::Held { held, responses } => return Box::pin(self.resume_held(&held, responses, ctx, id)).await,
                Opened::Refused(why) => return self.counted(state_refused(&id.name, why.to_string())),
            }
        }
        let snap = self.resolve(&req.name).await;
        let steps = self
            .prepare(&snap, req, ctx.client.take())
            .and_then(|ready| self.route(&snap, ready, round));
        match steps {
            Ok(routed) => self.relay_call(&snap, routed, ctx, id).await,
            Err(outcome) => self.counted(*outcome),
        }
    }

    /// Resolve, retrying once: the snapshot to prepare `name` against. A name it lacks (even
    /// after repairs) asks the catalog for one refresh first, and the call is prepared
    /// against the snapshot after it.
    async fn resolve(&self, name: &str) -> Arc<Snapshot> {
        let snap = self.snapshot();
        if !matches!(resolve(&snap, name), Resolution::Unknown) {
            return snap;
        }
        let _ = self
            .peers
            .refresh(Refresh {
                reason: RefreshReason::UnknownTool,
                seen_generation: Some(snap.generation),
            })
            .await;
        self.snapshot()
    }

    /// Prepare: the arguments repaired and validated against `snap`'s tool
    /// (`tools::prepare`), the call told to retrieval telemetry (unless pinned: called by
    /// name, without searching). An unknown tool or refused arguments end here, unsent.
    fn prepare(&self, snap: &Snapshot, req: CallRequest, client: Option<ClientKey>) -> Result<Ready, Unsent> {
        let CallRequest {
            name,
            arguments,
            pinned,
        } = req;
        let prepared = tools::prepare(snap, &name, arguments);
        if let Some(client) = client.filter(|_| !pinned) {
            let tool = match &prepared {
                Prepared::Ready { index, .. } | Prepared::Rejected { index, .. } => {
                    snap.tools[*index].tool.name.clone()
                }
                Prepared::Unknown => name.clone(),
            };
            self.retrieval.do_send(retrieval::Called { client, tool });
        }
        match prepared {
            Prepared::Ready {
                index,
                arguments,
                repairs,
                input_schema,
            } => Ok(Ready {
                name,
                index,
                arguments,
                repairs,
                input_schema,
            }),
            Prepared::Unknown => Err(Box::new(CallOutcome::unknown_tool(snap, &name))),
            Prepared::Rejected { index, rejection } => Err(Box::new(CallOutcome::Rejected {
                upstream: snap.tools[index].upstream.clone(),
                tool: snap.tools[index].tool.name.clone(),
                rejection,
            })),
        }
    }

    /// Route: the upstream that owns the prepared tool. A round sealed for another upstream
    /// is refused first; an upstream without an actor is no route.
    fn route(&self, snap: &Snapshot, ready: Ready, round: Option<(String, RoundAnswers)>) -> Result<Routed<P>, Unsent> {
        let owner = &snap.tools[ready.index];
        let round = match round {
            Some((sealed_for, _)) if sealed_for != owner.upstream => {
                let upstream = &owner.upstream;
                return Err(Box::new(state_refused(
                    &ready.name,
                    format!("requestState was issued for upstream {sealed_for:?}, and the tool is now served by {upstream:?}; call it again without requestState"),
                )));
            }
            other => other.map(|(_, r)| r),
        };
        let Some(to) = self.peers.upstream(&owner.upstream) else {
            return Err(Box::new(CallOutcome::NoRoute {
                upstream: owner.upstream.clone(),
                tool: owner.tool.name.clone(),
            }));
        };
        Ok(Routed { ready, round, to })
    }

    /// Relay: the [`CallTool`] built and sent to the upstream. A 2026-07-28 client's call is
    /// sealed for its retry when it needs input; one that can be asked runs as a task that may
    /// be held between the client's requests while it asks (module docs).
    async fn relay_call(
        &self,
        snap: &Snapshot,
        routed: Routed<P>,
        mut ctx: CallContext,
        id: Option<CallKey>,
    ) -> CallOutcome {
        let Routed { ready, round, to } = routed;
        let owner = &snap.tools[ready.index];
        let mut talk = std::mem::take(&mut ctx.talk);
        let holder = std::mem::take(&mut talk.holder);
        let (interaction, questions) = talk.interaction(id.is_some(), round, self.timeouts);
        let mut call = CallTool {
            name: owner.tool.name.clone(),
            arguments: ready.arguments,
            input_schema: ready.input_schema,
            meta: mcp_wire::modern::passthrough_meta(ctx.meta.as_ref()),
            notifications: ctx.events.take(),
            cancel: ctx.cancel.take(),
            trace: ctx.trace.take().map(|t| t.upstream),
            interaction,
        };
        if let Some(trace) = &call.trace {
            trace.stamp(&mut call.meta);
        }
        let upstream = owner.upstream.as_str();
        let metrics = self.metrics.clone();
        match (questions, id) {
            (Some(questions), Some(id)) => {
                let (held, events, cancel) =
                    spawn_held::<P>(metrics, to, upstream, call, ready.repairs, questions, self.timeouts);
                Box::pin(self.drive(held, events, cancel, holder, &id)).await
            }
            (_, Some(id)) => self.sealed(relay::<P>(metrics, to, upstream, call, ready.repairs).await, &id),
            (_, None) => relay::<P>(metrics, to, upstream, call, ready.repairs).await,
        }
    }

    /// A call that ended without being sent, counted.
    pub(super) fn counted(&self, outcome: CallOutcome) -> CallOutcome {
        self.count(&outcome, None);
        outcome
    }
}

/// A retry that cannot be resumed (counted as a rejected call).
pub(super) fn state_refused(name: &str, message: String) -> CallOutcome {
    CallOutcome::StateRefused {
        tool: name.to_string(),
        message,
    }
}

/// Sends a prepared call to the actor of `upstream` and waits for how it ended (counted). A
/// 2026-07-28 round passed through ([`Called::Round`], read once by the actor) comes back as
/// [`CallOutcome::InputRequired`] holding the upstream's map as sent and its own state (`""`
/// for none), which the caller seals.
pub(super) async fn relay<P: Peers>(
    metrics: Arc<Metrics>,
    to: P::Upstream,
    upstream: &str,
    call: CallTool,
    repairs: Vec<String>,
) -> CallOutcome {
    let tool = call.name.clone();
    let pending = PendingCall::start(&metrics, upstream, &tool);
    let answer = P::call(to, call).await.unwrap_or(Err(UpstreamError::Unavailable));
    let outcome = match answer {
        Ok(Called::Done(result)) => CallOutcome::relayed(upstream, &tool, result, &repairs),
        Ok(Called::Round(round)) => CallOutcome::InputRequired {
            upstream: upstream.to_string(),
            tool,
            requests: Value::Object(round.requests),
            state: round.state.unwrap_or_default(),
        },
        Err(e) => CallOutcome::Failed(failure(upstream, &tool, e)),
    };
    pending.finish(metric_of(&outcome));
    outcome
}

/// A call sent upstream, counted in flight until it ends. A request dropped before its call
/// ended (the client went away, or the shutdown cut it) counts the call as cancelled. Its
/// series are resolved once per tool ([`metrics::CallSeries`]): recording a call builds no label.
struct PendingCall {
    metrics: Arc<Metrics>,
    series: Arc<metrics::CallSeries>,
    started: Instant,
    in_flight: Option<metrics::InFlight>,
}

impl PendingCall {
    fn start(metrics: &Arc<Metrics>, upstream: &str, tool: &str) -> PendingCall {
        let series = metrics.call_series(upstream, tool);
        PendingCall {
            in_flight: Some(metrics.series_in_flight(&series)),
            metrics: metrics.clone(),
            series,
            started: Instant::now(),
        }
    }

    fn finish(mut self, outcome: metrics::CallOutcome) {
        self.record(outcome);
    }

    fn record(&mut self, outcome: metrics::CallOutcome) {
        if self.in_flight.take().is_some() {
            let latency = Some(self.started.elapsed());
            self.metrics.series_call(&self.series, outcome, latency);
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        self.record(metrics::CallOutcome::Cancelled);
    }
}
