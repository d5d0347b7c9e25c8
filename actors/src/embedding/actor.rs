//! `EmbeddingActor`: loads the model off the actix threads, owns the vector store, follows the
//! catalog's snapshots and publishes each generation's semantic index. The work itself (texts,
//! what is missing, the chunked fill, the aligned vectors) is [`super::plan`]'s; this file
//! only sequences it: one job at a time on a blocking thread, a newer snapshot superseding the
//! pending one, the store handed to the job and back.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use embed::store::{LoadNote, VectorStore};
use embed::{Embedder, QueryDeltaChoice};
use proxy_core::catalog::Snapshot;
use proxy_metrics::Metrics;
use tokio::sync::watch;
use tool_search::semantic::{Vectors, TOOL_MAX_TOKENS};

use super::jobs::Jobs;
use super::plan::{self, JobReport, ToolTexts};
use super::query::QueryEmbedder;
use super::state::{Phase, SemanticIndex, SemanticState};

/// Texts per call into the model: small enough that a newer snapshot stops a job within a
/// second or two, large enough for the model's own batching (8) to stay full.
const CHUNK: usize = 64;

/// During a long job the store is written every this many new vectors, so an interrupted
/// start-up keeps most of its work.
const CHECKPOINT_EVERY: usize = 2048;

pub struct EmbeddingActor {
    model_dir: PathBuf,
    /// Where the vectors are persisted (`None`: in memory only).
    vectors_path: Option<PathBuf>,
    metrics: Arc<Metrics>,
    /// Taken when the model is loaded (the follower task owns it then).
    snapshots: Option<watch::Receiver<Arc<Snapshot>>>,
    published: watch::Sender<SemanticState>,
    embedder: Option<Arc<Embedder>>,
    /// The model's fingerprint at the tool cut, and its dimension (for a fresh store).
    model: String,
    dim: usize,
    /// `None` while a job holds it.
    store: Option<VectorStore>,
    /// Which snapshot is embedded next (one job at a time, the newest wins).
    jobs: Jobs<Arc<Snapshot>>,
}

impl EmbeddingActor {
    pub fn new(
        model_dir: PathBuf,
        vectors_path: Option<PathBuf>,
        metrics: Arc<Metrics>,
        snapshots: watch::Receiver<Arc<Snapshot>>,
        published: watch::Sender<SemanticState>,
    ) -> EmbeddingActor {
        EmbeddingActor {
            model_dir,
            vectors_path,
            metrics,
            snapshots: Some(snapshots),
            published,
            embedder: None,
            model: String::new(),
            dim: 0,
            store: None,
            jobs: Jobs::new(),
        }
    }

    fn loaded(&mut self, loaded: Loaded, ctx: &mut Context<Self>) {
        let Loaded {
            embedder,
            store,
            note,
            took,
        } = loaded;
        let embedder = Arc::new(embedder);
        self.model = store.model().to_owned();
        self.dim = store.dim();
        let path = self.vectors_path.as_ref().map(|p| p.display().to_string());
        log::info!(
            model = self.model.as_str(),
            dim = self.dim,
            load_ms = took.as_millis() as u64,
            queries = embedder.query_precision(),
            query_delta = embedder.query_delta().unwrap_or("none"),
            vectors = path.as_deref().unwrap_or("memory"),
            cached = store.len();
            "embedding model loaded"
        );
        if let Some(note) = embedder.query_delta_note() {
            log::info!(reason = note; "query delta not applied; queries use the model's own encoder");
        }
        match &note {
            Some(LoadNote::OtherModel { .. }) | Some(LoadNote::Unreadable(_)) => {
                let reason = note.as_ref().map(|n| n.to_string()).unwrap_or_default();
                log::info!(path = path.as_deref().unwrap_or(""), reason = reason.as_str(); "vector file ignored; tools are embedded again");
            }
            _ => {}
        }
        self.store = Some(store);
        let query = QueryEmbedder::start(embedder.clone());
        let query_delta = embedder.query_delta().map(str::to_owned);
        self.embedder = Some(embedder);
        let model = self.model.clone();
        self.published.send_modify(|s| {
            s.phase = Phase::On;
            s.query = Some(query);
            s.model = Some(model);
            s.query_delta = query_delta;
        });
        // Follow the catalog: every snapshot swapped in (and the current one) comes here.
        if let Some(mut rx) = self.snapshots.take() {
            let addr = ctx.address();
            actix::spawn(async move {
                loop {
                    let snap = rx.borrow_and_update().clone();
                    if !addr.connected() {
                        break;
                    }
                    addr.do_send(SnapshotChanged(snap));
                    if rx.changed().await.is_err() {
                        break;
                    }
                }
            });
        }
    }

    fn start_job(&mut self, snap: Arc<Snapshot>, ctx: &mut Context<Self>) {
        let (Some(embedder), Some(mut store)) = (self.embedder.clone(), self.store.take()) else {
            self.jobs.wait(snap);
            return;
        };
        let generation = snap.generation;
        let stop = self.jobs.started(generation);
        let path = self.vectors_path.clone();
        let progress = self.published.borrow().progress.clone();
        let metrics = self.metrics.clone();
        let model = self.model.clone();
        let work = move || {
            let started = Instant::now();
            let texts = ToolTexts::of(&snap.tools);
            let todo = texts.missing(&store).len();
            progress.done.store(0, Ordering::Relaxed);
            progress.todo.store(todo, Ordering::Relaxed);
            metrics.semantic_tools(texts.len());
            if todo > 0 {
                log::info!(generation = generation, tools = texts.len(), to_embed = todo, cached = texts.len() - todo; "embedding started");
            }
            let mut checkpoint = 0;
            let report = plan::fill(
                &mut store,
                &texts,
                CHUNK,
                |t| {
                    let vectors = embedder.embed_at(t, TOOL_MAX_TOKENS).map_err(|e| e.to_string());
                    embed::release_memory();
                    vectors
                },
                || stop.superseded(),
                |store, done| {
                    progress.done.store(done, Ordering::Relaxed);
                    if done - checkpoint >= CHECKPOINT_EVERY {
                        checkpoint = done;
                        save(store, path.as_ref());
                    }
                },
            );
            progress
                .embedded_since_start
                .fetch_add(report.embedded as u64, Ordering::Relaxed);
            let vectors = (!report.superseded).then(|| texts.vectors(&store));
            let before = store.len();
            if report.complete() {
                texts.retain_in(&mut store);
            }
            let file_missing = path.as_ref().is_some_and(|p| !p.exists());
            if report.embedded > 0 || store.len() != before || file_missing {
                save(&store, path.as_ref());
            }
            log_outcome(generation, texts.len(), &report, started.elapsed());
            JobDone {
                store,
                vectors,
                generation,
                model,
            }
        };
        ctx.spawn(
            tokio::task::spawn_blocking(work)
                .into_actor(self)
                .map(move |done, act, ctx| act.finish(done, ctx)),
        );
    }

    fn finish(&mut self, done: Result<JobDone, tokio::task::JoinError>, ctx: &mut Context<Self>) {
        let next = self.jobs.finished();
        match done {
            Ok(done) => {
                self.store = Some(done.store);
                if let Some(vectors) = done.vectors {
                    self.metrics.semantic_coverage(vectors.count(), vectors.len());
                    let index = Arc::new(SemanticIndex {
                        generation: done.generation,
                        vectors,
                        model: done.model,
                    });
                    self.published.send_modify(|s| s.index = Some(index));
                }
            }
            Err(e) => {
                // The job panicked (a bug in the model code): its vectors are lost, the service
                // goes on lexical for this snapshot and tries again on the next one.
                log::error!(error = e.to_string().as_str(); "embedding failed");
                self.store = Some(VectorStore::new(self.model.clone(), self.dim));
            }
        }
        if let Some(next) = next {
            self.start_job(next, ctx);
        }
    }
}

fn save(store: &VectorStore, path: Option<&PathBuf>) {
    if let Some(path) = path {
        if let Err(e) = store.save(path) {
            log::warn!(path = path.display().to_string().as_str(), error = e.to_string().as_str(); "vector file not written");
        }
    }
}

fn log_outcome(generation: u64, tools: usize, report: &JobReport, took: Duration) {
    let duration_ms = took.as_millis() as u64;
    if let Some(error) = &report.error {
        log::warn!(generation = generation, embedded = report.embedded, error = error.as_str(); "embedding failed; retried at the next catalog change");
    } else if report.superseded {
        log::info!(generation = generation, embedded = report.embedded, duration_ms = duration_ms; "embedding superseded by a newer catalog");
    } else if report.missing > 0 {
        log::info!(generation = generation, tools = tools, embedded = report.embedded, cached = tools.saturating_sub(report.embedded), duration_ms = duration_ms; "embedding finished");
    }
}

/// What loading produced.
struct Loaded {
    embedder: Embedder,
    store: VectorStore,
    note: Option<LoadNote>,
    took: Duration,
}

struct JobDone {
    store: VectorStore,
    /// `None` when the job was superseded (a newer snapshot is pending).
    vectors: Option<Vectors>,
    generation: u64,
    model: String,
}

impl Actor for EmbeddingActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let dir = self.model_dir.clone();
        let path = self.vectors_path.clone();
        let load = move || -> Result<Loaded, String> {
            let started = Instant::now();
            // with the query delta EMBED_QUERY_DELTA names (unset: the built-in one, when it
            // was trained on this model)
            let embedder = Embedder::load_choosing(&dir, &QueryDeltaChoice::from_env()).map_err(|e| e.to_string())?;
            let model = embedder.fingerprint(TOOL_MAX_TOKENS);
            let (store, note) = match &path {
                Some(p) => VectorStore::load(p, &model, embedder.dim()),
                None => (VectorStore::new(model, embedder.dim()), None),
            };
            Ok(Loaded {
                embedder,
                store,
                note,
                took: started.elapsed(),
            })
        };
        ctx.spawn(
            tokio::task::spawn_blocking(load)
                .into_actor(self)
                .map(|outcome, act, ctx| match outcome {
                    Ok(Ok(loaded)) => act.loaded(loaded, ctx),
                    Ok(Err(reason)) => act.off(reason, ctx),
                    Err(e) => act.off(format!("loading the model failed: {e}"), ctx),
                }),
        );
    }
}

impl EmbeddingActor {
    fn off(&mut self, reason: String, ctx: &mut Context<Self>) {
        let dir = self.model_dir.display().to_string();
        log::warn!(model_dir = dir.as_str(), reason = reason.as_str(), mode = "lexical"; "semantic search off");
        self.published.send_modify(|s| s.phase = Phase::Off(reason));
        ctx.stop();
    }
}

/// A snapshot was swapped in (sent by the follower task).
#[derive(Message)]
#[rtype(result = "()")]
struct SnapshotChanged(Arc<Snapshot>);

impl Handler<SnapshotChanged> for EmbeddingActor {
    type Result = ();

    fn handle(&mut self, msg: SnapshotChanged, ctx: &mut Self::Context) {
        if let Some(now) = self.jobs.arrived(msg.0.generation, msg.0) {
            self.start_job(now, ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The actor on the actix test runtime: without a model it turns the arm off and stops;
    //! with the installed model (skipped on a fresh clone) the newest generation wins and the
    //! vectors persisted beside the manifest are not embedded again.

    use std::path::Path;

    use proxy_core::catalog::snapshot::UpstreamState;
    use proxy_core::policy::Policy;

    use super::*;

    fn snapshot(generation: u64, tools: usize) -> Arc<Snapshot> {
        let tools = (0..tools)
            .map(|i| {
                let def =
                    serde_json::json!({"name": format!("tool_{i}"), "description": format!("Does thing number {i}.")});
                Arc::new(serde_json::from_value(def).unwrap())
            })
            .collect();
        let state = UpstreamState {
            label: "u".into(),
            url: "http://u.test/mcp".into(),
            tools,
            ..Default::default()
        };
        Arc::new(Snapshot::build(vec![state], generation, &Policy::default()))
    }

    /// A started actor over `model_dir`, the sender of its snapshots and what it publishes.
    fn start(
        model_dir: &Path,
        vectors: Option<PathBuf>,
        first: Arc<Snapshot>,
    ) -> (
        Addr<EmbeddingActor>,
        watch::Sender<Arc<Snapshot>>,
        watch::Receiver<SemanticState>,
    ) {
        let (snap_tx, snap_rx) = watch::channel(first);
        let mut initial = SemanticState::off("");
        initial.phase = Phase::Loading;
        let (tx, rx) = watch::channel(initial);
        let addr = EmbeddingActor::new(model_dir.to_owned(), vectors, Arc::default(), snap_rx, tx).start();
        (addr, snap_tx, rx)
    }

    /// Waits (at most a minute) until what is published satisfies `done`.
    async fn until(rx: &mut watch::Receiver<SemanticState>, done: impl Fn(&SemanticState) -> bool) {
        let wait = rx.wait_for(|s| done(s));
        tokio::time::timeout(Duration::from_secs(60), wait)
            .await
            .expect("published within a minute")
            .expect("the sender lives");
    }

    #[actix::test]
    async fn without_a_model_the_arm_is_off_and_the_actor_stops() {
        let empty = std::env::temp_dir().join(format!("no-model-{}", std::process::id()));
        let (addr, _snapshots, mut rx) = start(&empty, None, snapshot(0, 1));
        until(&mut rx, |s| matches!(s.phase, Phase::Off(_))).await;
        let Phase::Off(reason) = rx.borrow().phase.clone() else {
            unreachable!()
        };
        assert!(!reason.is_empty(), "the reason is said");
        assert!(rx.borrow().query.is_none() && rx.borrow().index.is_none());
        for _ in 0..100 {
            if !addr.connected() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the actor is still running");
    }

    #[actix::test]
    async fn the_newest_generation_wins_and_persisted_vectors_are_not_embedded_again() {
        let model = embed::default_model_dir();
        if !embed::model_installed_or_skip(&model, "the EmbeddingActor model test") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let vectors = dir.path().join("manifest.json.vectors");
        let (_addr, snapshots, mut rx) = start(&model, Some(vectors.clone()), snapshot(1, 60));
        until(&mut rx, |s| s.phase == Phase::On).await;
        // Generation 2 comes while generation 1 may still be embedding.
        snapshots.send_replace(snapshot(2, 80));
        let mut seen = Vec::new();
        let wait = async {
            loop {
                let generation = rx.borrow_and_update().index.as_ref().map(|i| i.generation);
                if seen.last() != Some(&generation) {
                    seen.push(generation);
                }
                if generation == Some(2) {
                    break;
                }
                rx.changed().await.unwrap();
            }
        };
        tokio::time::timeout(Duration::from_secs(120), wait)
            .await
            .expect("generation 2 is published");
        assert!(
            seen.windows(2).all(|w| w[0] <= w[1]),
            "never an older generation after a newer one: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        let index = rx.borrow().index.clone().unwrap();
        assert_eq!(index.generation, 2, "still generation 2's");
        assert_eq!(
            (index.vectors.count(), index.vectors.len()),
            (80, 80),
            "every tool of generation 2 has its vector"
        );
        assert!(vectors.is_file(), "the vectors are written beside the manifest");

        // A second actor over the same file embeds nothing.
        let (_again, _snapshots, mut rx) = start(&model, Some(vectors), snapshot(2, 80));
        until(&mut rx, |s| s.index.as_ref().is_some_and(|i| i.generation == 2)).await;
        assert_eq!(rx.borrow().progress.embedded_since_start.load(Ordering::Relaxed), 0);
    }
}
