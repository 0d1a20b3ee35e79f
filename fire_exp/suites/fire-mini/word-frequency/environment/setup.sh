#!/bin/bash
# Prepares the agent's working folder, in a container (/app) and locally ($FIRE_WORKDIR).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${FIRE_WORKDIR:-/app}"
mkdir -p "$work"
cp -a "$here/files/." "$work/"
