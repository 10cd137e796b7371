"""The compact dedupe set against a plain Python set of the same ids."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from monitor.windows.dedupe import EventIdSet, Int64s, id_hashes


def closed_before(limit: int) -> Callable[[Int64s], npt.NDArray[np.bool_]]:
    return lambda panes: panes < limit


def test_id_set_answers_like_a_python_set_through_adds_merges_and_discards() -> None:
    rng = random.Random(5)
    held = EventIdSet()
    model: dict[str, tuple[int, int]] = {}  # id -> (pane, partition)
    for step in range(300):
        ids = list({f"id-{rng.randrange(20_000)}" for _ in range(rng.randrange(1, 60))})
        hashes = id_hashes(ids)
        fresh = [i for i, event_id in enumerate(ids) if event_id not in model]
        assert held.contains(hashes).tolist() == [event_id in model for event_id in ids]
        panes = np.array([step // 10 * 100] * len(fresh), dtype=np.int64)
        partitions = np.array([rng.randrange(3) for _ in fresh], dtype=np.int64)
        held.add(hashes[fresh], panes, partitions)
        for k, i in enumerate(fresh):
            model[ids[i]] = (int(panes[k]), int(partitions[k]))
        if step % 50 == 49:  # a finalize closes the older panes, a revoke takes partition 2
            limit = step // 10 * 100 - 200
            held.discard_panes(closed_before(limit))
            held.discard_partitions([2])
            model = {i: (p, q) for i, (p, q) in model.items() if p >= limit and q != 2}
        assert len(held) == len(model)
    probe = [f"id-{n}" for n in range(20_000)]
    assert held.contains(id_hashes(probe)).tolist() == [i in model for i in probe]
