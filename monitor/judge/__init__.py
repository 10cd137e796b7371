"""`rankmon judge`: an LLM judge worker answering the judging loop's to-judge topic with
judgments, through any OpenAI-compatible chat-completions endpoint (docs/judging.md)."""
