//! The 2026-07-28 client's driver of a held call. [`drive`] waits for the call (running as
//! a task) to end or to ask, serving the client's request meanwhile (its notifications, its
//! going away); when it asks, the call is held at the [`Desk`] and [`Driven::Asked`] gives the
//! client's round. [`resume`] takes it back for the client's retry, answers its questions and
//! drives it on. The application seals the round's `requestState` and turns what was driven
//! into its outcome (`src/app/held.rs`).

use actix::Addr;
use serde_json::Value;
use tokio::sync::mpsc;

use proxy_core::asking::Decline;
use proxy_core::tools::CallOutcome;

use super::asker::Ask;
use super::desk::{Desk, Hold, Take};
use super::held::HeldCall;
use crate::upstream::CancelToken;

/// How far a held call was driven.
#[derive(Debug)]
pub enum Driven {
    /// It ended (a 2026-07-28 upstream's round passed through is the application's to seal).
    Ended(CallOutcome),
    /// It asks: held at the desk under `held`; `requests` are the client's round.
    Asked {
        held: String,
        requests: Value,
        upstream: String,
        tool: String,
    },
    /// The client's request went away (the call is cancelled upstream), or the call's task
    /// ended without an outcome.
    Gone { upstream: String, tool: String },
    /// The desk is gone (shutdown): the call cannot be held.
    DeskGone { upstream: String, tool: String },
}

/// Waits for a held call to end or to ask something; its notifications go to the client's
/// request (`events`) meanwhile, and the client's going away (`cancel`) drops it, which
/// cancels it upstream. When it asks, it is held at the desk for `group`; a group that holds
/// too many has the call's questions declined, and the call is driven on.
pub async fn drive(
    desk: &Addr<Desk>,
    mut held: HeldCall,
    events: Option<mpsc::Sender<Value>>,
    mut cancel: Option<CancelToken>,
    group: &str,
) -> Driven {
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
                return match outcome {
                    Ok(outcome) => Driven::Ended(outcome),
                    Err(_) => gone(&held),
                };
            }
            Some(note) = held.events.recv() => forward(&events, note),
            _ = &mut cancelled => return gone(&held),
            Some(ask) = held.questions.recv() => match hold(desk, held, ask, group).await {
                Ok(driven) => return driven,
                Err(back) => held = back,
            },
        }
    }
}

/// A held call's new questions (`ask`, and any more already sent): the call is held and its
/// waiting questions become the client's round. `Err`: the call goes on being driven (its
/// questions were all closed, or declined: the group holds too many calls).
async fn hold(desk: &Addr<Desk>, mut held: HeldCall, ask: Ask, group: &str) -> Result<Driven, HeldCall> {
    if !held.take_questions(ask) {
        return Err(held);
    }
    let requests = held.round();
    let (upstream, tool) = (held.upstream.clone(), held.tool.clone());
    let hold = Hold {
        group: group.to_string(),
        call: held,
    };
    match desk.send(hold).await {
        Ok(Ok(held)) => Ok(Driven::Asked {
            held,
            requests,
            upstream,
            tool,
        }),
        Ok(Err(mut back)) => {
            back.decline_waiting(Decline::GroupFull);
            Err(back)
        }
        Err(_) => Ok(Driven::DeskGone { upstream, tool }),
    }
}

/// A 2026-07-28 client's retry of the call held under `held_id`: its answers go to the
/// waiting questions, and the call is driven on. `None`: no call is held under that id (it
/// expired, was resumed already, or is held by another instance).
pub async fn resume(
    desk: &Addr<Desk>,
    held_id: &str,
    responses: Option<Value>,
    events: Option<mpsc::Sender<Value>>,
    cancel: Option<CancelToken>,
    group: &str,
) -> Option<Driven> {
    let Ok(Some(mut held)) = desk.send(Take(held_id.to_string())).await else {
        return None;
    };
    held.answer_waiting(responses);
    Some(drive(desk, held, events, cancel, group).await)
}

/// A held call whose task ended without an outcome, or whose client went away.
fn gone(held: &HeldCall) -> Driven {
    Driven::Gone {
        upstream: held.upstream.clone(),
        tool: held.tool.clone(),
    }
}

/// A notification of a held call, to the client's current request (if it takes them).
fn forward(events: &Option<mpsc::Sender<Value>>, note: Value) {
    if let Some(tx) = events {
        let _ = tx.try_send(note);
    }
}
