//! The catalog actor: its configuration, its messages and the refresh state machine that
//! sequences fan-outs (the pure part of a fan-out is in [`super::refresh`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::oneshot;
// tokio's clock (the same as std's, but a test can pause it and drive the timers).
use tokio::time::Instant;

use proxy_core::catalog::report::{upstream_reports, LastErrors, RefreshFailure, RefreshReason, RefreshReport};
use proxy_core::catalog::snapshot::{Snapshot, UpstreamState};
use proxy_core::catalog::{index_file, manifest};
use proxy_core::policy::Policy;
use proxy_metrics::{Metrics, RefreshOutcome};

use super::refresh::{apply_fanout, effective_ttl, jitter, now_ms};
use crate::upstream::{Describe, UpstreamError};
use crate::upstream::{FollowListChanges, ListTools, Listing, ToolsChanged, UpstreamActor};

/// Catalog behaviour settings.
#[derive(Debug, Clone)]
pub struct CatalogConfig {
    pub manifest_path: Option<PathBuf>,
    /// Background refresh period (jittered ±10%); `None` = only explicit and unknown-tool refreshes.
    pub ttl: Option<Duration>,
    /// An unknown-tool refresh is skipped when the last fan-out finished this recently.
    pub unknown_tool_cooldown: Duration,
    /// Which tools are served at all, and which are pinned into `tools/list`.
    pub policy: Policy,
    /// At most one fan-out per this period for client and upstream triggers (`mcp_refresh`,
    /// list changes): an explicit refresh while one runs joins it, one within the period after
    /// the last fan-out started is answered with the current catalog (`ran: false`, a note),
    /// and list changes wait for the period to end. Zero disables the limit.
    pub min_refresh_interval: Duration,
    /// Where refresh outcomes and durations are counted (the process's one [`Metrics`]).
    pub metrics: Arc<Metrics>,
    /// How a failed listing is told in the refresh report (`last_error`): the service's edge
    /// adds the advice naming a setting; by default the error's own text.
    pub describe: Describe,
}

impl Default for CatalogConfig {
    fn default() -> Self {
        CatalogConfig {
            manifest_path: None,
            ttl: None,
            unknown_tool_cooldown: Duration::from_secs(2),
            policy: Policy::default(),
            min_refresh_interval: DEFAULT_MIN_REFRESH_INTERVAL,
            metrics: Arc::default(),
            describe: |e| e.to_string(),
        }
    }
}

/// Default of [`CatalogConfig::min_refresh_interval`].
pub const DEFAULT_MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(5);

/// The catalog's link to one upstream actor.
#[derive(Clone)]
pub struct UpstreamHandle {
    pub label: String,
    pub url: String,
    pub addr: Addr<UpstreamActor>,
}

/// What the catalog needs of one upstream: its label and URL, and where its two messages go
/// (an [`UpstreamActor`], or a test's fake).
#[derive(Clone)]
struct Lister {
    label: String,
    url: String,
    list: Recipient<ListTools>,
    follow: Recipient<FollowListChanges>,
}

impl From<UpstreamHandle> for Lister {
    fn from(h: UpstreamHandle) -> Lister {
        Lister {
            list: h.addr.clone().recipient(),
            follow: h.addr.recipient(),
            label: h.label,
            url: h.url,
        }
    }
}

/// Asks for a fan-out refresh and waits for its outcome.
#[derive(Message)]
#[rtype(result = "Result<RefreshReport, RefreshFailure>")]
pub struct Refresh {
    pub reason: RefreshReason,
    /// For unknown-tool refreshes: the generation the caller looked at. If the catalog has
    /// moved on since (or refreshed within the cool-down), no new fan-out is started.
    pub seen_generation: Option<u64>,
}

type Waiter = oneshot::Sender<Result<RefreshReport, RefreshFailure>>;

enum RefreshState {
    Idle,
    Running {
        /// When the in-flight fan-out started (triggers shortly after it simply join it).
        started: Instant,
        waiters: Vec<Waiter>,
        queued: Option<(RefreshReason, Vec<Waiter>)>,
    },
}

/// A trigger this soon after a fan-out started joins it instead of queueing another: the
/// upstreams are still answering requests sent at (practically) the same moment.
const JOIN_WINDOW: Duration = Duration::from_millis(250);

pub struct CatalogActor {
    cfg: CatalogConfig,
    upstreams: Vec<Lister>,
    snapshot: Arc<Snapshot>,
    /// Every snapshot swapped in is also published here, so readers need no message.
    published: tokio::sync::watch::Sender<Arc<Snapshot>>,
    state: RefreshState,
    last_started: Option<Instant>,
    last_finished: Option<Instant>,
    /// Fan-outs started since the actor was created (observability and tests).
    fanouts: u64,
    /// Back-off of the retry scheduled while some upstream has never answered (an upstream
    /// started after the proxy must not wait a whole TTL to be listed).
    retry_backoff: Option<Duration>,
    /// The pending retry timer, so a newer one replaces it instead of piling up.
    retry_timer: Option<SpawnHandle>,
    /// A list-changed refresh is scheduled (changes within the debounce window coalesce).
    list_changed_pending: bool,
    /// Each upstream's error at its last attempt (see [`LastErrors`]).
    last_errors: LastErrors,
    /// When the pending retry and the next background refresh are due, for the reports.
    retry_due: Option<Instant>,
    ttl_due: Option<Instant>,
}

/// Upstream list-change notifications within this window make one refresh.
const LIST_CHANGED_DEBOUNCE: Duration = Duration::from_millis(500);

/// First and last delay of the retry for upstreams that never answered.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);

impl CatalogActor {
    /// The current snapshot, readable from any thread without a message (an `Arc` clone under
    /// a read lock held for nanoseconds); it changes whenever a refresh swaps one in.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Arc<Snapshot>> {
        self.published.subscribe()
    }

    /// Creates the actor from an already loaded manifest.
    pub fn with_manifest(
        cfg: CatalogConfig,
        upstreams: Vec<UpstreamHandle>,
        manifest: Option<manifest::Manifest>,
    ) -> CatalogActor {
        Self::listing(cfg, upstreams.into_iter().map(Lister::from).collect(), manifest)
    }

    fn listing(cfg: CatalogConfig, upstreams: Vec<Lister>, manifest: Option<manifest::Manifest>) -> CatalogActor {
        let configured: Vec<(String, String)> = upstreams.iter().map(|u| (u.label.clone(), u.url.clone())).collect();
        let states = match manifest {
            Some(m) => m.into_states(&configured),
            None => configured
                .iter()
                .map(|(label, url)| UpstreamState {
                    label: label.clone(),
                    url: url.clone(),
                    ..Default::default()
                })
                .collect(),
        };
        // With a manifest, the index persisted beside it is loaded if it is this build's for
        // these tools; else it is built, and persisted for the next start.
        let snapshot = match &cfg.manifest_path {
            Some(path) => {
                let shown = index_file::path_for(path).display().to_string();
                let load = |key: &str| match index_file::load(path, index_file::build_identity(), key) {
                    Ok(index) => {
                        if index.is_some() {
                            log::info!(path = shown.as_str(); "search index loaded");
                        }
                        index
                    }
                    Err(e) => {
                        log::info!(path = shown.as_str(), reason = e.to_string().as_str(); "search index file not used; building the index");
                        None
                    }
                };
                let snapshot = Snapshot::build_loading(states, 0, &cfg.policy, &load);
                if snapshot.index_built && !snapshot.tools.is_empty() {
                    super::refresh::persist_index(path, &snapshot);
                }
                snapshot
            }
            None => Snapshot::build(states, 0, &cfg.policy),
        };
        let snapshot = Arc::new(snapshot);
        // The manifest's text and the index build's tables are garbage now.
        heap::release();
        let published = tokio::sync::watch::channel(snapshot.clone()).0;
        CatalogActor {
            cfg,
            upstreams,
            snapshot,
            published,
            state: RefreshState::Idle,
            last_started: None,
            last_finished: None,
            fanouts: 0,
            retry_backoff: None,
            retry_timer: None,
            list_changed_pending: false,
            last_errors: LastErrors::default(),
            retry_due: None,
            ttl_due: None,
        }
    }

    /// The background refresh period: `CATALOG_TTL_SEC`, shortened to the smallest `ttlMs` a
    /// modern upstream asked for (never below `MIN_TTL`). `None` when background refresh is off.
    fn effective_ttl(&self) -> Option<Duration> {
        effective_ttl(self.cfg.ttl, self.snapshot.upstreams.iter().filter_map(|u| u.ttl_ms))
    }

    fn trigger(&mut self, reason: RefreshReason, waiter: Option<Waiter>, ctx: &mut Context<Self>) {
        match &mut self.state {
            RefreshState::Idle => {
                self.state = RefreshState::Running {
                    started: Instant::now(),
                    waiters: waiter.into_iter().collect(),
                    queued: None,
                };
                self.start_fanout(reason, ctx);
            }
            RefreshState::Running {
                started,
                waiters,
                queued,
            } => {
                if queued.is_none() && started.elapsed() < JOIN_WINDOW {
                    waiters.extend(waiter);
                } else {
                    let q = queued.get_or_insert_with(|| (reason, Vec::new()));
                    q.1.extend(waiter);
                }
            }
        }
    }

    fn start_fanout(&mut self, reason: RefreshReason, ctx: &mut Context<Self>) {
        self.fanouts += 1;
        self.last_started = Some(Instant::now());
        let started = Instant::now();
        let handles = self.upstreams.clone();
        let previous = self.snapshot.clone();
        let manifest_path = self.cfg.manifest_path.clone();
        let policy = self.cfg.policy.clone();
        let describe = self.cfg.describe;
        log::debug!(reason = reason.as_str(); "catalog refresh started");
        let fut = async move {
            // Each snapshot entry is listed by the upstream actor of the same label.
            let calls = previous.upstreams.iter().map(|state| {
                let addr = handles.iter().find(|h| h.label == state.label).map(|h| h.list.clone());
                let msg = ListTools {
                    previous: state.tools.clone(),
                };
                let label = state.label.clone();
                async move {
                    let result = match addr {
                        Some(addr) => addr.send(msg).await.unwrap_or(Err(UpstreamError::Unavailable)),
                        None => Err(UpstreamError::Unavailable),
                    };
                    (label, result)
                }
            });
            let results: Vec<(String, Result<Listing, UpstreamError>)> = futures_util::future::join_all(calls).await;
            let work = move || {
                let out = apply_fanout(
                    &previous,
                    results,
                    reason,
                    started.into_std(),
                    manifest_path.as_deref(),
                    &policy,
                    describe,
                );
                // The build's tables and the merged listings are garbage now (see the heap crate).
                heap::release();
                out
            };
            match tokio::task::spawn_blocking(work).await {
                Ok(r) => r,
                Err(e) => Err(RefreshFailure {
                    message: format!("catalog rebuild failed: {e}"),
                    upstreams: Vec::new(),
                }),
            }
        };
        ctx.spawn(
            fut.into_actor(self)
                .map(move |outcome, act, ctx| act.finish(outcome, reason, started.elapsed(), ctx)),
        );
    }

    fn finish(
        &mut self,
        outcome: Result<(Snapshot, RefreshReport), RefreshFailure>,
        reason: RefreshReason,
        took: Duration,
        ctx: &mut Context<Self>,
    ) {
        self.last_finished = Some(Instant::now());
        let counted = match &outcome {
            Ok((_, report)) if report.upstreams.iter().all(|u| u.ok) => RefreshOutcome::Ok,
            Ok(_) => RefreshOutcome::Partial,
            Err(_) => RefreshOutcome::Failed,
        };
        self.cfg.metrics.refresh(counted, reason.as_str(), took);
        let mut result = match outcome {
            Ok((snapshot, report)) => {
                self.snapshot = Arc::new(snapshot);
                drop(self.published.send_replace(self.snapshot.clone()));
                // Usually the previous snapshot's last reference, just dropped.
                heap::release();
                Ok(report)
            }
            Err(failure) => Err(failure),
        };
        let (waiters, queued) = match std::mem::replace(&mut self.state, RefreshState::Idle) {
            RefreshState::Running { waiters, queued, .. } => (waiters, queued),
            RefreshState::Idle => (Vec::new(), None),
        };
        if let Some((reason, waiters)) = queued {
            self.state = RefreshState::Running {
                started: Instant::now(),
                waiters,
                queued: None,
            };
            self.start_fanout(reason, ctx);
        } else {
            self.schedule_retry_if_incomplete(ctx);
        }
        let upstreams = match &mut result {
            Ok(report) => &mut report.upstreams,
            Err(failure) => &mut failure.upstreams,
        };
        self.last_errors.record(upstreams);
        self.last_errors.apply(upstreams, self.next_attempt_in());
        for w in waiters {
            let _ = w.send(result.clone());
        }
    }

    /// How long until the catalog lists its upstreams again: now while a fan-out runs, else
    /// the earlier of the pending retry and the next background refresh.
    fn next_attempt_in(&self) -> Option<Duration> {
        if matches!(self.state, RefreshState::Running { .. }) {
            return Some(Duration::ZERO);
        }
        let now = Instant::now();
        [self.retry_due, self.ttl_due]
            .into_iter()
            .flatten()
            .min()
            .map(|due| due.saturating_duration_since(now))
    }

    /// While an upstream has never answered, retry with exponential back-off (1 s … 60 s).
    fn schedule_retry_if_incomplete(&mut self, ctx: &mut Context<Self>) {
        if let Some(timer) = self.retry_timer.take() {
            ctx.cancel_future(timer);
        }
        let incomplete = self.snapshot.upstreams.iter().any(|u| u.listed_at_ms.is_none());
        if !incomplete {
            self.retry_backoff = None;
            self.retry_due = None;
            return;
        }
        let delay = self.retry_backoff.map_or(RETRY_FIRST, |d| (d * 2).min(RETRY_MAX));
        self.retry_backoff = Some(delay);
        self.retry_due = Some(Instant::now() + delay);
        self.retry_timer = Some(ctx.run_later(delay, |act, ctx| {
            act.retry_timer = None;
            act.retry_due = None;
            if matches!(act.state, RefreshState::Idle) {
                act.trigger(RefreshReason::Retry, None, ctx);
            }
        }));
    }

    fn schedule_ttl(&mut self, ctx: &mut Context<Self>) {
        if let Some(ttl) = self.effective_ttl() {
            let delay = jitter(ttl);
            self.ttl_due = Some(Instant::now() + delay);
            ctx.run_later(delay, |act, ctx| {
                act.trigger(RefreshReason::Ttl, None, ctx);
                act.schedule_ttl(ctx);
            });
        }
    }

    /// A report for a refresh request answered without a fan-out: the current catalog, each
    /// upstream's last error and when it is tried again.
    fn fresh_report(&self, reason: RefreshReason) -> RefreshReport {
        let s = &self.snapshot;
        let mut upstreams = upstream_reports(&s.upstreams, now_ms());
        self.last_errors.apply(&mut upstreams, self.next_attempt_in());
        RefreshReport {
            reason,
            ran: false,
            fingerprint: s.fingerprint.clone(),
            previous_fingerprint: s.fingerprint.clone(),
            changed: false,
            total_tools: s.tools.len(),
            sources: s.counts_by_source(),
            upstreams,
            collisions: s.collisions.clone(),
            added: Vec::new(),
            removed: Vec::new(),
            modified: Vec::new(),
            duration_ms: 0,
            note: None,
        }
    }
}

impl Actor for CatalogActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.trigger(RefreshReason::Startup, None, ctx);
        self.schedule_ttl(ctx);
        let me = ctx.address().recipient::<ToolsChanged>();
        for u in &self.upstreams {
            u.follow.do_send(FollowListChanges { to: me.clone() });
        }
    }
}

impl Handler<ToolsChanged> for CatalogActor {
    type Result = ();

    fn handle(&mut self, msg: ToolsChanged, ctx: &mut Self::Context) {
        log::debug!(upstream = msg.label.as_str(); "list change reported");
        if self.list_changed_pending {
            return;
        }
        self.list_changed_pending = true;
        // An upstream that keeps announcing changes gets at most one fan-out per period.
        let wait = self
            .last_started
            .map(|t| self.cfg.min_refresh_interval.saturating_sub(t.elapsed()))
            .unwrap_or_default()
            .max(LIST_CHANGED_DEBOUNCE);
        ctx.run_later(wait, |act, ctx| {
            act.list_changed_pending = false;
            act.trigger(RefreshReason::ListChanged, None, ctx);
        });
    }
}

/// Refresh activity, for observability and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogStatus {
    /// Fan-outs started since the actor was created.
    pub fanouts: u64,
    /// Whether a fan-out is in flight now.
    pub refreshing: bool,
    /// Generation of the current snapshot.
    pub generation: u64,
}

#[derive(Message)]
#[rtype(result = "CatalogStatus")]
pub struct GetCatalogStatus;

impl Handler<GetCatalogStatus> for CatalogActor {
    type Result = MessageResult<GetCatalogStatus>;

    fn handle(&mut self, _: GetCatalogStatus, _: &mut Self::Context) -> Self::Result {
        MessageResult(CatalogStatus {
            fanouts: self.fanouts,
            refreshing: matches!(self.state, RefreshState::Running { .. }),
            generation: self.snapshot.generation,
        })
    }
}

impl Handler<Refresh> for CatalogActor {
    type Result = ResponseFuture<Result<RefreshReport, RefreshFailure>>;

    fn handle(&mut self, msg: Refresh, ctx: &mut Self::Context) -> Self::Result {
        if msg.reason == RefreshReason::UnknownTool {
            let moved_on = msg.seen_generation.is_some_and(|g| g != self.snapshot.generation);
            let cooling = matches!(self.state, RefreshState::Idle)
                && self
                    .last_finished
                    .is_some_and(|t| t.elapsed() < self.cfg.unknown_tool_cooldown);
            if moved_on || cooling {
                let report = self.fresh_report(msg.reason);
                return Box::pin(async move { Ok(report) });
            }
        }
        let (tx, rx) = oneshot::channel();
        let limited = matches!(msg.reason, RefreshReason::Explicit | RefreshReason::UnknownTool)
            && !self.cfg.min_refresh_interval.is_zero();
        match &mut self.state {
            // A client cannot make the proxy re-list every upstream in a loop.
            RefreshState::Running { waiters, .. } if limited => waiters.push(tx),
            RefreshState::Idle
                if limited
                    && self
                        .last_started
                        .is_some_and(|t| t.elapsed() < self.cfg.min_refresh_interval) =>
            {
                let mut report = self.fresh_report(msg.reason);
                let ago = self.last_started.map(|t| t.elapsed().as_secs_f64()).unwrap_or(0.0);
                report.note = Some(format!(
                    "not re-listed: the catalog was refreshed {ago:.1} s ago and is refreshed at most once per {} s; this is the current catalog",
                    self.cfg.min_refresh_interval.as_secs_f64()
                ));
                return Box::pin(async move { Ok(report) });
            }
            _ => self.trigger(msg.reason, Some(tx), ctx),
        }
        Box::pin(async move {
            rx.await.unwrap_or_else(|_| {
                Err(RefreshFailure {
                    message: "the catalog stopped before the refresh finished".into(),
                    upstreams: Vec::new(),
                })
            })
        })
    }
}

/// Reads the manifest at `path`, logging what happened; `None` if absent or unusable (the
/// catalog then starts empty, and the file is replaced after the first good refresh).
pub fn load_manifest_logged(path: &std::path::Path) -> Option<manifest::Manifest> {
    let removed = manifest::remove_stale_temp_files(path);
    if removed > 0 {
        log::warn!(path = path.display().to_string().as_str(), files = removed; "removed temp files of interrupted manifest writes");
    }
    match manifest::load(path) {
        Ok(Some(m)) => {
            let n: usize = m.upstreams.iter().map(|u| u.tools.len()).sum();
            log::info!(path = path.display().to_string().as_str(), tools = n; "manifest loaded");
            Some(m)
        }
        Ok(None) => {
            log::info!(path = path.display().to_string().as_str(); "no manifest yet; the catalog starts empty");
            None
        }
        Err(e) => {
            log::warn!(error = e.to_string().as_str(); "manifest ignored; the catalog starts empty");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    //! The refresh state machine on the actix test runtime, with tokio's clock paused (it
    //! moves only when every task waits, straight to the next timer) and fake upstreams.

    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    use mcp_wire::types::Tool;
    use mcp_wire::Era;

    use super::*;

    /// An upstream that answers `ListTools` after `delay` with `answer`, counting listings.
    struct FakeLister {
        delay: Duration,
        answer: Rc<RefCell<Result<Vec<&'static str>, UpstreamError>>>,
        listed: Rc<Cell<usize>>,
        followed: Rc<Cell<usize>>,
    }

    impl Actor for FakeLister {
        type Context = Context<Self>;
    }

    impl Handler<ListTools> for FakeLister {
        type Result = ResponseFuture<Result<Listing, UpstreamError>>;

        fn handle(&mut self, _: ListTools, _: &mut Self::Context) -> Self::Result {
            self.listed.set(self.listed.get() + 1);
            let (delay, answer) = (self.delay, self.answer.borrow().clone());
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                answer.map(|names| Listing {
                    tools: names.into_iter().map(tool).collect(),
                    instructions: None,
                    era: Era::Legacy,
                    protocol_version: "2025-06-18".into(),
                    ttl_ms: None,
                })
            })
        }
    }

    impl Handler<FollowListChanges> for FakeLister {
        type Result = ();

        fn handle(&mut self, _: FollowListChanges, _: &mut Self::Context) {
            self.followed.set(self.followed.get() + 1);
        }
    }

    fn tool(name: &str) -> Arc<Tool> {
        Arc::new(serde_json::from_value(serde_json::json!({"name": name, "description": "A tool."})).unwrap())
    }

    /// One fake upstream, as the test sees it.
    struct Fake {
        answer: Rc<RefCell<Result<Vec<&'static str>, UpstreamError>>>,
        listed: Rc<Cell<usize>>,
        followed: Rc<Cell<usize>>,
    }

    fn fake(label: &str, delay: Duration, tools: Vec<&'static str>) -> (Lister, Fake) {
        let answer = Rc::new(RefCell::new(Ok(tools)));
        let (listed, followed) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let addr = FakeLister {
            delay,
            answer: answer.clone(),
            listed: listed.clone(),
            followed: followed.clone(),
        }
        .start();
        let lister = Lister {
            label: label.into(),
            url: format!("http://{label}.test/mcp"),
            list: addr.clone().recipient(),
            follow: addr.recipient(),
        };
        (
            lister,
            Fake {
                answer,
                listed,
                followed,
            },
        )
    }

    /// A started catalog over `listers` and its snapshot channel.
    fn catalog(
        cfg: CatalogConfig,
        listers: Vec<Lister>,
    ) -> (Addr<CatalogActor>, tokio::sync::watch::Receiver<Arc<Snapshot>>) {
        let actor = CatalogActor::listing(cfg, listers, None);
        let rx = actor.subscribe();
        (actor.start(), rx)
    }

    fn refresh(reason: RefreshReason, seen_generation: Option<u64>) -> Refresh {
        Refresh {
            reason,
            seen_generation,
        }
    }

    async fn sleep_ms(ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    #[actix::test]
    async fn startup_lists_every_upstream_once_and_publishes_generation_one() {
        tokio::time::pause();
        let (a, fa) = fake("a", Duration::ZERO, vec!["x", "y"]);
        let (b, fb) = fake("b", Duration::ZERO, vec!["z"]);
        let (addr, mut rx) = catalog(CatalogConfig::default(), vec![a, b]);
        rx.changed().await.unwrap();
        let snap = rx.borrow().clone();
        assert_eq!(snap.generation, 1);
        let mut names: Vec<&str> = snap.tools.iter().map(|t| t.tool.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["x", "y", "z"]);
        let status = addr.send(GetCatalogStatus).await.unwrap();
        assert_eq!((status.fanouts, status.refreshing, status.generation), (1, false, 1));
        assert_eq!((fa.listed.get(), fb.listed.get()), (1, 1));
        assert_eq!((fa.followed.get(), fb.followed.get()), (1, 1), "list changes followed");
    }

    #[actix::test]
    async fn a_trigger_within_the_join_window_joins_a_later_one_queues_once() {
        tokio::time::pause();
        let (a, fa) = fake("a", Duration::from_secs(1), vec!["x"]);
        let cfg = CatalogConfig {
            min_refresh_interval: Duration::ZERO,
            ..Default::default()
        };
        let (addr, mut rx) = catalog(cfg, vec![a]);
        rx.changed().await.unwrap(); // startup
        let start = Instant::now();
        // Each listing takes 1 s: the second a refresh is answered in tells its fan-out.
        let at = |after_ms: u64| {
            let addr = addr.clone();
            async move {
                sleep_ms(after_ms).await;
                let report = addr
                    .send(refresh(RefreshReason::Explicit, None))
                    .await
                    .unwrap()
                    .unwrap();
                assert!(report.ran);
                start.elapsed().as_secs()
            }
        };
        let (first, joined, q1, q2) = futures_util::future::join4(at(0), at(100), at(300), at(300)).await;
        assert_eq!((first, joined), (1, 1), "joined the fan-out started 100 ms before");
        assert_eq!((q1, q2), (2, 2), "queued, once for both, after it");
        assert_eq!(fa.listed.get(), 3, "startup, the joined pair, one queued for two");
        let status = addr.send(GetCatalogStatus).await.unwrap();
        assert_eq!((status.fanouts, status.generation), (3, 3));
    }

    #[actix::test]
    async fn explicit_refreshes_are_rate_limited_with_a_note() {
        tokio::time::pause();
        let (a, fa) = fake("a", Duration::ZERO, vec!["x"]);
        let (addr, mut rx) = catalog(CatalogConfig::default(), vec![a]); // at most one per 5 s
        rx.changed().await.unwrap();
        sleep_ms(1000).await;
        let report = addr
            .send(refresh(RefreshReason::Explicit, None))
            .await
            .unwrap()
            .unwrap();
        assert!(!report.ran);
        let note = report.note.unwrap_or_default();
        assert!(note.contains("at most once per 5 s"), "{note}");
        assert_eq!(
            (report.total_tools, fa.listed.get()),
            (1, 1),
            "the current catalog, not re-listed"
        );
        sleep_ms(4100).await;
        let report = addr
            .send(refresh(RefreshReason::Explicit, None))
            .await
            .unwrap()
            .unwrap();
        assert!(report.ran && report.note.is_none());
        assert_eq!(fa.listed.get(), 2);
    }

    #[actix::test]
    async fn an_unknown_tool_relists_only_for_the_current_generation_after_the_cooldown() {
        tokio::time::pause();
        let (a, fa) = fake("a", Duration::ZERO, vec!["x"]);
        let cfg = CatalogConfig {
            min_refresh_interval: Duration::ZERO,
            ..Default::default() // cool-down 2 s
        };
        let (addr, mut rx) = catalog(cfg, vec![a]);
        rx.changed().await.unwrap();
        let stale = addr
            .send(refresh(RefreshReason::UnknownTool, Some(0)))
            .await
            .unwrap()
            .unwrap();
        assert!(
            !stale.ran,
            "the caller looked at an older catalog: this one may have the tool"
        );
        let cooling = addr
            .send(refresh(RefreshReason::UnknownTool, Some(1)))
            .await
            .unwrap()
            .unwrap();
        assert!(!cooling.ran, "within the cool-down");
        assert_eq!(fa.listed.get(), 1);
        sleep_ms(2100).await;
        let ran = addr
            .send(refresh(RefreshReason::UnknownTool, Some(1)))
            .await
            .unwrap()
            .unwrap();
        assert!(ran.ran);
        assert_eq!(fa.listed.get(), 2);
    }

    #[actix::test]
    async fn an_upstream_never_listed_is_retried_with_back_off_until_it_answers() {
        tokio::time::pause();
        let (a, fa) = fake("a", Duration::ZERO, vec!["x"]);
        *fa.answer.borrow_mut() = Err(UpstreamError::Unavailable);
        let (addr, _rx) = catalog(CatalogConfig::default(), vec![a]);
        // Listings at 0, 1, 3 and 7 s (back-off 1, 2, 4 s).
        let start = Instant::now();
        let mut seen = Vec::new();
        for at in [500, 1500, 3500, 6900, 7500] {
            tokio::time::sleep_until(start + Duration::from_millis(at)).await;
            seen.push((at, fa.listed.get()));
        }
        assert_eq!(
            seen.iter().map(|s| s.1).collect::<Vec<_>>(),
            [1, 2, 3, 3, 4],
            "{seen:?}"
        );
        // The retry's due time reaches a report answered without a fan-out.
        let fresh = addr
            .send(refresh(RefreshReason::UnknownTool, Some(99)))
            .await
            .unwrap()
            .unwrap();
        let a_report = &fresh.upstreams[0];
        assert!(!a_report.ok && a_report.error.is_some(), "{a_report:?}");
        assert_eq!(
            a_report.retry_in_sec,
            Some(8),
            "the next retry, 8 s after the fourth listing"
        );
        // It answers at 15 s: the retries stop.
        *fa.answer.borrow_mut() = Ok(vec!["x"]);
        sleep_ms(8000).await;
        assert_eq!(fa.listed.get(), 5);
        sleep_ms(120_000).await;
        assert_eq!(fa.listed.get(), 5, "listed: no more retries");
        let fresh = addr
            .send(refresh(RefreshReason::UnknownTool, Some(99)))
            .await
            .unwrap()
            .unwrap();
        assert!(fresh.upstreams[0].ok && fresh.upstreams[0].retry_in_sec.is_none());
    }

    #[actix::test]
    async fn list_changes_coalesce_and_wait_for_the_rate_limit() {
        tokio::time::pause();
        let (a, fa) = fake("a", Duration::ZERO, vec!["x"]);
        let (addr, mut rx) = catalog(CatalogConfig::default(), vec![a]); // at most one per 5 s
        rx.changed().await.unwrap();
        let start = Instant::now();
        let changed = || ToolsChanged { label: "a".into() };
        for _ in 0..3 {
            sleep_ms(100).await;
            addr.do_send(changed());
        }
        tokio::time::sleep_until(start + Duration::from_millis(4900)).await;
        assert_eq!(fa.listed.get(), 1, "not before 5 s after the last fan-out started");
        tokio::time::sleep_until(start + Duration::from_millis(5100)).await;
        assert_eq!(fa.listed.get(), 2, "three changes, one fan-out");
        // Long after: the debounce alone (500 ms).
        sleep_ms(10_000).await;
        addr.do_send(changed());
        sleep_ms(400).await;
        assert_eq!(fa.listed.get(), 2);
        sleep_ms(200).await;
        assert_eq!(fa.listed.get(), 3);
    }

    #[actix::test]
    async fn a_failed_listing_keeps_the_tools_and_reports_the_error() {
        tokio::time::pause();
        let (a, fa) = fake("a", Duration::ZERO, vec!["x", "y"]);
        let (b, _) = fake("b", Duration::ZERO, vec!["z"]);
        let cfg = CatalogConfig {
            min_refresh_interval: Duration::ZERO,
            ..Default::default()
        };
        let (addr, mut rx) = catalog(cfg, vec![a, b]);
        rx.changed().await.unwrap();
        *fa.answer.borrow_mut() = Err(UpstreamError::Unavailable);
        let report = addr
            .send(refresh(RefreshReason::Explicit, None))
            .await
            .unwrap()
            .unwrap();
        let a_report = report.upstreams.iter().find(|u| u.label == "a").unwrap().clone();
        assert!(report.ran && !a_report.ok && a_report.error.is_some(), "{report:?}");
        assert!(a_report.stale, "served from the earlier listing");
        assert_eq!(
            (report.total_tools, rx.borrow().tools.len()),
            (3, 3),
            "the tools are kept"
        );
        assert!(!report.changed);
        // A report answered without a fan-out still says what failed.
        let fresh = addr
            .send(refresh(RefreshReason::UnknownTool, Some(0)))
            .await
            .unwrap()
            .unwrap();
        assert!(!fresh.ran);
        let fresh_a = fresh.upstreams.iter().find(|u| u.label == "a").unwrap();
        assert_eq!(fresh_a.error, a_report.error);
    }

    #[actix::test]
    async fn when_no_upstream_answers_the_refresh_fails_and_the_catalog_stays() {
        tokio::time::pause();
        let (a, fa) = fake("a", Duration::ZERO, vec!["x"]);
        let cfg = CatalogConfig {
            min_refresh_interval: Duration::ZERO,
            ..Default::default()
        };
        let (addr, mut rx) = catalog(cfg, vec![a]);
        rx.changed().await.unwrap();
        *fa.answer.borrow_mut() = Err(UpstreamError::Unavailable);
        let failure = addr
            .send(refresh(RefreshReason::Explicit, None))
            .await
            .unwrap()
            .unwrap_err();
        assert!(failure.message.contains("unchanged"), "{}", failure.message);
        assert!(failure.upstreams[0].error.is_some() && failure.upstreams[0].stale);
        let snap = rx.borrow().clone();
        assert_eq!(
            (snap.generation, snap.tools.len()),
            (1, 1),
            "the catalog stays as it was"
        );
    }
}
