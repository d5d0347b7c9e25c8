//! Tests on the real model; skipped (with a message) when it is not installed: run
//! `scripts/fetch-model.sh`, or point `EMBED_MODEL` at a model directory. Under
//! `REQUIRE_PEERS=1` (CI) a missing model fails instead.

use std::sync::OnceLock;

use embed::{default_model_dir, Embedder};

/// The loaded model, shared by the tests of this file; `None` when it is not installed.
fn embedder() -> Option<&'static Embedder> {
    static EMBEDDER: OnceLock<Option<Embedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            let dir = default_model_dir();
            if !embed::model_installed_or_skip(&dir, "the embedder tests") {
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
fn candle_runs_one_thread_per_batch_unless_the_environment_says_otherwise() {
    assert_eq!(embed::candle_threads_for_batches(None), Some("1"));
    let set = std::ffi::OsStr::new("4");
    assert_eq!(embed::candle_threads_for_batches(Some(set)), None);
    let empty = std::ffi::OsStr::new("");
    assert_eq!(embed::candle_threads_for_batches(Some(empty)), None);
}

#[test]
fn missing_directory_is_a_clear_error() {
    let err = Embedder::load("/nonexistent/model/dir").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("/nonexistent/model/dir"), "{msg}");
}

#[test]
fn a_model_that_is_not_a_plain_bert_is_refused_with_its_config_named() {
    let dir = default_model_dir();
    if !embed::model_installed_or_skip(&dir, "the config refusal test") {
        return;
    }
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).expect("config.json")).expect("json");
    // (edit, what the error says): our own check, or the config's parser (candle's BERT
    // config knows only absolute positions)
    let cases: [(&str, serde_json::Value, &str); 3] = [
        ("hidden_act", "relu".into(), "not a BERT this embedder runs"),
        ("num_attention_heads", 7.into(), "not a BERT this embedder runs"),
        (
            "position_embedding_type",
            "relative_key".into(),
            "unknown variant `relative_key`",
        ),
    ];
    // the real weights and tokenizer, linked; only the config differs
    let model_dir = |config: &serde_json::Value| {
        let tmp = tempfile::tempdir().expect("tempdir");
        for file in ["model.safetensors", "tokenizer.json", "sentence_bert_config.json"] {
            std::os::unix::fs::symlink(dir.join(file).canonicalize().expect(file), tmp.path().join(file))
                .expect("symlink");
        }
        std::fs::write(tmp.path().join("config.json"), config.to_string()).expect("write config");
        tmp
    };
    // the directory so made, with the config unchanged, loads
    Embedder::load(model_dir(&config).path()).expect("the unchanged config loads");
    for (key, value, says) in cases {
        let mut edited = config.clone();
        edited[key] = value.clone();
        let tmp = model_dir(&edited);
        let err = Embedder::load(tmp.path()).expect_err(&format!("{key} = {value} is refused"));
        let msg = err.to_string();
        assert!(msg.contains(says), "{key}: {msg}");
        assert!(
            msg.contains(&tmp.path().join("config.json").display().to_string()),
            "{msg}"
        );
    }
}

/// The first dimensions of the embeddings computed by `reference/numpy_reference.py`: an
/// independent numpy (f64) forward pass over the same safetensors file.
const REFERENCE: [(&str, [f32; 8]); 3] = [
    (
        "put a meeting on my calendar",
        [
            -0.0163398, 0.0101574, -0.0461506, 0.0847541, -0.0829746, -0.0015895, 0.0097327, -0.0231119,
        ],
    ),
    (
        "create a calendar event",
        [
            -0.00780687,
            0.0349025,
            -0.0229483,
            0.0454146,
            -0.066966,
            0.045132,
            0.00326291,
            0.0163727,
        ],
    ),
    (
        "delete a git branch",
        [
            0.0278416,
            0.00723349,
            -0.0177317,
            -0.00344445,
            -0.012573,
            -0.0436306,
            0.0515341,
            -0.0428967,
        ],
    ),
];
/// The reference's cosines between the texts above: 0-1, 0-2, 1-2.
const REFERENCE_COSINES: [f32; 3] = [0.685162, 0.074360, -0.010522];

/// The embedder holds the weights in f16 (the reference computes with the file's f32 weights):
/// its vectors stay within 5e-4 of the reference's, and so do the cosines between them (the f32
/// forward pass itself is checked to 1e-4 against candle-transformers' BERT below).
#[test]
fn matches_the_numpy_reference() {
    let Some(e) = embedder() else { return };
    let texts: Vec<&str> = REFERENCE.iter().map(|(t, _)| *t).collect();
    let v = e.embed(&texts).unwrap();
    for ((text, want), got) in REFERENCE.iter().zip(&v) {
        let d = max_abs_diff(&got[..8], want);
        assert!(d < 5e-4, "{text:?}: {:?} vs reference {want:?} (diff {d})", &got[..8]);
    }
    let cos = [dot(&v[0], &v[1]), dot(&v[0], &v[2]), dot(&v[1], &v[2])];
    for (got, want) in cos.iter().zip(REFERENCE_COSINES) {
        assert!((got - want).abs() < 5e-4, "cosine {got} vs reference {want}");
    }
}

#[test]
fn a_shorter_cut_keeps_the_first_tokens_and_the_closing_separator() {
    let Some(e) = embedder() else { return };
    // one word-piece per word: [CLS] + 14 words + [SEP] = 16 tokens
    let words: Vec<String> = (0..40)
        .map(|i| ["red", "green", "blue", "cat", "dog"][i % 5].to_owned())
        .collect();
    let long = words.join(" ");
    let head = words[..14].join(" ");
    let cut = e.embed_at(&[&long], 16).unwrap();
    let whole_head = e.embed(&[&head]).unwrap();
    assert!(max_abs_diff(&cut[0], &whole_head[0]) < 1e-5);
    assert_ne!(
        e.fingerprint(16),
        e.fingerprint(256),
        "the cut is part of what the vectors are"
    );
    assert_eq!(
        e.fingerprint(10_000),
        e.fingerprint(e.max_length()),
        "no cut beyond the model's length"
    );
}

#[test]
fn the_encoder_equals_candle_transformers_bert_in_f32_and_stays_close_in_f16_and_8_bits() {
    use candle_core::{DType, Device, Tensor};
    use candle_transformers::models::bert::{BertModel, Config};
    use embed::encoder::{Encoder, Precision};
    let Some(e) = embedder() else { return };
    let dir = default_model_dir();
    let tensors = candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu).unwrap();
    let config: Config = serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    let bert = BertModel::load(
        candle_nn::VarBuilder::from_tensors(tensors.clone(), DType::F32, &Device::Cpu),
        &config,
    )
    .unwrap();
    let exact = Encoder::build(&tensors, &config, Precision::F32)
        .unwrap()
        .expect("a plain BERT");
    let half = Encoder::build(&tensors, &config, Precision::F16)
        .unwrap()
        .expect("a plain BERT");
    let eight = Encoder::build(&tensors, &config, Precision::Q8)
        .unwrap()
        .expect("a plain BERT");
    let long = "list every open pull request of the repository and its review status ".repeat(20);
    let texts = [
        "search the web",
        "",
        "send an email to the team about tomorrow's launch",
        "Termin im Kalender eintragen",
        long.as_str(),
    ];
    let ids = e.token_ids(&texts, 64).unwrap();
    assert_eq!(ids[4].len(), 64, "cut as embed_at cuts");
    // candle-transformers' BERT, each text alone, mean-pooled and normalised
    let reference: Vec<Vec<f32>> = ids
        .iter()
        .map(|t| {
            let x = Tensor::new(t.as_slice(), &Device::Cpu).unwrap().unsqueeze(0).unwrap();
            let hidden = bert.forward(&x, &x.zeros_like().unwrap(), None).unwrap();
            let mean: Vec<f32> = hidden.mean(1).unwrap().squeeze(0).unwrap().to_vec1().unwrap();
            let norm = dot(&mean, &mean).sqrt();
            mean.iter().map(|v| v / norm).collect()
        })
        .collect();
    let refs: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let batch = exact.embed_batch(&refs).unwrap();
    let via_embedder = e.embed_at(&texts, 64).unwrap();
    let via = e.embed_queries_at(&texts, 64).unwrap();
    for (i, text) in texts.iter().enumerate() {
        // the forward pass itself, alone and packed in a batch: equal to candle-transformers' BERT
        for v in [exact.embed(&ids[i]).unwrap(), batch[i].clone()] {
            let d = max_abs_diff(&v, &reference[i]);
            assert!(d < 1e-4, "{text:?}: {d}");
        }
        // f16 weights (the embedder's tools): the same vector up to the weights' rounding
        // (measured: at most 2.1e-4 per dimension, cosine ≥ 0.999999)
        for v in [half.embed(&ids[i]).unwrap(), via_embedder[i].clone()] {
            let d = max_abs_diff(&v, &reference[i]);
            assert!(d < 5e-4, "{text:?}: {d}");
            assert!(
                dot(&v, &reference[i]) > 0.99999,
                "{text:?}: cosine {}",
                dot(&v, &reference[i])
            );
        }
        // 8-bit weights: the same direction
        let q = eight.embed(&ids[i]).unwrap();
        assert!((dot(&q, &q) - 1.0).abs() < 1e-4);
        assert!(
            dot(&q, &reference[i]) > 0.99,
            "{text:?}: cosine {}",
            dot(&q, &reference[i])
        );
        // the queries' path is one of the two
        assert!(dot(&via[i], &reference[i]) > 0.99);
    }
    assert!(exact.embed_batch(&[]).unwrap().is_empty());
    let precision = e.query_precision();
    assert!(precision == "int8" || precision == "f32");
    assert_eq!(
        e.query_fingerprint(64) == e.fingerprint(64),
        precision == "f32",
        "int8 query vectors are cached apart"
    );
}

#[test]
fn a_query_delta_is_merged_into_the_query_encoder_only() {
    use embed::tune::{LoraSpec, TrainableEncoder};
    use embed::{QueryDelta, QueryDeltaChoice};
    let Some(base) = embedder() else { return };
    let dir = default_model_dir();
    // a delta of random pairs on two layers: what training would leave, without the training
    let spec = LoraSpec {
        rank: 4,
        alpha: 8.0,
        layers: vec![4, 5],
        seed: 3,
        b_std: 0.05,
        ..LoraSpec::default()
    };
    let trainable = TrainableEncoder::load(&dir, &spec).unwrap();
    let mut delta = trainable
        .delta(base.files_digest(), serde_json::json!({"command": "test"}))
        .unwrap();
    let bytes = delta.to_bytes().unwrap();
    let delta = QueryDelta::from_bytes(&bytes).unwrap();
    let tuned = Embedder::load_with(&dir, Some(&delta)).unwrap();
    assert_eq!(tuned.query_delta(), Some(delta.fingerprint()));
    assert!(tuned
        .query_fingerprint(64)
        .ends_with(&format!("-q{}", delta.fingerprint())));
    assert_eq!(
        tuned.fingerprint(64),
        base.fingerprint(64),
        "tool vectors keep their fingerprint"
    );

    let texts = [
        "do I need a coat today",
        "call off tomorrow's retro",
        "send an email to the team",
    ];
    let ids = tuned.token_ids(&texts, 64).unwrap();
    let refs: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let trained: Vec<Vec<f32>> = trainable.embed(&refs).unwrap().to_vec2().unwrap();
    let queries = tuned.embed_queries_at(&texts, 64).unwrap();
    let untuned = base.embed_queries_at(&texts, 64).unwrap();
    for (i, text) in texts.iter().enumerate() {
        // the merged query encoder computes what the trainable one computes (8 bits: the same
        // direction; f32: the same vector)
        let cosine = dot(&queries[i], &trained[i]);
        if tuned.query_precision() == "f32" {
            assert!(max_abs_diff(&queries[i], &trained[i]) < 1e-4, "{text:?}");
        }
        assert!(cosine > 0.99, "{text:?}: cosine {cosine}");
        assert!(
            dot(&queries[i], &untuned[i]) < 0.999,
            "{text:?}: the delta changes the query"
        );
    }
    // the tools' encoder is the model's own
    assert_eq!(tuned.embed_at(&texts, 64).unwrap(), base.embed_at(&texts, 64).unwrap());

    // a delta trained on another model: refused when asked for, skipped (with a note) when built in
    let mut other = delta.clone();
    other.base = "00ff".into();
    let err = Embedder::load_with(&dir, Some(&other)).unwrap_err();
    assert!(err.to_string().contains("trained on the model 00ff"), "{err}");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), other.to_bytes().unwrap()).unwrap();
    assert!(Embedder::load_choosing(&dir, &QueryDeltaChoice::File(file.path().to_owned())).is_err());
    let none = Embedder::load_choosing(&dir, &QueryDeltaChoice::None).unwrap();
    assert_eq!(none.query_delta(), None);
    assert_eq!(none.query_fingerprint(64), base.query_fingerprint(64));
    let garbage = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(garbage.path(), b"not a delta").unwrap();
    let err = Embedder::load_choosing(&dir, &QueryDeltaChoice::File(garbage.path().to_owned())).unwrap_err();
    assert!(err.to_string().contains("not a safetensors file"), "{err}");
}
