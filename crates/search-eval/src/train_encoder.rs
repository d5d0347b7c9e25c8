//! `search-eval train-encoder`: fine-tunes the query side of the sentence model (a LoRA delta,
//! `embed::tune`) so that a request's vector lands nearer the tools that serve it, against the
//! frozen tool vectors of the pinned model (no catalog is ever re-embedded). The loop is
//! [`crate::tune`]'s; this file gathers its data and writes the delta with its provenance.
//!
//! # Data, and what may train what ships
//!
//! - **Requests of the visible sets** whose licence allows training (`--train-sets`; only
//!   [`LICENSED_SETS`]: MetaTool is MIT, the others are this project's own). ToolLens,
//!   MCP-Flow and MCPToolBench++ carry no licence for it: they only judge, and asking to train
//!   on them is refused.
//! - **BFCL** (`--bfcl DIR`: the `bfcl_eval/data` folder of the PyPI package `bfcl-eval`,
//!   Apache-2.0; `scripts/fetch-training-data.sh` installs it with its checksum pinned): its
//!   function-calling questions with the functions they call, every BFCL function of the
//!   chosen categories one catalog.
//! - **Self-supervised pairs** (`--self-supervised N`): N tools of `--ssl-catalog` (the
//!   catalogs' tool texts: real MCP servers' `tools/list`), each asked for by the first
//!   sentence of its description with its own name's words taken out, over the whole catalog.
//!
//! `--hold-out` sets are never trained on: their cosine-only R@1/R@5 is printed before
//! training and after every epoch (the learning curve on data the run did not see). A figure
//! reported for a visible set comes from a delta trained without that set's requests.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use embed::tune::{LoraSpec, SplitMix, TrainableEncoder};
use serde_json::{json, Value};
use tool_search::catalog_file::{load_catalog, load_catalog_path};
use tool_search::model::CatalogTool;
use tool_search::semantic::query_text;

use crate::eval::{load_query_file, visible_sets};
use crate::sets::{load_own_set, LoadedSet, SetInputs};
use crate::tune::{self, Catalog, Example, Settings};
use crate::vectors::{EvalEmbedder, QUERY_MAX_TOKENS};

/// The visible sets whose requests may train what ships: MetaTool (MIT) and this project's own
/// sets. The others (ToolLens, MCP-Flow, MCPToolBench++) carry no licence for training.
pub const LICENSED_SETS: [&str; 4] = ["deployment-dev", "demo-dev", "metatool-dev", "seed-examples"];

/// The BFCL files read (question files under `data/`, answers under `data/possible_answer/`):
/// single-turn categories whose answer names the functions called.
const BFCL_FILES: [&str; 10] = [
    "BFCL_v4_simple_python.json",
    "BFCL_v4_simple_java.json",
    "BFCL_v4_simple_javascript.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel.json",
    "BFCL_v4_parallel_multiple.json",
    "BFCL_v4_live_simple.json",
    "BFCL_v4_live_multiple.json",
    "BFCL_v4_live_parallel.json",
    "BFCL_v4_live_parallel_multiple.json",
];

#[derive(clap::Args, Debug)]
pub struct TrainEncoderArgs {
    #[command(flatten)]
    pub inputs: SetInputs,
    /// Sets whose requests train the delta, comma-separated (only licensed ones).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "deployment-dev,demo-dev,metatool-dev,seed-examples"
    )]
    pub train_sets: Vec<String>,
    /// Sets left out of training, comma-separated: their cosine-only figures are the curve.
    #[arg(long, value_delimiter = ',')]
    pub hold_out: Vec<String>,
    /// BFCL's data folder (`bfcl_eval/data`; scripts/fetch-training-data.sh).
    #[arg(long)]
    pub bfcl: Option<PathBuf>,
    /// Self-supervised pairs: this many tools of --ssl-catalog asked for by their own
    /// description's first sentence.
    #[arg(long, default_value_t = 0)]
    pub self_supervised: usize,
    /// The catalog the self-supervised pairs come from.
    #[arg(long, default_value = "../shared/bench/catalogs/real-11k.json")]
    pub ssl_catalog: PathBuf,
    /// A set of this project's own requests (repeatable): `{"catalog": FILE in --catalogs-dir,
    /// "servers": [...], "queries": [...]}`, its requests asked over the catalog's tools of
    /// those servers (`crates/search-eval/data/`).
    #[arg(long = "own-set", value_name = "FILE")]
    pub own_sets: Vec<PathBuf>,
    /// A source's examples weighed by a factor, `SOURCE=FACTOR` (a set's name, `bfcl` or
    /// `self-supervised`; repeatable).
    #[arg(long = "set-weight", value_name = "SOURCE=FACTOR")]
    pub set_weight: Vec<String>,
    /// LoRA rank.
    #[arg(long, default_value_t = 8)]
    pub rank: usize,
    /// LoRA alpha (the product is scaled by alpha / rank).
    #[arg(long, default_value_t = 16.0)]
    pub alpha: f32,
    /// Encoder layers that get pairs, comma-separated indices (default: all).
    #[arg(long, value_delimiter = ',')]
    pub layers: Vec<usize>,
    /// Linear layers of a layer that get pairs, comma-separated (`attention.self.query.weight`,
    /// … `output.dense.weight`; default: all six).
    #[arg(long, value_delimiter = ',')]
    pub parts: Vec<String>,
    #[arg(long, default_value_t = 3)]
    pub epochs: usize,
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,
    #[arg(long, default_value_t = 0.01)]
    pub weight_decay: f64,
    /// τ: cosines are divided by it before the softmax.
    #[arg(long, default_value_t = 0.05)]
    pub temperature: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A line of the learning curve every this many steps.
    #[arg(long, default_value_t = 25)]
    pub log_every: usize,
    /// Requests are cut at this many tokens for training (the service reads 256; 98% of the
    /// visible sets' requests are shorter than 64).
    #[arg(long, default_value_t = 128)]
    pub max_tokens: usize,
    /// At most this many tokens in a batch, padding included.
    #[arg(long, default_value_t = 4096)]
    pub batch_tokens: usize,
    /// Write the delta here (the service's built-in one is `crates/embed/query-delta.safetensors`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Record every visible set's cosine-only figures in the delta's provenance (`visible`),
    /// measured in full after training: what CI checks the shipped delta against.
    #[arg(long, requires = "out")]
    pub record_visible: bool,
}

/// A source's examples and the catalog they are asked over.
struct Source {
    name: String,
    catalog: Catalog,
    examples: Vec<Example>,
}

impl TrainEncoderArgs {
    pub fn run(&self) -> ExitCode {
        match self.try_run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("search-eval train-encoder: {e}");
                ExitCode::from(2)
            }
        }
    }

    fn check_sets(&self) -> Result<(), String> {
        if let Some(s) = self.train_sets.iter().find(|s| !LICENSED_SETS.contains(&s.as_str())) {
            return Err(format!(
                "--train-sets: `{s}` may not train what ships (its licence does not allow it; sets that may: {})",
                LICENSED_SETS.join(", ")
            ));
        }
        if let Some(s) = self.train_sets.iter().find(|s| self.hold_out.contains(s)) {
            return Err(format!("`{s}` is both trained on and held out"));
        }
        Ok(())
    }

    fn weight_of(&self, source: &str) -> Result<f32, String> {
        for w in &self.set_weight {
            let Some((name, factor)) = w.split_once('=') else {
                return Err(format!("--set-weight {w}: expected SOURCE=FACTOR"));
            };
            if name == source {
                return factor.parse().map_err(|e| format!("--set-weight {w}: {e}"));
            }
        }
        Ok(1.0)
    }

    fn try_run(&self) -> Result<(), String> {
        self.check_sets()?;
        let mut embedder = EvalEmbedder::open_base(&self.inputs.embed_model, &self.inputs.vector_cache)?;
        let data = self.gather(&mut embedder)?;
        let spec = LoraSpec {
            rank: self.rank,
            alpha: self.alpha,
            layers: self.layers.clone(),
            parts: self.parts.clone(),
            seed: self.seed,
            b_std: 0.0,
        };
        let encoder = TrainableEncoder::load(&self.inputs.embed_model, &spec).map_err(|e| e.to_string())?;
        println!(
            "{} requests, LoRA rank {} alpha {} on {} numbers; {} epochs of batches of {}",
            data.examples.len(),
            self.rank,
            self.alpha,
            encoder.trained_parameters(),
            self.epochs,
            self.batch
        );
        println!("cosine-only R@1/R@5 (limit 10):");
        let before = data.figures(&encoder, "before")?;
        let mut after = BTreeMap::new();
        let curve = tune::train(
            &encoder,
            &data.catalogs,
            &data.examples,
            &self.settings(),
            |p| {
                println!(
                    "step {:>5}  epoch {}  loss {:.4}  {:>6.0} s",
                    p.step,
                    p.epoch + 1,
                    p.loss,
                    p.seconds
                )
            },
            |epoch| {
                after = data
                    .figures(&encoder, &format!("epoch {}", epoch + 1))
                    .map_err(candle_core::Error::msg)?;
                Ok(())
            },
        )
        .map_err(|e| e.to_string())?;
        let Some(out) = &self.out else { return Ok(()) };
        // every visible set in full, cut as the service cuts queries: what CI checks the
        // shipped delta against
        let visible = if self.record_visible {
            self.visible_figures(&mut embedder, &encoder)?
        } else {
            BTreeMap::new()
        };
        let per_set = |m: &BTreeMap<String, (f64, f64)>| -> Value {
            m.iter()
                .map(|(k, (r1, r5))| (k.clone(), json!({"r1": round3(*r1), "r5": round3(*r5)})))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let provenance = json!({
            "command": format!("search-eval {}", args.join(" ")),
            "model": self.inputs.embed_model.file_name().map(|n| n.to_string_lossy().into_owned()),
            "data": data.catalogs.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
            "held_out": self.hold_out,
            "seed": self.seed,
            "steps": curve.last().map_or(0, |p| p.step),
            "seconds": curve.last().map_or(0.0, |p| p.seconds.round()),
            "final_loss": curve.last().map_or(0.0, |p| round3(p.loss)),
            "cosine_before": per_set(&before),
            "cosine_after": per_set(&after),
            "visible": per_set(&visible),
        });
        let mut delta = encoder
            .delta(embedder.files_digest().unwrap_or_default(), provenance)
            .map_err(|e| e.to_string())?;
        let bytes = delta.to_bytes().map_err(|e| e.to_string())?;
        std::fs::write(out, &bytes).map_err(|e| format!("{}: {e}", out.display()))?;
        println!(
            "wrote {} ({} bytes, fingerprint {})",
            out.display(),
            bytes.len(),
            delta.fingerprint()
        );
        Ok(())
    }

    fn settings(&self) -> Settings {
        Settings {
            epochs: self.epochs,
            batch: self.batch,
            learning_rate: self.lr,
            weight_decay: self.weight_decay,
            temperature: self.temperature,
            seed: self.seed,
            log_every: self.log_every,
            batch_tokens: self.batch_tokens,
            ..Settings::default()
        }
    }

    /// The training sources (the licensed sets, own sets, BFCL, self-supervised pairs) and the
    /// held-out sets, as catalogs, training examples and the curve's sets.
    fn gather(&self, embedder: &mut EvalEmbedder) -> Result<Gathered, String> {
        let mut sources = Vec::new();
        let mut held = Vec::new();
        for (name, catalog, queries) in visible_sets(&self.inputs.eval_dir, &self.inputs.catalogs_dir)? {
            let train = self.train_sets.contains(&name);
            if !train && !self.hold_out.contains(&name) {
                continue;
            }
            // held-out requests are cut as the service cuts them; training ones shorter
            let cut = if train { self.max_tokens } else { QUERY_MAX_TOKENS };
            let source = set_source(embedder, &name, &catalog, &queries, cut)?;
            if train {
                sources.push(source);
            } else {
                held.push(source);
            }
        }
        for wanted in self.train_sets.iter().chain(&self.hold_out) {
            if !sources.iter().chain(&held).any(|s| &s.name == wanted) {
                return Err(format!("no set `{wanted}` in {}", self.inputs.eval_dir.display()));
            }
        }
        for file in &self.own_sets {
            sources.push(own_set_source(
                embedder,
                file,
                &self.inputs.catalogs_dir,
                self.max_tokens,
            )?);
        }
        if let Some(dir) = &self.bfcl {
            sources.push(bfcl_source(embedder, dir, self.max_tokens)?);
        }
        if self.self_supervised > 0 {
            sources.push(self_supervised_source(
                embedder,
                &self.ssl_catalog,
                self.self_supervised,
                self.seed,
                self.max_tokens,
            )?);
        }
        for s in &mut sources {
            let w = self.weight_of(&s.name)?;
            s.examples.iter_mut().for_each(|e| e.weight = w);
        }
        let mut data = Gathered::default();
        for s in sources {
            data.add(s, true, self.seed);
        }
        for s in held {
            data.add(s, false, self.seed);
        }
        if data.examples.is_empty() {
            return Err("no training requests".into());
        }
        Ok(data)
    }

    /// Cosine-only figures of every visible set, in full, its requests cut as the service
    /// cuts them.
    fn visible_figures(
        &self,
        embedder: &mut EvalEmbedder,
        encoder: &TrainableEncoder,
    ) -> Result<BTreeMap<String, (f64, f64)>, String> {
        let mut all = Gathered::default();
        for (name, catalog, queries) in visible_sets(&self.inputs.eval_dir, &self.inputs.catalogs_dir)? {
            all.add(
                set_source(embedder, &name, &catalog, &queries, QUERY_MAX_TOKENS)?,
                false,
                0,
            );
        }
        all.figures(encoder, "visible")
    }
}

/// What a run trains on and what its curve shows.
#[derive(Default)]
struct Gathered {
    catalogs: Vec<Catalog>,
    examples: Vec<Example>,
    /// The curve's sets: every held-out set, and a sample of each training source.
    dev: Vec<(String, Vec<Example>)>,
}

impl Gathered {
    fn add(&mut self, s: Source, trained: bool, seed: u64) {
        let c = self.catalogs.len();
        let mut ex = s.examples;
        ex.iter_mut().for_each(|e| e.catalog = c);
        println!(
            "{:<16} {:>6} requests over {:>6} tools{}",
            s.name,
            ex.len(),
            s.catalog.len(),
            if trained { "" } else { "  (not trained on)" }
        );
        self.catalogs.push(s.catalog);
        if trained {
            // a sample of each training source is shown too, to see it fit
            let mut random = SplitMix(seed);
            let mut sample = ex.clone();
            for i in (1..sample.len()).rev() {
                sample.swap(i, random.below(i + 1));
            }
            sample.truncate(400);
            self.dev.push((format!("{} (trained)", s.name), sample));
            self.examples.extend(ex);
        } else {
            self.dev.push((s.name, ex));
        }
    }

    /// Each curve set's cosine-only R@1 and R@5, printed on one line after `label`.
    fn figures(&self, encoder: &TrainableEncoder, label: &str) -> Result<BTreeMap<String, (f64, f64)>, String> {
        let mut out = BTreeMap::new();
        print!("{label:<10}");
        for (name, ex) in &self.dev {
            let s = tune::cosine_recall(encoder, &self.catalogs, ex).map_err(|e| e.to_string())?;
            print!("  {name} {:.3}/{:.3}", s.r1, s.r5);
            out.insert(name.clone(), (s.r1, s.r5));
        }
        println!();
        Ok(out)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The frozen tool vectors of `tools` (from the cache, embedding what it lacks) as a catalog.
fn catalog_of(embedder: &mut EvalEmbedder, name: &str, tools: &[CatalogTool]) -> Result<Catalog, String> {
    let rows = embedder.tool_rows(tools)?;
    let names = tools.iter().map(|t| t.tool.name.clone()).collect();
    Catalog::new(name, names, &rows).map_err(|e| e.to_string())
}

/// A request's token ids, cut at `max_tokens` (the service cuts at [`QUERY_MAX_TOKENS`]).
fn ids_of(embedder: &EvalEmbedder, text: &str, max_tokens: usize) -> Result<Vec<u32>, String> {
    let semantic = query_text(text);
    embedder
        .token_ids(&semantic, max_tokens)
        .ok_or_else(|| "the tokenizer is the model's; external vectors cannot train".to_owned())
}

/// A visible set's answerable requests over its catalog.
fn set_source(
    embedder: &mut EvalEmbedder,
    name: &str,
    catalog: &Path,
    queries: &Path,
    max_tokens: usize,
) -> Result<Source, String> {
    let set = LoadedSet {
        name: name.to_owned(),
        tools: load_catalog_path(catalog).map_err(|e| e.to_string())?,
        queries: load_query_file(queries)?,
    };
    examples_of(embedder, set, max_tokens)
}

/// A set of this project's own requests over a part of a bench catalog (see
/// [`crate::sets::load_own_set`]); near misses (no gold) train nothing here.
fn own_set_source(
    embedder: &mut EvalEmbedder,
    file: &Path,
    catalogs_dir: &Path,
    max_tokens: usize,
) -> Result<Source, String> {
    let set = load_own_set(file, catalogs_dir)?;
    examples_of(embedder, set, max_tokens)
}

/// A loaded set's answerable requests over its catalog.
fn examples_of(embedder: &mut EvalEmbedder, set: LoadedSet, max_tokens: usize) -> Result<Source, String> {
    let catalog = catalog_of(embedder, &set.name, &set.tools)?;
    let position: HashMap<&str, usize> = set
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| (t.tool.name.as_str(), i))
        .collect();
    let mut examples = Vec::new();
    for q in &set.queries {
        let groups: Vec<Vec<usize>> = q
            .groups()
            .iter()
            .map(|g| {
                g.iter()
                    .filter_map(|n| position.get(n.as_str()).copied())
                    .collect::<Vec<_>>()
            })
            .filter(|g| !g.is_empty())
            .collect();
        if groups.is_empty() {
            continue;
        }
        for text in q.texts() {
            examples.push(Example {
                ids: ids_of(embedder, &text, max_tokens)?,
                catalog: 0,
                groups: groups.clone(),
                weight: 1.0,
                source: set.name.clone(),
            });
        }
    }
    Ok(Source {
        name: set.name,
        catalog,
        examples,
    })
}

/// BFCL's single-turn questions (the first user message) and the functions their answers
/// call, over every function of the files read as one catalog; a function is known by its name
/// and description, and every function of a gold name is that name's group.
fn bfcl_source(embedder: &mut EvalEmbedder, dir: &Path, max_tokens: usize) -> Result<Source, String> {
    let (mut functions, questions) = read_bfcl(dir)?;
    let base_names = unique_names(&mut functions);
    let tools = load_catalog(&json!({ "tools": functions }).to_string()).map_err(|e| format!("bfcl: {e}"))?;
    let catalog = catalog_of(embedder, "bfcl", &tools)?;
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, n) in base_names.iter().enumerate() {
        by_name.entry(n.as_str()).or_default().push(i);
    }
    let mut examples = Vec::new();
    for (text, gold) in &questions {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for g in gold {
            if let Some(members) = by_name.get(g.as_str()) {
                if !groups.contains(members) {
                    groups.push(members.clone());
                }
            }
        }
        if groups.is_empty() {
            continue;
        }
        examples.push(Example {
            ids: ids_of(embedder, text, max_tokens)?,
            catalog: 0,
            groups,
            weight: 1.0,
            source: "bfcl".into(),
        });
    }
    Ok(Source {
        name: "bfcl".into(),
        catalog,
        examples,
    })
}

/// A request and the names of the functions that answer it.
type GoldRequest = (String, Vec<String>);

/// BFCL's functions (as MCP tool definitions, each (name, description) once) and its
/// questions with the names of the functions their answers call.
fn read_bfcl(dir: &Path) -> Result<(Vec<Value>, Vec<GoldRequest>), String> {
    let mut functions: Vec<Value> = Vec::new();
    let mut key_of: HashMap<(String, String), usize> = HashMap::new();
    let mut questions: Vec<GoldRequest> = Vec::new();
    for file in BFCL_FILES {
        let answers = bfcl_answers(&dir.join("possible_answer").join(file))?;
        for q in read_json_lines(&dir.join(file))? {
            let Some(id) = q.get("id").and_then(Value::as_str) else {
                continue;
            };
            let Some(gold) = answers.get(id) else { continue };
            let text = bfcl_question_text(&q);
            if text.trim().is_empty() || gold.is_empty() {
                continue;
            }
            for f in q.get("function").and_then(Value::as_array).into_iter().flatten() {
                let name = f.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                let description = f
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                key_of.entry((name.clone(), description.clone())).or_insert_with(|| {
                    let mut schema = f.get("parameters").cloned().unwrap_or_else(|| json!({}));
                    if schema.get("type").and_then(Value::as_str) == Some("dict") {
                        schema["type"] = json!("object");
                    }
                    functions.push(json!({"name": name, "description": description, "inputSchema": schema}));
                    functions.len() - 1
                });
            }
            questions.push((text.to_owned(), gold.clone()));
        }
    }
    Ok((functions, questions))
}

/// A JSON-lines file's objects.
fn read_json_lines(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

/// A BFCL answer file: each question's id → the names of the functions its answer calls.
fn bfcl_answers(path: &Path) -> Result<HashMap<String, Vec<String>>, String> {
    Ok(read_json_lines(path)?
        .into_iter()
        .filter_map(|a| {
            let id = a.get("id")?.as_str()?.to_owned();
            let names = a
                .get("ground_truth")?
                .as_array()?
                .iter()
                .filter_map(|call| call.as_object()?.keys().next().cloned())
                .collect();
            Some((id, names))
        })
        .collect())
}

/// A BFCL question's request: the last user message of its first turn.
fn bfcl_question_text(q: &Value) -> &str {
    q.pointer("/question/0")
        .and_then(Value::as_array)
        .and_then(|turn| {
            turn.iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        })
        .and_then(|m| m.get("content")?.as_str())
        .unwrap_or_default()
}

/// A flat catalog needs unique names: the n-th function of a name gets `#n`. Returns each
/// function's name as it was.
fn unique_names(functions: &mut [Value]) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut base_names = Vec::with_capacity(functions.len());
    for f in functions {
        let name = f["name"].as_str().unwrap_or_default().to_owned();
        let n = seen.entry(name.clone()).or_default();
        *n += 1;
        if *n > 1 {
            f["name"] = json!(format!("{name}#{n}"));
        }
        base_names.push(name);
    }
    base_names
}

/// The first sentence of a description (at most 30 words), or `None` when it has fewer than
/// four words.
fn first_sentence(description: &str) -> Option<String> {
    let end = description
        .char_indices()
        .find(|&(i, c)| (c == '.' && description[i + 1..].starts_with(char::is_whitespace)) || c == '\n')
        .map_or(description.len(), |(i, _)| i);
    let words: Vec<&str> = description[..end].split_whitespace().take(30).collect();
    (words.len() >= 4).then(|| words.join(" "))
}

/// `n` tools of `path`, each asked for by its description's first sentence without the words of
/// its own name, over the whole catalog; tools of the same text are one group.
fn self_supervised_source(
    embedder: &mut EvalEmbedder,
    path: &Path,
    n: usize,
    seed: u64,
    max_tokens: usize,
) -> Result<Source, String> {
    let tools = load_catalog_path(path).map_err(|e| e.to_string())?;
    let catalog = catalog_of(embedder, "self-supervised", &tools)?;
    let mut same_text: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, t) in tools.iter().enumerate() {
        same_text
            .entry(tool_search::semantic::embedding_text(t))
            .or_default()
            .push(i);
    }
    let mut order: Vec<usize> = (0..tools.len()).collect();
    let mut random = SplitMix(seed ^ 0x55_17);
    for i in (1..order.len()).rev() {
        order.swap(i, random.below(i + 1));
    }
    let mut examples = Vec::new();
    for &i in &order {
        if examples.len() >= n {
            break;
        }
        let t = &tools[i];
        let Some(sentence) = t.tool.description.as_deref().and_then(first_sentence) else {
            continue;
        };
        let own: Vec<String> = t
            .tool
            .name
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_lowercase)
            .collect();
        let query: Vec<&str> = sentence
            .split_whitespace()
            .filter(|w| !own.contains(&w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase()))
            .collect();
        if query.len() < 3 {
            continue;
        }
        let group = same_text[&tool_search::semantic::embedding_text(t)].clone();
        examples.push(Example {
            ids: ids_of(embedder, &query.join(" "), max_tokens)?,
            catalog: 0,
            groups: vec![group],
            weight: 1.0,
            source: "self-supervised".into(),
        });
    }
    Ok(Source {
        name: "self-supervised".into(),
        catalog,
        examples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfcl_is_read_as_functions_and_their_questions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("possible_answer")).unwrap();
        let f = |name: &str, d: &str| json!({"name": name, "description": d, "parameters": {"type": "dict"}});
        let q1 = json!({"id": "a", "question": [[{"role": "user", "content": "weather in Rome"}]],
            "function": [f("get_weather", "Weather now"), f("calc", "Adds")]});
        let q2 = json!({"id": "b", "question": [[{"role": "system", "content": "x"}, {"role": "user", "content": "add 2 and 3"}]],
            "function": [f("calc", "Adds"), f("calc", "Multiplies")]});
        let q3 =
            json!({"id": "c", "question": [[{"role": "user", "content": "no answer"}]], "function": [f("lost", "L")]});
        let lines = |v: &[Value]| v.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
        let file = BFCL_FILES[0];
        std::fs::write(dir.path().join(file), lines(&[q1, q2, q3])).unwrap();
        let answers = [
            json!({"id": "a", "ground_truth": [{"get_weather": {}}]}),
            json!({"id": "b", "ground_truth": [{"calc": {}}]}),
        ];
        std::fs::write(dir.path().join("possible_answer").join(file), lines(&answers)).unwrap();
        // the other files are absent: read them from an empty set of lines
        for other in &BFCL_FILES[1..] {
            std::fs::write(dir.path().join(other), "").unwrap();
            std::fs::write(dir.path().join("possible_answer").join(other), "").unwrap();
        }
        let (mut functions, questions) = read_bfcl(dir.path()).unwrap();
        assert_eq!(
            questions,
            vec![
                ("weather in Rome".to_owned(), vec!["get_weather".to_owned()]),
                ("add 2 and 3".to_owned(), vec!["calc".to_owned()])
            ]
        );
        // each (name, description) once; `dict` read as `object`
        assert_eq!(functions.len(), 3);
        assert_eq!(functions[0]["inputSchema"]["type"], "object");
        let base = unique_names(&mut functions);
        assert_eq!(base, ["get_weather", "calc", "calc"]);
        let names: Vec<&str> = functions.iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["get_weather", "calc", "calc#2"]);
    }

    #[test]
    fn only_licensed_sets_may_train() {
        let args = |train: &[&str], hold: &[&str]| TrainEncoderArgs {
            inputs: SetInputs::default(),
            train_sets: train.iter().map(|s| s.to_string()).collect(),
            hold_out: hold.iter().map(|s| s.to_string()).collect(),
            bfcl: None,
            self_supervised: 0,
            ssl_catalog: PathBuf::new(),
            own_sets: Vec::new(),
            set_weight: vec!["bfcl=0.5".into()],
            rank: 8,
            alpha: 16.0,
            layers: vec![],
            parts: vec![],
            epochs: 1,
            batch: 8,
            lr: 1e-3,
            weight_decay: 0.0,
            temperature: 0.05,
            seed: 1,
            log_every: 10,
            max_tokens: 128,
            batch_tokens: 4096,
            out: None,
            record_visible: false,
        };
        assert!(args(&["metatool-dev", "demo-dev"], &["toollens"]).check_sets().is_ok());
        let e = args(&["toollens"], &[]).check_sets().unwrap_err();
        assert!(e.contains("may not train what ships"), "{e}");
        assert!(args(&["mcp_flow-dev"], &[]).check_sets().is_err());
        assert!(args(&["mcptoolbench"], &[]).check_sets().is_err());
        assert!(args(&["demo-dev"], &["demo-dev"])
            .check_sets()
            .unwrap_err()
            .contains("both"));
        assert_eq!(args(&[], &[]).weight_of("bfcl").unwrap(), 0.5);
        assert_eq!(args(&[], &[]).weight_of("demo-dev").unwrap(), 1.0);
    }

    #[test]
    fn a_first_sentence_is_cut_at_its_period_and_needs_four_words() {
        assert_eq!(
            first_sentence("Create a new issue in a repository. Returns the issue.").as_deref(),
            Some("Create a new issue in a repository")
        );
        assert_eq!(
            first_sentence("Get v1.2 of the file list\nmore"),
            Some("Get v1.2 of the file list".into())
        );
        assert_eq!(first_sentence("Lists pods."), None);
    }
}
