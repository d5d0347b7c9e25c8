//! The fusion model: weighted terms (a feature, alone or weighed by a signal) and regression
//! trees over the features and signals, with the cosine bar under which a doubtful search
//! answers nothing; read from and written to `fusion-model.json` (beside `fusion.rs`), the
//! built-in one parsed once per process.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::{FEATURES, N_FEATURES, N_SIGNALS, SIGNALS};

/// One term of a model: a feature, alone or weighed by a signal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Term {
    pub feature: usize,
    pub signal: Option<usize>,
    pub weight: f64,
}

impl Term {
    /// `cosine_share` or `cosine_share * doubt`.
    pub fn name(&self) -> String {
        match self.signal {
            None => FEATURES[self.feature].0.to_owned(),
            Some(s) => format!("{} * {}", FEATURES[self.feature].0, SIGNALS[s].0),
        }
    }

    fn parse(name: &str, weight: f64) -> Result<Term, String> {
        let (f, s) = match name.split_once('*') {
            Some((f, s)) => (f.trim(), Some(s.trim())),
            None => (name.trim(), None),
        };
        let feature = FEATURES
            .iter()
            .position(|(n, _)| *n == f)
            .ok_or_else(|| format!("fusion model: unknown feature `{f}`"))?;
        let signal = match s {
            None => None,
            Some(s) => Some(
                SIGNALS
                    .iter()
                    .position(|(n, _)| *n == s)
                    .ok_or_else(|| format!("fusion model: unknown signal `{s}`"))?,
            ),
        };
        if !weight.is_finite() {
            return Err(format!("fusion model: `{name}` is not a finite number"));
        }
        Ok(Term {
            feature,
            signal,
            weight,
        })
    }

    /// The term's multiplier of its feature for a query with these signals.
    pub(super) fn factor(&self, signals: &[f64; N_SIGNALS]) -> f64 {
        self.weight * self.signal.map_or(1.0, |s| signals[s])
    }
}

/// How many inputs a tree reads: a candidate's [`FEATURES`], then the query's [`SIGNALS`].
pub const N_INPUTS: usize = N_FEATURES + N_SIGNALS;

/// The name of a tree's input `k`.
pub fn input_name(k: usize) -> &'static str {
    if k < N_FEATURES {
        FEATURES[k].0
    } else {
        SIGNALS[k - N_FEATURES].0
    }
}

/// A tree's input `k` of a candidate: its feature `k`, or past the features, the request's
/// signal.
pub fn tree_input(x: &[f64; N_FEATURES], signals: &[f64; N_SIGNALS], k: usize) -> f64 {
    if k < N_FEATURES {
        x[k]
    } else {
        signals[k - N_FEATURES]
    }
}

/// One node of a regression tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Node {
    Leaf {
        value: f64,
    },
    /// Inputs at or under `at` go to `below`, others to `above` (both later in the tree);
    /// `value` is what the node would predict as a leaf (for the explanation).
    Split {
        input: usize,
        at: f64,
        value: f64,
        below: usize,
        above: usize,
    },
}

/// A regression tree over a candidate's inputs; nodes in an array, the root first.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

impl Tree {
    /// The tree's value for these inputs.
    pub fn eval(&self, input: impl Fn(usize) -> f64) -> f64 {
        let mut i = 0;
        loop {
            match self.nodes[i] {
                Node::Leaf { value } => return value,
                Node::Split {
                    input: k,
                    at,
                    below,
                    above,
                    ..
                } => i = if input(k) <= at { below } else { above },
            }
        }
    }

    /// The tree's value split into its root's value and each input's share along the path
    /// (each split's change in value is its input's), added to `shares`.
    pub(super) fn explain(&self, input: impl Fn(usize) -> f64, shares: &mut [f64; N_INPUTS]) -> f64 {
        let value = |n: &Node| match *n {
            Node::Leaf { value } | Node::Split { value, .. } => value,
        };
        let mut i = 0;
        while let Node::Split {
            input: k,
            at,
            below,
            above,
            ..
        } = self.nodes[i]
        {
            let next = if input(k) <= at { below } else { above };
            shares[k] += value(&self.nodes[next]) - value(&self.nodes[i]);
            i = next;
        }
        value(&self.nodes[0])
    }

    /// Children later than their parent and inside the array (so `eval` ends), inputs known,
    /// numbers finite.
    fn check(&self) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("fusion model: an empty tree".into());
        }
        for (i, n) in self.nodes.iter().enumerate() {
            match *n {
                Node::Leaf { value } if value.is_finite() => {}
                Node::Split {
                    input,
                    at,
                    value,
                    below,
                    above,
                } if input < N_INPUTS
                    && at.is_finite()
                    && value.is_finite()
                    && below > i
                    && above > i
                    && below < self.nodes.len()
                    && above < self.nodes.len() => {}
                _ => return Err(format!("fusion model: tree node {i} is malformed")),
            }
        }
        Ok(())
    }
}

/// A tree node in the file: inputs by name.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum NodeFile {
    Split {
        input: String,
        at: f64,
        value: f64,
        below: usize,
        above: usize,
    },
    Leaf {
        leaf: f64,
    },
}

/// Which requests the cosine bar ([`FusionModel::abstain_below`]) may leave without a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbstainOn {
    /// Those the lexical arm alone would answer nothing (its own abstention rules: no word
    /// known, too little of a short request covered).
    #[default]
    LexicalAbstains,
    /// Only those none of whose words the catalog knows in any form (itself, an alias, a name
    /// affix, one edit away), and that spell no tool's name: the evidence that nothing fits
    /// is then the model's alone, and a request in everyday words that shares a word with
    /// the catalog is always answered.
    NoWordKnown,
}

/// A fusion model: weighted terms plus regression trees, and when to answer nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct FusionModel {
    pub terms: Vec<Term>,
    /// Added to the terms' score (boosted on it by `search-eval train`).
    pub trees: Vec<Tree>,
    /// A request [`Self::abstain_on`] names is answered only when its nearest tool's cosine
    /// reaches this; otherwise nothing is returned.
    pub abstain_below: f64,
    /// Which requests the bar applies to.
    pub abstain_on: AbstainOn,
    /// How the model was made (the command that reproduces it, and what it measured).
    pub provenance: serde_json::Value,
}

/// The file form: terms and inputs by name, so a file and the code cannot silently disagree
/// on order.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    provenance: serde_json::Value,
    terms: std::collections::BTreeMap<String, f64>,
    #[serde(default)]
    trees: Vec<Vec<NodeFile>>,
    abstain_below: f64,
    #[serde(default)]
    abstain_on: AbstainOn,
}

/// The model the service ranks with (see the module docs).
const BUILTIN_MODEL: &str = include_str!("../fusion-model.json");

/// Why a fusion model file was refused (its text names the field or term at fault).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(String);

impl From<String> for ModelError {
    fn from(message: String) -> ModelError {
        ModelError(message)
    }
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

impl FusionModel {
    /// The shipped model, parsed once (a unit test checks that it parses).
    pub fn builtin() -> &'static FusionModel {
        static MODEL: OnceLock<FusionModel> = OnceLock::new();
        MODEL.get_or_init(|| FusionModel::from_json(BUILTIN_MODEL).expect("fusion-model.json is valid (unit-tested)"))
    }

    /// Reads a model file: terms name known features and signals, every number is finite
    /// and the cosine bar in [0, 1].
    pub fn from_json(text: &str) -> Result<FusionModel, ModelError> {
        let f: ModelFile = serde_json::from_str(text).map_err(|e| format!("fusion model: {e}"))?;
        let terms = f
            .terms
            .iter()
            .map(|(n, w)| Term::parse(n, *w))
            .collect::<Result<Vec<_>, _>>()?;
        if !(0.0..=1.0).contains(&f.abstain_below) {
            return Err(ModelError(
                "fusion model: abstain_below must be a cosine in [0, 1]".into(),
            ));
        }
        let mut trees = Vec::with_capacity(f.trees.len());
        for t in &f.trees {
            let nodes = t
                .iter()
                .map(|n| match n {
                    NodeFile::Leaf { leaf } => Ok(Node::Leaf { value: *leaf }),
                    NodeFile::Split {
                        input,
                        at,
                        value,
                        below,
                        above,
                    } => Ok(Node::Split {
                        input: (0..N_INPUTS)
                            .find(|&k| input_name(k) == input)
                            .ok_or_else(|| format!("fusion model: unknown tree input `{input}`"))?,
                        at: *at,
                        value: *value,
                        below: *below,
                        above: *above,
                    }),
                })
                .collect::<Result<Vec<_>, String>>()?;
            let tree = Tree { nodes };
            tree.check()?;
            trees.push(tree);
        }
        Ok(FusionModel {
            terms,
            trees,
            abstain_below: f.abstain_below,
            abstain_on: f.abstain_on,
            provenance: f.provenance,
        })
    }

    pub fn to_json(&self) -> String {
        let f = ModelFile {
            provenance: self.provenance.clone(),
            terms: self.terms.iter().map(|t| (t.name(), round(t.weight))).collect(),
            trees: self
                .trees
                .iter()
                .map(|t| {
                    t.nodes
                        .iter()
                        .map(|n| match *n {
                            Node::Leaf { value } => NodeFile::Leaf { leaf: round(value) },
                            Node::Split {
                                input,
                                at,
                                value,
                                below,
                                above,
                            } => NodeFile::Split {
                                input: input_name(input).to_owned(),
                                at: round(at),
                                value: round(value),
                                below,
                                above,
                            },
                        })
                        .collect()
                })
                .collect(),
            abstain_below: round(self.abstain_below),
            abstain_on: self.abstain_on,
        };
        let mut s = serde_json::to_string_pretty(&f).expect("a model serializes");
        s.push('\n');
        s
    }

    /// The trees' part of a candidate's score.
    pub fn trees_score(&self, x: &[f64; N_FEATURES], signals: &[f64; N_SIGNALS]) -> f64 {
        self.trees.iter().map(|t| t.eval(|k| tree_input(x, signals, k))).sum()
    }

    /// Each feature's weight for a query with these signals (its terms summed).
    pub fn feature_weights(&self, signals: &[f64; N_SIGNALS]) -> [f64; N_FEATURES] {
        let mut w = [0.0; N_FEATURES];
        for t in &self.terms {
            w[t.feature] += t.factor(signals);
        }
        w
    }
}

/// Six decimals: the file stays readable and its diffs small.
fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}
