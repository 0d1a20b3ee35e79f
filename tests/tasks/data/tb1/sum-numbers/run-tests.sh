#!/bin/bash
# Terminal-Bench 1 runs its tests from $TEST_DIR (the base image has no pytest).
python3 $TEST_DIR/test_outputs.py
