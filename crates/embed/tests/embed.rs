//! Tests on the real model; skipped (with a message) when it is not installed: run
//! `scripts/fetch-model.sh`, or point `EMBED_MODEL` at a model directory.

use std::sync::OnceLock;

use embed::{default_model_dir, Embedder};

/// The loaded model, shared by the tests of this file; `None` when it is not installed.
fn embedder() -> Option<&'static Embedder> {
    static EMBEDDER: OnceLock<Option<Embedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            let dir = default_model_dir();
            if !dir.join("model.safetensors").is_file() {
                eprintln!(
                    "SKIPPED: no model at {} (run scripts/fetch-model.sh or set EMBED_MODEL)",
                    dir.display()
                );
                return None;
            }
            Some(Embedder::load(&dir).expect("the installed model loads"))
        })
        .as_ref()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn dimension_384_and_unit_norm() {
    let Some(e) = embedder() else { return };
    assert_eq!(e.dim(), 384);
    let v = e
        .embed(&["search the web", "", "a much longer text about tools and calendars"])
        .unwrap();
    assert_eq!(v.len(), 3);
    for x in &v {
        assert_eq!(x.len(), 384);
        let norm = dot(x, x).sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
}

#[test]
fn paraphrase_closer_than_unrelated() {
    let Some(e) = embedder() else { return };
    let v = e
        .embed(&[
            "put a meeting on my calendar",
            "create a calendar event",
            "delete a git branch",
        ])
        .unwrap();
    let para = dot(&v[0], &v[1]);
    let unrelated = dot(&v[0], &v[2]);
    let unrelated2 = dot(&v[1], &v[2]);
    assert!(para > unrelated + 0.2, "paraphrase {para} vs unrelated {unrelated}");
    assert!(para > unrelated2 + 0.2, "paraphrase {para} vs unrelated {unrelated2}");
}

#[test]
fn batch_equals_single_and_is_deterministic() {
    let Some(e) = embedder() else { return };
    let texts = [
        "create a calendar event",
        "list open pull requests in a repository",
        "x",
        "send an email to a contact with an attachment and a subject line",
        "",
    ];
    let batch = e.embed(&texts).unwrap();
    for (text, b) in texts.iter().zip(&batch) {
        let single = e.embed(&[text]).unwrap();
        let d = max_abs_diff(&single[0], b);
        assert!(d < 1e-5, "{text:?}: batch and single differ by {d}");
    }
    assert_eq!(e.embed(&texts).unwrap(), batch, "same input, same output");
    assert!(e.embed(&[]).unwrap().is_empty());
}

#[test]
fn truncates_long_texts() {
    let Some(e) = embedder() else { return };
    assert_eq!(e.max_length(), 256);
    let long = "calendar ".repeat(2000);
    let longer = format!("{long} git branch");
    let v = e.embed(&[&long, &longer]).unwrap();
    // Both are cut at 256 tokens before the tail differs.
    assert!(max_abs_diff(&v[0], &v[1]) < 1e-5);
}

#[test]
fn missing_directory_is_a_clear_error() {
    let err = Embedder::load("/nonexistent/model/dir").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("/nonexistent/model/dir"), "{msg}");
}
