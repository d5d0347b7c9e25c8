//! A score rebuilt as a labelled tree (after tantivy's `Explanation`), so "why is X above Y?"
//! is answered by reading numbers instead of re-deriving BM25 by hand.

use serde::Serialize;

/// One node: a value, what it is, and the parts it was computed from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub value: f64,
    pub description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Explanation>,
}

impl Explanation {
    pub fn new(description: impl Into<String>, value: f64) -> Explanation {
        Explanation {
            value,
            description: description.into(),
            details: Vec::new(),
        }
    }

    pub fn with(mut self, child: Explanation) -> Explanation {
        self.details.push(child);
        self
    }

    pub fn add(&mut self, child: Explanation) {
        self.details.push(child);
    }

    /// Indented text form, one node per line (for the CLI's `--explain`).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out
    }

    fn write(&self, out: &mut String, depth: usize) {
        out.push_str(&"  ".repeat(depth));
        out.push_str(&format!("{:.4}  {}\n", self.value, self.description));
        for d in &self.details {
            d.write(out, depth + 1);
        }
    }
}
