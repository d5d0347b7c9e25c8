//! `CatalogActor`: owns the merged catalog, the routing table (tool → upstream), the search
//! index, the fingerprint, the manifest file and the refresh state machine.
//!
//! Readers never wait for a refresh: the actor publishes every `Arc<Snapshot>` it swaps in on a
//! `watch` channel ([`CatalogActor::subscribe`]; the actor is its only writer, so a reader
//! needs no message per request) and the HTTP workers search
//! the snapshot on their own threads; a refresh builds a new snapshot off
//! the actor (merge, index build and manifest write run on a blocking thread) and swaps it in
//! whole.
//!
//! Refresh state machine (triggers: startup, TTL, `mcp_refresh`, unknown tool):
//!
//! ```text
//!            trigger                      fan-out done
//!   Idle ───────────────► Running{waiters} ─────────────► Idle  (waiters get the outcome)
//!                           │     ▲   │ trigger                 
//!                           │     │   ▼                         
//!                           │     └ Running{waiters, queued}   (every further trigger joins
//!                           │          │ fan-out done           the one queued fan-out)
//!                           │          ▼
//!                           └──── Running{queued waiters} ──► …
//! ```
//! At most one fan-out is in flight and at most one is queued; every caller gets the outcome
//! of a fan-out that started after its trigger, or less than `JOIN_WINDOW` (250 ms) before
//! it (its upstreams are still answering requests sent practically at the same moment). In a fan-out, an upstream that fails keeps
//! its previous tools (served stale); a fan-out in which every upstream fails changes nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use serde::Serialize;
use tokio::sync::oneshot;

use proxy_core::catalog::snapshot::{self, Collision, Snapshot, UpstreamState};
use proxy_core::catalog::{ingest, manifest};

use crate::upstream::{FollowListChanges, ListTools, Listing, ToolsChanged, UpstreamActor, UpstreamError};
use proxy_core::policy::Policy;

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
}

impl Default for CatalogConfig {
    fn default() -> Self {
        CatalogConfig {
            manifest_path: None,
            ttl: None,
            unknown_tool_cooldown: Duration::from_secs(2),
            policy: Policy::default(),
            min_refresh_interval: DEFAULT_MIN_REFRESH_INTERVAL,
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

/// Why a refresh was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefreshReason {
    Startup,
    Ttl,
    Explicit,
    UnknownTool,
    ListChanged,
    /// Some upstream has never answered yet.
    Retry,
}

impl RefreshReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RefreshReason::Startup => "startup",
            RefreshReason::Ttl => "ttl",
            RefreshReason::Explicit => "explicit",
            RefreshReason::UnknownTool => "unknown_tool",
            RefreshReason::ListChanged => "list_changed",
            RefreshReason::Retry => "retry",
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

/// Per-upstream outcome of a refresh.
#[derive(Debug, Clone, Serialize)]
pub struct UpstreamReport {
    pub label: String,
    pub ok: bool,
    pub tools: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// True when the tools served for this upstream come from an earlier listing.
    pub stale: bool,
    /// Age in seconds of the listing served for this upstream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listing_age_sec: Option<u64>,
    /// The protocol era the upstream spoke at its last good listing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub era: Option<mcp_wire::Era>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Tools of the last listing that were not admitted, by reason (see `catalog::ingest`).
    #[serde(skip_serializing_if = "ingest::Dropped::is_empty")]
    pub dropped: ingest::Dropped,
}

/// What a completed refresh did.
#[derive(Debug, Clone, Serialize)]
pub struct RefreshReport {
    pub reason: RefreshReason,
    /// False when no fan-out ran because the catalog was already fresh.
    pub ran: bool,
    pub fingerprint: String,
    pub previous_fingerprint: String,
    pub changed: bool,
    pub total_tools: usize,
    pub sources: BTreeMap<String, usize>,
    pub upstreams: Vec<UpstreamReport>,
    pub collisions: Vec<Collision>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub modified: Vec<String>,
    pub duration_ms: u64,
    /// Why no fan-out ran, when `ran` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A refresh in which no upstream answered: the catalog was left as it was.
#[derive(Debug, Clone, Serialize)]
pub struct RefreshFailure {
    pub message: String,
    pub upstreams: Vec<UpstreamReport>,
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
    upstreams: Vec<UpstreamHandle>,
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
}

/// Upstream list-change notifications within this window make one refresh.
const LIST_CHANGED_DEBOUNCE: Duration = Duration::from_millis(500);

/// The shortest background refresh period an upstream's `ttlMs` can ask for.
const MIN_TTL: Duration = Duration::from_secs(30);

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
        let snapshot = Arc::new(Snapshot::build(states, 0, &cfg.policy));
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
        log::debug!(reason = reason.as_str(); "catalog refresh started");
        let fut = async move {
            let calls = handles.iter().zip(&previous.upstreams).map(|(h, state)| {
                let addr = h.addr.clone();
                let msg = ListTools {
                    previous: state.tools.clone(),
                };
                async move { addr.send(msg).await.unwrap_or(Err(UpstreamError::Unavailable)) }
            });
            let results: Vec<Result<Listing, UpstreamError>> = futures_util::future::join_all(calls).await;
            let work = move || apply_fanout(&previous, results, reason, started, manifest_path.as_deref(), &policy);
            match tokio::task::spawn_blocking(work).await {
                Ok(r) => r,
                Err(e) => Err(RefreshFailure {
                    message: format!("catalog rebuild failed: {e}"),
                    upstreams: Vec::new(),
                }),
            }
        };
        ctx.spawn(fut.into_actor(self).map(|outcome, act, ctx| act.finish(outcome, ctx)));
    }

    fn finish(&mut self, outcome: Result<(Snapshot, RefreshReport), RefreshFailure>, ctx: &mut Context<Self>) {
        self.last_finished = Some(Instant::now());
        let result = match outcome {
            Ok((snapshot, report)) => {
                self.snapshot = Arc::new(snapshot);
                drop(self.published.send_replace(self.snapshot.clone()));
                Ok(report)
            }
            Err(failure) => Err(failure),
        };
        let state = std::mem::replace(&mut self.state, RefreshState::Idle);
        if let RefreshState::Running { waiters, queued, .. } = state {
            for w in waiters {
                let _ = w.send(result.clone());
            }
            if let Some((reason, waiters)) = queued {
                self.state = RefreshState::Running {
                    started: Instant::now(),
                    waiters,
                    queued: None,
                };
                self.start_fanout(reason, ctx);
                return;
            }
        }
        self.schedule_retry_if_incomplete(ctx);
    }

    /// While an upstream has never answered, retry with exponential back-off (1 s … 60 s).
    fn schedule_retry_if_incomplete(&mut self, ctx: &mut Context<Self>) {
        if let Some(timer) = self.retry_timer.take() {
            ctx.cancel_future(timer);
        }
        let incomplete = self.snapshot.upstreams.iter().any(|u| u.listed_at_ms.is_none());
        if !incomplete {
            self.retry_backoff = None;
            return;
        }
        let delay = self.retry_backoff.map_or(RETRY_FIRST, |d| (d * 2).min(RETRY_MAX));
        self.retry_backoff = Some(delay);
        self.retry_timer = Some(ctx.run_later(delay, |act, ctx| {
            act.retry_timer = None;
            if matches!(act.state, RefreshState::Idle) {
                act.trigger(RefreshReason::Retry, None, ctx);
            }
        }));
    }

    fn schedule_ttl(&self, ctx: &mut Context<Self>) {
        if let Some(ttl) = self.effective_ttl() {
            ctx.run_later(jitter(ttl), |act, ctx| {
                act.trigger(RefreshReason::Ttl, None, ctx);
                act.schedule_ttl(ctx);
            });
        }
    }

    /// A report for a refresh request answered without a fan-out.
    fn fresh_report(&self, reason: RefreshReason) -> RefreshReport {
        let s = &self.snapshot;
        RefreshReport {
            reason,
            ran: false,
            fingerprint: s.fingerprint.clone(),
            previous_fingerprint: s.fingerprint.clone(),
            changed: false,
            total_tools: s.tools.len(),
            sources: s.counts_by_source(),
            upstreams: upstream_reports(&s.upstreams, now_ms()),
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
            u.addr.do_send(FollowListChanges { to: me.clone() });
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

/// `CATALOG_TTL_SEC` shortened to the smallest positive `ttlMs` hint, but not below `MIN_TTL`
/// (nor above the configured period); `None` when background refresh is off.
fn effective_ttl(configured: Option<Duration>, hints_ms: impl Iterator<Item = u64>) -> Option<Duration> {
    let ttl = configured?;
    Some(match hints_ms.filter(|h| *h > 0).min().map(Duration::from_millis) {
        Some(h) => h.clamp(MIN_TTL.min(ttl), ttl),
        None => ttl,
    })
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
            log::warn!(error = e.as_str(); "manifest ignored; the catalog starts empty");
            None
        }
    }
}

/// Merges a fan-out's results into a new snapshot (pure apart from the manifest write).
fn apply_fanout(
    previous: &Snapshot,
    results: Vec<Result<Listing, UpstreamError>>,
    reason: RefreshReason,
    started: Instant,
    manifest_path: Option<&std::path::Path>,
    policy: &Policy,
) -> Result<(Snapshot, RefreshReport), RefreshFailure> {
    let now = now_ms();
    let mut states = previous.upstreams.clone();
    let mut any_ok = false;
    for (state, result) in states.iter_mut().zip(results) {
        match result {
            Ok(listing) => {
                any_ok = true;
                let (tools, dropped) = ingest::admit(&state.label, listing.tools);
                state.dropped = dropped;
                if tools.is_empty() && !state.tools.is_empty() && !state.suspect_empty {
                    // An aggregator restarting before its backends connect lists nothing for
                    // a while: one empty listing does not erase the catalog and the manifest.
                    log::warn!(
                        upstream = state.label.as_str(),
                        kept_tools = state.tools.len();
                        "upstream listed no tools; previous tools kept until an empty listing repeats"
                    );
                    state.suspect_empty = true;
                    state.last_error = Some(format!(
                        "listed no tools (had {}); the previous tools are kept until the next refresh confirms the empty list",
                        state.tools.len()
                    ));
                    continue;
                }
                state.suspect_empty = false;
                state.tools = tools;
                state.instructions = listing.instructions.as_deref().map(ingest::admit_instructions);
                state.listed_at_ms = Some(now);
                state.last_error = None;
                state.era = Some(listing.era);
                state.protocol_version = Some(listing.protocol_version);
                state.ttl_ms = listing.ttl_ms;
            }
            Err(e) => {
                let age = state.listed_at_ms.map(|t| now.saturating_sub(t) / 1000);
                log::warn!(
                    upstream = state.label.as_str(),
                    error = e.to_string().as_str(),
                    kept_tools = state.tools.len(),
                    listing_age_sec = age.unwrap_or(0);
                    "upstream skipped in refresh"
                );
                state.last_error = Some(e.to_string());
            }
        }
    }
    if !any_ok {
        let upstreams = upstream_reports(&states, now);
        log::error!(reason = reason.as_str(), upstreams = states.len(); "catalog refresh failed: no upstream answered; cached catalog kept");
        return Err(RefreshFailure {
            message: "no upstream answered; the cached catalog is unchanged".into(),
            upstreams,
        });
    }
    let snapshot = Snapshot::build(states, previous.generation + 1, policy);
    let (added, removed, modified) = journal(previous, &snapshot);
    for name in &modified {
        let upstream = snapshot.get(name).map(|t| t.upstream.as_str()).unwrap_or("");
        log::warn!(tool = name.as_str(), upstream = upstream; "tool definition changed upstream");
    }
    for c in &snapshot.collisions {
        log::warn!(tool = c.name.as_str(), kept = c.kept.as_str(), dropped = c.dropped.as_str(); "tool name collision");
    }
    if let Some(path) = manifest_path {
        let m = manifest::Manifest::from_snapshot(&snapshot, now);
        if let Err(e) = manifest::store(path, &m) {
            log::error!(path = path.display().to_string().as_str(), error = e.to_string().as_str(); "manifest write failed");
        }
    }
    let report = RefreshReport {
        reason,
        ran: true,
        fingerprint: snapshot.fingerprint.clone(),
        previous_fingerprint: previous.fingerprint.clone(),
        changed: snapshot.fingerprint != previous.fingerprint,
        total_tools: snapshot.tools.len(),
        sources: snapshot.counts_by_source(),
        upstreams: upstream_reports(&snapshot.upstreams, now),
        collisions: snapshot.collisions.clone(),
        added,
        removed,
        modified,
        duration_ms: started.elapsed().as_millis() as u64,
        note: None,
    };
    let sources = serde_json::to_string(&report.sources).unwrap_or_default();
    log::info!(
        reason = reason.as_str(),
        tools = report.total_tools,
        sources = sources.as_str(),
        fingerprint = report.fingerprint.as_str(),
        changed = report.changed,
        added = report.added.len(),
        removed = report.removed.len(),
        modified = report.modified.len(),
        latency_ms = report.duration_ms;
        "catalog refreshed"
    );
    Ok((snapshot, report))
}

/// Names added, removed and modified between two snapshots (sorted).
fn journal(old: &Snapshot, new: &Snapshot) -> (Vec<String>, Vec<String>, Vec<String>) {
    // names of `a`'s tools that `b` lacks
    let missing = |a: &Snapshot, b: &Snapshot| -> Vec<String> {
        a.tools
            .iter()
            .filter(|t| b.get(&t.tool.name).is_none())
            .map(|t| t.tool.name.clone())
            .collect()
    };
    let mut added = missing(new, old);
    let mut removed = missing(old, new);
    let mut modified: Vec<String> = new
        .tools
        .iter()
        .filter(|t| {
            old.hash_of(&t.tool.name)
                .is_some_and(|h| h != snapshot::tool_hash_u64(&t.tool))
        })
        .map(|t| t.tool.name.clone())
        .collect();
    added.sort();
    removed.sort();
    modified.sort();
    (added, removed, modified)
}

fn upstream_reports(states: &[UpstreamState], now: u64) -> Vec<UpstreamReport> {
    states
        .iter()
        .map(|s| UpstreamReport {
            label: s.label.clone(),
            ok: s.last_error.is_none() && s.listed_at_ms.is_some(),
            tools: s.tools.len(),
            error: s.last_error.clone(),
            stale: s.last_error.is_some() && !s.tools.is_empty(),
            listing_age_sec: s.listed_at_ms.map(|t| now.saturating_sub(t) / 1000),
            era: s.era,
            protocol_version: s.protocol_version.clone(),
            dropped: s.dropped,
        })
        .collect()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `ttl` ± 10%, so many proxies started together do not refresh in lock-step.
fn jitter(ttl: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    let unit = (h.finish() % 2001) as f64 / 1000.0 - 1.0; // [-1, 1]
    ttl.mul_f64(1.0 + 0.1 * unit).max(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_hints_shorten_the_period_within_bounds() {
        let min = Duration::from_secs;
        assert_eq!(effective_ttl(None, [60_000].into_iter()), None, "off stays off");
        assert_eq!(effective_ttl(Some(min(1800)), std::iter::empty()), Some(min(1800)));
        assert_eq!(
            effective_ttl(Some(min(1800)), [300_000, 600_000].into_iter()),
            Some(min(300))
        );
        assert_eq!(
            effective_ttl(Some(min(1800)), [1_000].into_iter()),
            Some(MIN_TTL),
            "never below the minimum"
        );
        assert_eq!(
            effective_ttl(Some(min(1800)), [0].into_iter()),
            Some(min(1800)),
            "0 is no hint"
        );
        assert_eq!(
            effective_ttl(Some(min(600)), [3_600_000].into_iter()),
            Some(min(600)),
            "never above the setting"
        );
        assert_eq!(effective_ttl(Some(min(10)), [1_000].into_iter()), Some(min(10)));
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        for _ in 0..100 {
            let j = jitter(Duration::from_secs(100));
            assert!(j >= Duration::from_secs(90) && j <= Duration::from_secs(110), "{j:?}");
        }
    }

    #[test]
    fn journal_reports_added_removed_and_modified() {
        use mcp_wire::types::Tool;
        let t = |n: &str, d: &str| -> Arc<Tool> {
            Arc::new(serde_json::from_value(serde_json::json!({"name": n, "description": d})).unwrap())
        };
        let st = |tools| {
            vec![UpstreamState {
                label: "u".into(),
                url: "x".into(),
                tools,
                ..Default::default()
            }]
        };
        let old = Snapshot::build(st(vec![t("a", "1"), t("b", "1")]), 1, &Default::default());
        let new = Snapshot::build(st(vec![t("b", "2"), t("c", "1")]), 2, &Default::default());
        assert_eq!(
            journal(&old, &new),
            (vec!["c".to_string()], vec!["a".to_string()], vec!["b".to_string()])
        );
    }
}
