#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
python3 - <<'PY'
import itertools
codes = []
for a, b, c in itertools.product(range(10), repeat=3):
    n = 100 * a + 10 * b + c
    if a + b + c == 14 and n % 4 == 0 and len({a, b, c}) == 3 and a % 2 == 1 and b > c:
        codes.append(f"{a}{b}{c}")
open("codes.txt", "w").write("\n".join(codes) + "\n")
PY
