#!/usr/bin/env python3
"""Embed the texts `search-eval --export-texts DIR` wrote with another sentence model, for
`search-eval --vectors DIR`: measures a candidate model through this search's own fusion
before the `embed` crate can run it.

    cargo run --release -p search-eval -- --all-visible --export-texts target/ext
    python3 scripts/embed-external.py path/to/model target/ext     # pip install sentence-transformers
    cargo run --release -p search-eval -- --all-visible --vectors target/ext [--arms] [--baseline DIR]

MODEL is anything `sentence_transformers.SentenceTransformer` loads (a local folder with
`modules.json`, or a plain transformer folder: mean pooling). Tools are read at 128 tokens and
queries at 256, as the search's own model reads them; vectors are L2-normalised. Writes
DIR/texts.jsonl (one JSON string per line) and DIR/vectors.f32 (one row of little-endian f32s
per line).
"""
import json
import sys
from pathlib import Path


def read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model_dir, out = sys.argv[1], Path(sys.argv[2])
    import numpy as np
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")
    tools = read(out / "tools.jsonl")
    queries = read(out / "queries.jsonl")
    texts, rows = [], []
    for part, max_tokens in ((tools, 128), (queries, 256)):
        if not part:
            continue
        model.max_seq_length = max_tokens
        v = model.encode(part, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        texts += part
        rows.append(v.astype("<f4"))
        print(f"embedded {len(part)} texts at {max_tokens} tokens", file=sys.stderr)
    with open(out / "texts.jsonl", "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    np.concatenate(rows).tofile(out / "vectors.f32")


if __name__ == "__main__":
    main()
