"""Report: Markdown summaries, paper tables and figures from an attempts file."""
