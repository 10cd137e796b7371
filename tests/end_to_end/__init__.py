"""The whole service (or the CLI) end to end, against the real parts."""
