#!/bin/bash
# Verifier entry point (Harbor contract): writes 1 or 0 to $LOGS/verifier/reward.txt.
logs="${FIRE_LOGS:-/logs}"
tests="${FIRE_TESTS:-/tests}"
mkdir -p "$logs/verifier"
if python3 "$tests/check.py" >&2; then echo 1; else echo 0; fi > "$logs/verifier/reward.txt"
