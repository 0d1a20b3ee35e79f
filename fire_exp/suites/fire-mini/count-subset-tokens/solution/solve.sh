#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
python3 - <<'PY'
import json, sys
sys.path.insert(0, "tools")
from tokenizer import count_tokens
rows = [json.loads(line) for line in open("data/reviews.jsonl")]
keep = [r for r in rows if r["category"].strip().lower() == "books" and r["split"] == "train"]
title = sum(count_tokens(r["title"]) for r in keep)
body = sum(count_tokens(r["body"]) for r in keep)
print(f"subtotals: title={title} body={body} total={title + body}")
open("answer.txt", "w").write(f"{title + body}\n")
PY
