#!/bin/bash
# The shape of a Terminal-Bench 2 test.sh: run the tests, then turn their exit status into
# /logs/verifier/reward.txt (the base image has no pytest, so plain python3 here).
mkdir -p /logs/verifier
python3 /tests/test_outputs.py
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
