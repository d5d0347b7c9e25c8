"""An independent forward pass of all-MiniLM-L6-v2 in numpy (f64), from the same safetensors
file, to check crates/embed against: prints the first dimensions of the L2-normalised,
mean-pooled embeddings of a few texts, as Rust constants for tests/embed.rs.

Run once, by hand (not part of the test run):
    python3 -m venv /tmp/v && /tmp/v/bin/pip install numpy safetensors tokenizers
    /tmp/v/bin/python crates/embed/reference/numpy_reference.py models/all-MiniLM-L6-v2
The token ids come from the Python binding of the same `tokenizers` library; the network
(embeddings, 6 encoder layers, GELU (erf), pooling) is written out here, independently of candle.
"""
import json
import math
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

TEXTS = ["put a meeting on my calendar", "create a calendar event", "delete a git branch"]
SHOW = 8

d = sys.argv[1]
cfg = json.load(open(f"{d}/config.json"))
w = {k: v.astype(np.float64) for k, v in load_file(f"{d}/model.safetensors").items()}
w = {k.removeprefix("bert."): v for k, v in w.items()}
tok = Tokenizer.from_file(f"{d}/tokenizer.json")
tok.no_padding()
tok.no_truncation()
H, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
erf = np.vectorize(math.erf)


def ln(x, p):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w[p + ".weight"] + w[p + ".bias"]


def lin(x, p):
    return x @ w[p + ".weight"].T + w[p + ".bias"]


def embed(text):
    ids = np.array(tok.encode(text).ids)
    n = len(ids)
    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = ln(x, "embeddings.LayerNorm")
    hd = H // heads
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q = lin(x, p + "attention.self.query").reshape(n, heads, hd).transpose(1, 0, 2)
        k = lin(x, p + "attention.self.key").reshape(n, heads, hd).transpose(1, 0, 2)
        v = lin(x, p + "attention.self.value").reshape(n, heads, hd).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(n, H)
        x = ln(lin(a, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        x = ln(lin(h, p + "output.dense") + x, p + "output.LayerNorm")
    m = x.mean(0)
    return m / np.linalg.norm(m)


E = [embed(t) for t in TEXTS]
print("const REFERENCE: [(&str, [f32; %d]); %d] = [" % (SHOW, len(TEXTS)))
for t, e in zip(TEXTS, E):
    print(f"    ({t!r:}, [{', '.join(f'{x:.6}' for x in e[:SHOW])}]),".replace("'", '"'))
print("];")
print("// cosines: 0-1 %.6f, 0-2 %.6f, 1-2 %.6f" % (E[0] @ E[1], E[0] @ E[2], E[1] @ E[2]))
