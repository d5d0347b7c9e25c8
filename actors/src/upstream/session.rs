//! The session with one upstream, as pure state: where it stands ([`Session`], kept in a
//! [`SessionState`] beside what belongs with it), the transitions between states, what a
//! handshake told ([`Handshake`]) and what a request copies out of it ([`RequestContext`]).
//! No I/O and no clock: the transitions are unit-tested below on plain values, and the
//! [`SessionCell`] that shares them (with its single-flight handshake) on a test runtime.
//! The handshakes that make the transitions (discovery probe, `initialize`) and one request
//! under the session's rules are `connection.rs`'s.
//!
//! # Era and session state machine (single-flight; `generation` counts (re)initializations)
//!
//! ```text
//!  Unready{hint} ──first request──► probe: POST server/discover (2026-07-28 _meta + headers)
//!     ▲  (a Legacy hint skips          │ result listing 2026-07-28, or a modern 400 (-32020/-32021/-32602)
//!     │   the probe)                   ├──────────────► Ready(Modern)                 became_modern
//!     │                                │                every request stamped, no session
//!     │                                │ anything else (400/404/405 non-modern error, -32601, -32022)
//!     │                                └──────────────► initialize + notifications/initialized
//!     │                                                     └──► Ready(Legacy{id?, version})  became_legacy
//!     ├── timeout: the handshake (waiting for the one in flight included) took longer than the
//!     │   upstream's timeout; the lock is released and the next request handshakes anew
//!     ├── lost(gen) ◄── Legacy: a request that carried the session got 404/400/"session expired",
//!     │                 or the list-change GET got 404
//!     │             ◄── Modern: a request got a non-modern refusal (the upstream changed era; the
//!     │                 hint is forgotten, so the next handshake probes)
//!     │   (only if nobody re-initialized since `gen`; a request is then retried once)
//!     └── ended ◄── Legacy{id: Some}: `EndSession` (the `DELETE` follows)
//! ```
//! A legacy hint that `initialize` refuses in a way that may mean the other era (400/404/405,
//! -32601, -32022) is forgotten and the upstream probed. The era found is reported with each
//! listing, stored in the manifest, and given back as a hint at the next start. A legacy
//! upstream whose `initialize` reply carries no `Mcp-Session-Id` is stateless
//! (`Legacy{id: None}`): no session header is ever sent and a 400 is an ordinary error, never a
//! loss.
//!
//! The events on the arrows (probe, `initialize`, a lost session, the timeout) are found by
//! `connection.rs` (and `list_changes.rs`, `actor.rs` for `EndSession`), which then call the
//! transition named beside them.
//!
//! # One writer, and no borrow across an await
//! The actor's request futures run concurrently on its thread and the session changes
//! mid-flight, so it is shared by them in a [`SessionCell`], its single writer (its docs say
//! why): read through `read`, written only through the transitions named above, each a
//! non-`async` step whose result cannot borrow the state, and handshaken single-flight. What a
//! request needs is copied out as a [`RequestContext`] (the ready session and its generation),
//! which the request then carries through its awaits; the headers it becomes are decided by
//! upstream-http's [`transport::headers`](upstream_http::transport::headers) from the
//! context's [`Envelope`].

use serde_json::Value;

use mcp_wire::{modern, Era};
use upstream_http::transport::Envelope;

pub(super) use cell::SessionCell;

/// Where the session with the upstream stands. Only states that can exist can be built: a
/// ready session knows its era, and only a legacy one has a session id or a negotiated version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Session {
    /// No handshake yet, or the last session was lost or ended. `hint`: the era last known (the
    /// manifest's, a probe's, or the lost session's); a legacy hint skips the probe.
    Unready { hint: Option<Era> },
    /// The handshake is done: requests go out in this session.
    Ready(Ready),
}

/// A session requests can go out in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ready {
    /// `initialize` done: the negotiated protocol version, and the `Mcp-Session-Id` of a
    /// stateful upstream (`None`: a stateless one).
    Legacy { id: Option<String>, version: String },
    /// Probed as modern: every request stamped with the modern version; no session.
    Modern,
}

impl Ready {
    pub(super) fn era(&self) -> Era {
        match self {
            Ready::Legacy { .. } => Era::Legacy,
            Ready::Modern => Era::Modern,
        }
    }

    pub(super) fn protocol_version(&self) -> &str {
        match self {
            Ready::Legacy { version, .. } => version,
            Ready::Modern => modern::LATEST_MODERN,
        }
    }

    /// Whether requests carry a session id (only those can find their session lost).
    pub(super) fn has_session_id(&self) -> bool {
        matches!(self, Ready::Legacy { id: Some(_), .. })
    }

    /// What a request in this session carries of it (made into headers by the transport).
    pub(super) fn envelope(&self) -> Envelope<'_> {
        match self {
            Ready::Legacy { id, version } => Envelope::Legacy {
                session_id: id.as_deref(),
                version,
            },
            Ready::Modern => Envelope::Modern,
        }
    }
}

/// What a handshake (`initialize`, or a modern `server/discover`) told about the upstream.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Handshake {
    /// The upstream's `instructions`, cut to [`MAX_INSTRUCTIONS_BYTES`].
    pub(super) instructions: Option<String>,
    /// Whether it advertises `tools.listChanged` (it can tell us when to re-list).
    pub(super) list_changed: bool,
}

impl Handshake {
    /// Reads a handshake's `result`.
    pub(super) fn of(result: &Value) -> Handshake {
        Handshake {
            instructions: result
                .get("instructions")
                .and_then(Value::as_str)
                .map(capped_instructions),
            list_changed: advertises_list_changed(result),
        }
    }
}

/// The session with one upstream, and what belongs beside it.
#[derive(Debug)]
pub(super) struct SessionState {
    session: Session,
    /// (Re)initializations so far: the generation of the ready session. A request that finds
    /// its session lost names the generation it used, so one loss causes one re-initialization.
    generation: u64,
    /// What the last handshake told (kept while unready: the last known facts).
    handshake: Handshake,
}

/// What one request needs of the session, copied out of it ([`SessionState::context`]):
/// holding it holds no borrow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RequestContext {
    /// The generation of `session` (see [`SessionState::lost`]).
    pub(super) generation: u64,
    pub(super) session: Ready,
}

impl RequestContext {
    pub(super) fn era(&self) -> Era {
        self.session.era()
    }

    pub(super) fn envelope(&self) -> Envelope<'_> {
        self.session.envelope()
    }
}

impl SessionState {
    /// Unready, with the era found last time (from the manifest) as the hint.
    pub(super) fn new(hint: Option<Era>) -> Self {
        SessionState {
            session: Session::Unready { hint },
            generation: 0,
            handshake: Handshake::default(),
        }
    }

    /// The ready session, if there is one.
    pub(super) fn context(&self) -> Option<RequestContext> {
        match &self.session {
            Session::Ready(ready) => Some(RequestContext {
                generation: self.generation,
                session: ready.clone(),
            }),
            Session::Unready { .. } => None,
        }
    }

    /// The era: the ready session's, or the hint.
    pub(super) fn era(&self) -> Option<Era> {
        match &self.session {
            Session::Ready(ready) => Some(ready.era()),
            Session::Unready { hint } => *hint,
        }
    }

    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    pub(super) fn instructions(&self) -> Option<&str> {
        self.handshake.instructions.as_deref()
    }

    pub(super) fn list_changed(&self) -> bool {
        self.handshake.list_changed
    }

    /// The probe found `era`: the hint for this handshake (and, if it fails, the next).
    pub(super) fn probed(&mut self, era: Era) {
        if let Session::Unready { hint } = &mut self.session {
            *hint = Some(era);
        }
    }

    /// The hint is in doubt (a legacy hint's `initialize` was refused): the next handshake
    /// probes.
    pub(super) fn forget_era(&mut self) {
        if let Session::Unready { hint } = &mut self.session {
            *hint = None;
        }
    }

    /// `initialize` succeeded: a new legacy session.
    pub(super) fn became_legacy(&mut self, id: Option<String>, version: String, told: Handshake) -> RequestContext {
        self.became(Ready::Legacy { id, version }, told)
    }

    /// The probe found a modern upstream: ready, with no session.
    pub(super) fn became_modern(&mut self, told: Handshake) -> RequestContext {
        self.became(Ready::Modern, told)
    }

    fn became(&mut self, ready: Ready, told: Handshake) -> RequestContext {
        self.generation += 1;
        self.session = Session::Ready(ready.clone());
        self.handshake = told;
        RequestContext {
            generation: self.generation,
            session: ready,
        }
    }

    /// The session of `generation` failed (lost, or the upstream changed era). If another one
    /// is ready since, that one is returned and nothing changes; otherwise the session is
    /// dropped, keeping its era as the hint unless `forget_era`.
    pub(super) fn lost(&mut self, generation: u64, forget_era: bool) -> Option<RequestContext> {
        if let Some(ctx) = self.context().filter(|c| c.generation != generation) {
            return Some(ctx);
        }
        let era = self.era();
        self.session = Session::Unready {
            hint: if forget_era { None } else { era },
        };
        None
    }

    /// Ends a sticky legacy session: unready, and its id and version are returned (for the
    /// `DELETE`). Other states have no session to end and stay as they are.
    pub(super) fn ended(&mut self) -> Option<(String, String)> {
        let unready = Session::Unready {
            hint: Some(Era::Legacy),
        };
        match std::mem::replace(&mut self.session, unready) {
            Session::Ready(Ready::Legacy { id: Some(id), version }) => Some((id, version)),
            other => {
                self.session = other;
                None
            }
        }
    }
}

mod cell {
    use std::cell::RefCell;
    use std::future::Future;

    use mcp_wire::Era;

    use super::{Handshake, RequestContext, SessionState};

    /// The session of one upstream, shared by the actor's in-flight requests: its single
    /// writer.
    ///
    /// Why it is shared rather than the actor's own field: the actor's handlers return futures
    /// that run concurrently on the actor's thread (a slow `tools/call` never blocks a
    /// `tools/list`), and the session changes mid-flight, by whichever of them meets the event:
    /// the first request's handshake, a request that finds its session lost or its era
    /// changed, the list-change follower's 404, `EndSession`. A message to the actor for each
    /// would queue the handshake and the retry behind the mailbox's calls.
    ///
    /// What keeps it plain: it is not `Send` (one thread); the state is changed only through
    /// the named transitions below, each a non-`async` step whose result cannot borrow the
    /// state (no borrow spans an await); and handshakes are single-flight
    /// ([`handshake_once`](Self::handshake_once)): concurrent requests share one.
    pub(in crate::upstream) struct SessionCell {
        state: RefCell<SessionState>,
        /// Held across a handshake's awaits, so that one runs at a time.
        handshake: tokio::sync::Mutex<()>,
    }

    impl SessionCell {
        /// Unready, with the era found last time (from the manifest) as the hint.
        pub(in crate::upstream) fn new(hint: Option<Era>) -> Self {
            SessionCell {
                state: RefCell::new(SessionState::new(hint)),
                handshake: tokio::sync::Mutex::new(()),
            }
        }

        /// Reads the state (the closure must not reach this cell again).
        pub(in crate::upstream) fn read<R>(&self, f: impl FnOnce(&SessionState) -> R) -> R {
            f(&self.state.borrow())
        }

        /// The ready session, if there is one ([`SessionState::context`]).
        pub(in crate::upstream) fn context(&self) -> Option<RequestContext> {
            self.read(SessionState::context)
        }

        /// [`SessionState::probed`].
        pub(in crate::upstream) fn probed(&self, era: Era) {
            self.state.borrow_mut().probed(era);
        }

        /// [`SessionState::forget_era`].
        pub(in crate::upstream) fn forget_era(&self) {
            self.state.borrow_mut().forget_era();
        }

        /// [`SessionState::became_legacy`].
        pub(in crate::upstream) fn became_legacy(
            &self,
            id: Option<String>,
            version: String,
            told: Handshake,
        ) -> RequestContext {
            self.state.borrow_mut().became_legacy(id, version, told)
        }

        /// [`SessionState::became_modern`].
        pub(in crate::upstream) fn became_modern(&self, told: Handshake) -> RequestContext {
            self.state.borrow_mut().became_modern(told)
        }

        /// [`SessionState::lost`].
        pub(in crate::upstream) fn lost(&self, generation: u64, forget_era: bool) -> Option<RequestContext> {
            self.state.borrow_mut().lost(generation, forget_era)
        }

        /// [`SessionState::ended`].
        pub(in crate::upstream) fn ended(&self) -> Option<(String, String)> {
            self.state.borrow_mut().ended()
        }

        /// Single-flight handshake: waits for the one in flight, then `ready` (which may make a
        /// transition, such as [`lost`](Self::lost)) says whether a session is there to use;
        /// only if not does `handshake` run, while the others wait. The caller bounds the whole
        /// (waiting included) by the upstream's timeout; dropping it frees the lock.
        pub(in crate::upstream) async fn handshake_once<E, F>(
            &self,
            ready: impl FnOnce(&Self) -> Option<RequestContext>,
            handshake: impl FnOnce() -> F,
        ) -> Result<RequestContext, E>
        where
            F: Future<Output = Result<RequestContext, E>>,
        {
            let _one_at_a_time = self.handshake.lock().await;
            match ready(self) {
                Some(ctx) => Ok(ctx),
                None => handshake().await,
            }
        }
    }
}

/// The name the proxy gives itself upstream (`clientInfo`, the modern `_meta`).
pub(super) const CLIENT_NAME: &str = "mcp-search-proxy";

// What an upstream can make the proxy hold (it is trusted no more than a client).

/// The upstream's `instructions`: a longer text is cut (at a character boundary) and says so.
const MAX_INSTRUCTIONS_BYTES: usize = 8192;

/// The upstream's `instructions`, cut at a character boundary to at most
/// [`MAX_INSTRUCTIONS_BYTES`] (plus a note saying so): long instructions are kept usable rather
/// than refused, since an upstream is not broken for being verbose.
fn capped_instructions(text: &str) -> String {
    if text.len() <= MAX_INSTRUCTIONS_BYTES {
        return text.to_string();
    }
    let mut end = MAX_INSTRUCTIONS_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[truncated by {CLIENT_NAME}: the upstream's instructions exceed {MAX_INSTRUCTIONS_BYTES} bytes]",
        &text[..end]
    )
}

/// Whether an initialize/discover result advertises `capabilities.tools.listChanged`.
fn advertises_list_changed(result: &Value) -> bool {
    result
        .pointer("/capabilities/tools/listChanged")
        .and_then(Value::as_bool)
        == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_instructions_are_cut_at_a_character_boundary_and_say_so() {
        assert_eq!(capped_instructions("Use the tools."), "Use the tools.");
        let long = "é".repeat(MAX_INSTRUCTIONS_BYTES); // two bytes each
        let cut = capped_instructions(&long);
        let (kept, note) = cut.split_once('\n').unwrap();
        assert_eq!(kept.len(), MAX_INSTRUCTIONS_BYTES);
        assert!(kept.chars().all(|c| c == 'é'));
        assert!(note.contains("truncated") && note.contains("8192 bytes"), "{note}");
        let odd = format!("a{}", "é".repeat(MAX_INSTRUCTIONS_BYTES));
        let (kept, _) = capped_instructions(&odd)
            .split_once('\n')
            .map(|(k, n)| (k.to_string(), n.to_string()))
            .unwrap();
        assert_eq!(kept.len(), MAX_INSTRUCTIONS_BYTES - 1, "never half a character");
    }

    #[test]
    fn a_handshake_tells_instructions_and_list_changes() {
        let told = Handshake::of(&json!({"instructions": "Use it.", "capabilities": {"tools": {"listChanged": true}}}));
        assert_eq!(told.instructions.as_deref(), Some("Use it."));
        assert!(told.list_changed);
        assert_eq!(
            Handshake::of(&json!({"capabilities": {"tools": {}}})),
            Handshake::default()
        );
    }

    fn legacy(id: Option<&str>) -> Ready {
        Ready::Legacy {
            id: id.map(str::to_string),
            version: "2025-06-18".into(),
        }
    }

    #[test]
    fn the_session_moves_only_by_its_transitions() {
        let mut s = SessionState::new(Some(Era::Legacy));
        assert_eq!(
            (s.context(), s.era()),
            (None, Some(Era::Legacy)),
            "a hint is not a session"
        );

        let told = Handshake {
            instructions: Some("i".into()),
            list_changed: true,
        };
        let ctx = s.became_legacy(Some("s1".into()), "2025-06-18".into(), told.clone());
        assert_eq!(ctx.generation, 1);
        assert_eq!(ctx.session, legacy(Some("s1")));
        assert_eq!(
            ctx.envelope(),
            Envelope::Legacy {
                session_id: Some("s1"),
                version: "2025-06-18"
            }
        );
        assert!(ctx.session.has_session_id());
        assert_eq!((s.instructions(), s.list_changed()), (Some("i"), true));

        // A loss seen at an older generation is already handled: the current session stays.
        assert_eq!(s.lost(0, false), Some(ctx.clone()));
        // The loss of the current one: unready, the era kept as the hint, the facts kept.
        assert_eq!(s.lost(1, false), None);
        assert_eq!(
            s.session,
            Session::Unready {
                hint: Some(Era::Legacy)
            }
        );
        assert_eq!(s.instructions(), Some("i"));
        // A loss while unready changes nothing but the hint.
        assert_eq!(s.lost(1, true), None);
        assert_eq!(s.session, Session::Unready { hint: None });

        s.probed(Era::Modern);
        assert_eq!(s.era(), Some(Era::Modern));
        let ctx = s.became_modern(Handshake::default());
        assert_eq!((ctx.generation, ctx.era()), (2, Era::Modern));
        assert_eq!(ctx.envelope(), Envelope::Modern);
        assert_eq!(ctx.session.protocol_version(), modern::LATEST_MODERN);
        assert!(!ctx.session.has_session_id());
        assert!(!s.list_changed(), "the new handshake's facts replace the old");
        s.probed(Era::Legacy);
        assert_eq!(
            s.era(),
            Some(Era::Modern),
            "a probe result does not change a ready session"
        );
        // The upstream changed era: the hint is forgotten.
        assert_eq!(s.lost(2, true), None);
        assert_eq!(s.era(), None);
    }

    #[test]
    fn only_a_sticky_legacy_session_ends() {
        let mut s = SessionState::new(None);
        assert_eq!(s.ended(), None);
        s.became_modern(Handshake::default());
        assert_eq!(s.ended(), None);
        assert!(s.context().is_some(), "a modern upstream has no session to end");
        s.became_legacy(None, "2025-06-18".into(), Handshake::default());
        assert_eq!(s.ended(), None);
        assert_eq!(
            s.context().map(|c| c.session),
            Some(legacy(None)),
            "stateless: stays ready"
        );
        s.became_legacy(Some("s9".into()), "2025-06-18".into(), Handshake::default());
        assert_eq!(s.ended(), Some(("s9".to_string(), "2025-06-18".to_string())));
        assert_eq!(
            s.session,
            Session::Unready {
                hint: Some(Era::Legacy)
            }
        );
        assert_eq!(s.generation(), 3, "ending is not a handshake");
    }

    #[tokio::test]
    async fn concurrent_requests_share_one_handshake() {
        let cell = SessionCell::new(None);
        let handshakes = std::cell::Cell::new(0);
        let connect = || async {
            handshakes.set(handshakes.get() + 1);
            tokio::task::yield_now().await; // the others arrive while this one is in flight
            Ok::<_, ()>(cell.became_modern(Handshake::default()))
        };
        let all = (0..8).map(|_| cell.handshake_once(SessionCell::context, connect));
        let got = futures_util::future::join_all(all).await;
        assert_eq!(handshakes.get(), 1, "one handshake for eight waiters");
        assert!(got.iter().all(|r| r.as_ref().map(|c| c.generation) == Ok(1)));
    }

    #[tokio::test]
    async fn a_loss_reported_twice_resets_once() {
        let cell = SessionCell::new(Some(Era::Legacy));
        let initialize =
            || async { Ok::<_, ()>(cell.became_legacy(Some("s".into()), "2025-06-18".into(), Handshake::default())) };
        let first = cell.handshake_once(SessionCell::context, initialize).await.unwrap();
        // Two requests of generation 1 find it lost: the first resets, the second gets that.
        let reset = |c: &SessionCell| c.lost(first.generation, false);
        let a = cell.handshake_once(reset, initialize).await.unwrap();
        let b = cell.handshake_once(reset, initialize).await.unwrap();
        assert_eq!((a.generation, b.generation), (2, 2));
        // The list-change follower's late 404 for generation 1 changes nothing either.
        assert_eq!(cell.lost(1, false), Some(a));
    }

    #[tokio::test]
    async fn a_failed_handshake_leaves_the_next_to_try() {
        let cell = SessionCell::new(None);
        let failed = cell
            .handshake_once(SessionCell::context, || async { Err("refused") })
            .await;
        assert_eq!(failed, Err("refused"));
        assert_eq!(cell.context(), None);
        let ok = cell
            .handshake_once(SessionCell::context, || async {
                Ok::<_, &str>(cell.became_modern(Handshake::default()))
            })
            .await;
        assert_eq!(ok.map(|c| c.generation), Ok(1));
        // Ended only a sticky legacy session: a modern one stays ready.
        assert_eq!(cell.ended(), None);
        assert!(cell.context().is_some());
    }

    #[tokio::test]
    async fn a_hung_handshake_given_up_frees_the_lock() {
        let cell = SessionCell::new(None);
        let hung = cell.handshake_once(SessionCell::context, std::future::pending::<Result<RequestContext, ()>>);
        let bounded = tokio::time::timeout(std::time::Duration::from_millis(10), hung).await;
        assert!(bounded.is_err(), "still hung at the bound");
        let next = cell.handshake_once(SessionCell::context, || async {
            Ok::<_, ()>(cell.became_modern(Handshake::default()))
        });
        let next = tokio::time::timeout(std::time::Duration::from_secs(5), next).await;
        assert_eq!(
            next.map(|r| r.map(|c| c.generation)),
            Ok(Ok(1)),
            "the next one handshakes"
        );
    }
}
