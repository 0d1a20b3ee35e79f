"""The task folders under data/ are test inputs, not tests of ours."""

collect_ignore = ["data"]
