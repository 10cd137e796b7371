"""Property and fuzz tests (hypothesis), and engines held to each other bit for bit."""
