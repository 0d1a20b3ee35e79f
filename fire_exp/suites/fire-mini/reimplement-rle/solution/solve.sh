#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
cat > rle.py <<'PY'
import sys
d=sys.stdin.buffer.read();o=bytearray();i=0
while i<len(d):
 b=d[i];j=i
 while j<len(d) and d[j]==b and j-i<255:j+=1
 n=j-i;o+=bytes((27,n,b)) if n>2 or b==27 else bytes((b,))*n;i=j
sys.stdout.buffer.write(o)
PY
for input in "" "a" "aaaabbbc" "$(printf 'x%.0s' $(seq 300))" "$(printf 'a\033b\033\033')"; do
  cmp <(printf '%s' "$input" | ./orig/rle) <(printf '%s' "$input" | python3 rle.py)
done
gzip -9c rle.py | wc -c
