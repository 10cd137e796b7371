"""Replays: the evaluation set's queries sent to the live ranker, its rankings published.

`rankmon replay` reads the query texts (`topics.py`), asks the ranker over HTTP
(`ranker.py`: presets for Elasticsearch/OpenSearch, Solr and a plain JSON API; timeouts,
retries with backoff), runs one replay at a time with a concurrency and a rate limit
(`runner.py`), publishes one event per query, all with one `replay_id`, and an end-of-replay
marker per partition (`events.py`), and repeats on the `replay:` section's schedule
(`schedule.py`, APScheduler). Its settings are declared in `settings.py`.
"""
