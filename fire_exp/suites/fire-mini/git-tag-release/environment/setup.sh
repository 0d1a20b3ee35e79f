#!/bin/bash
# Prepares the agent's working folder, in a container (/app) and locally ($FIRE_WORKDIR):
# a git repository with a short history, whose release commit is not the latest one.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${FIRE_WORKDIR:-/app}"
mkdir -p "$work/repo"
git() { command git -C "$work/repo" -c user.name=maintainer -c user.email=maintainer@example.com \
  -c init.defaultBranch=main "$@"; }
git init -q
n=0
commit() {  # message, then a date so the history is reproducible
  n=$((n + 1))
  echo "$1" >> "$work/repo/history.txt"
  git add -A
  GIT_AUTHOR_DATE="2026-10-0${n}T12:00:00Z" GIT_COMMITTER_DATE="2026-10-0${n}T12:00:00Z" \
    git commit -q -m "$1"
}
commit "Initial import"
commit "Release 1.1.0"
commit "Speed up search"
cp "$here/files/CHANGES.md" "$work/repo/"
commit "Release 1.2.0"
commit "Fix typo in README"
commit "Start 1.3.0 development"
