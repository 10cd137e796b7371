"""Tests against one real part: the broker, Prometheus, Alertmanager, promtool, the C toolchain."""
