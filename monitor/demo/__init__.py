"""`rankmon demo`: the whole loop on one machine (broker, synthetic ranker, monitor, alerts)."""
