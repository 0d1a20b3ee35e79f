#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
mkdir -p out
tar -xzf bundle.tar.gz -C out
top="$(tar -tzf bundle.tar.gz | sed -n 1p | cut -d/ -f1)"  # sed reads all: no SIGPIPE under pipefail
(cd "out/$top" && find . -type f | sed 's#^\./##' | LC_ALL=C sort | while read -r f; do
  sha256sum "$f"; done) > manifest.txt
