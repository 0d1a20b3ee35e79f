"""Checks /app/count.txt (plain asserts: the base image has no pytest)."""
import os
from pathlib import Path

count = Path("/app/count.txt")
assert count.is_file(), "no /app/count.txt"
assert count.read_text().strip() == os.environ["EXPECTED_WORDS"], count.read_text()
print("word count ok")
