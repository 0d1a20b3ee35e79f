#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
mkdir -p out
tar -xzf bundle.tar.gz -C out
top="$(tar -tzf bundle.tar.gz | head -1 | cut -d/ -f1)"
(cd "out/$top" && find . -type f | sed 's#^\./##' | LC_ALL=C sort | while read -r f; do
  sha256sum "$f"; done) > manifest.txt
