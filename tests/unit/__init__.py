"""Unit tests: one module or stage at a time, fakes for IO."""
