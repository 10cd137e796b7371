"""Window shares on the windows topic, their read-back, the publish fence, the crash points.

The end-to-end proofs run `rankmon run` against Tansu (test_recovery.py, test_scale_out.py);
these pin the record format other tools read and the replay rule the through offsets give.
"""

from __future__ import annotations

import random
import string
import subprocess
import sys
import zlib
from collections.abc import Callable, Mapping
from dataclasses import replace

import orjson
import pytest

from monitor.checkpoint.publisher import SharePublisher
from monitor.checkpoint.restore import ShareRestore
from monitor.checkpoint.share import THROUGH_HEADER, WindowShare
from monitor.demo.broker import EmbeddedBroker
from monitor.kafka.bootstrap import KafkaUnavailableError
from monitor.kafka.producer import Headers, RecordProducer
from monitor.testing.crashpoints import CRASH_ENV, CrashPoints
from monitor.windows.summary import WindowSummary
from tests.support.recovery_support import read_topic
from tests.unit.test_windows import Ev, add, mark, windows

SUMMARY = WindowSummary(
    window="1s",
    start_ms=1_000,
    end_ms=2_000,
    segment=(("model", "v1"),),
    evaluation_set_version="abc",
    events=3,
    queries=2,
    evaluation_set_queries=10,
    means={"mrr": 0.75},
    sums={"mrr": 1.5},
    event_means={"mrr": 2 / 3},
    query_means={"q1": {"mrr": 1.0}, "q2": {"mrr": 0.5}},
)


def test_share_key_names_the_window_the_segment_and_the_partitions_it_covers() -> None:
    share = WindowShare(SUMMARY, frozenset({2, 0}))
    assert share.key == b"1s/1000/model=v1/p0,2"


def test_share_value_is_the_summary_plus_its_partitions_and_reads_back_as_both() -> None:
    share = WindowShare(SUMMARY, frozenset({2, 0}))
    value = share.to_json()
    assert orjson.loads(value)["partitions"] == [0, 2]
    assert WindowShare.from_json(value) == share
    assert WindowSummary.from_json(value) == SUMMARY  # readers of plain summaries still work


def test_through_offsets_travel_in_a_header_so_the_value_stays_what_any_run_publishes() -> None:
    share = WindowShare(SUMMARY, frozenset({0, 2}), {0: 1250, 2: 988})
    assert (THROUGH_HEADER, b"0:1250,2:988") in share.headers
    assert share.to_json() == WindowShare(SUMMARY, frozenset({0, 2})).to_json()


def test_a_plain_summary_record_covers_every_partition_and_restores_no_alerts() -> None:
    share = WindowShare.from_json(SUMMARY.to_json())
    assert share.partitions is None
    assert share.key == SUMMARY.key.encode()
    assert not share.owned_by({0, 1, 2})


def test_alerts_restore_only_from_shares_whose_partitions_are_all_owned() -> None:
    share = WindowShare(SUMMARY, frozenset({0, 2}))
    assert share.owned_by({0, 1, 2})
    assert not share.owned_by({0, 1})


def test_partitions_that_are_not_a_list_of_integers_are_not_a_share() -> None:
    value = orjson.loads(SUMMARY.to_json())
    value["partitions"] = ["0"]
    with pytest.raises(ValueError, match="partitions"):
        WindowShare.from_json(orjson.dumps(value))


def test_replayed_record_of_a_published_window_is_late_at_or_past_the_through_offset() -> None:
    # First life (two partitions, size 10, lateness 10): [0, 10) held a, f (p0) and c (p1)
    # and was published when p0 had been read through offset 4; h (p0, offset 4) came after
    # it closed: late, but its dead letter died unflushed with the process.
    #   p0  a@1 b@15 f@9 g@21 h@3        p1  c@2 d@25         committed: p0 1, p1 1
    # The replay reads p0 from offset 1 before p1 has delivered anything: the global
    # watermark is still unknown, so only the through offset can tell f (counted) from h.
    monitor, _ = windows(size=10, lateness=10)
    monitor.assign([0, 1])
    mark(monitor, 0, (), [0, 1], {0: 4, 1: 2})
    replay = [Ev(15, "b", offset=1), Ev(9, "f", offset=2), Ev(21, "g", offset=3)]
    admission = add(monitor, *replay, Ev(3, "h", offset=4))
    assert admission.already_published == [1]  # f
    assert admission.late == [3]  # h: dead-lettered again


def test_without_through_offsets_a_replayed_record_of_a_published_window_counts_as_published() -> (
    None
):
    monitor, _ = windows(size=10, lateness=10)
    monitor.assign([0, 1])
    mark(monitor, 0, (), [0, 1])
    admission = add(monitor, Ev(15, "b", offset=1), Ev(9, "f", offset=2))
    assert admission.already_published == [1]


def test_crash_points_are_inert_unless_the_variable_arms_one() -> None:
    points = CrashPoints.from_environ({})
    for point in ("after-intake", "after-window-publish", "after-publish", "after-commit"):
        assert not points.armed(point)
        points(point)  # still alive


def test_an_unknown_crash_point_is_refused_with_the_known_ones_named() -> None:
    with pytest.raises(ValueError, match="after-commit"):
        CrashPoints.from_environ({CRASH_ENV: "after-lunch:2"})


def test_an_armed_crash_point_kills_the_process_at_its_nth_passage() -> None:
    program = (
        "from monitor.testing.crashpoints import CrashPoints\n"
        "points = CrashPoints.from_environ({'RANKMON_TEST_CRASH_AT': 'after-commit:2'})\n"
        "for n in range(3):\n"
        "    print(n, points.armed('after-commit'), flush=True)\n"
        "    points('after-publish')\n"
        "    points('after-commit')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == -9
    assert done.stdout.splitlines() == ["0 False", "1 True"]


class Member:
    """A group member whose commits fail while the group is rebalancing."""

    def __init__(self) -> None:
        self.broker_up = True
        self.rebalancing = False
        self.commits: list[dict[int, int]] = []

    def commit(self, offsets: Mapping[int, int]) -> bool:
        self.commits.append(dict(offsets))
        return not self.rebalancing


class FlakyProducer(RecordProducer):
    """Keeps what is sent until a flush succeeds; every flush fails while `failing`."""

    def __init__(self) -> None:
        super().__init__(bootstrap_servers="127.0.0.1:9")  # send and flush are fakes
        self.failing = True
        self.queued: list[bytes | None] = []
        self.acked: list[bytes | None] = []

    def send(self, topic: str, key: bytes | None, value: bytes, headers: Headers) -> None:
        self.queued.append(key)

    def flush(self) -> None:
        if self.failing:
            raise KafkaUnavailableError(f"{len(self.queued)} records not acknowledged")
        self.acked += self.queued
        self.queued = []


def test_after_a_failed_flush_a_new_finalize_commits_nothing_past_the_unacknowledged_window() -> (
    None
):
    # A broker outage: the consumer is back before the producer, so the fence commit works
    # but the flush does not. The next tick finalizes another window, whose fence (9) passes
    # the first window's records: committing it before the first share is acknowledged
    # would lose that window to a crash.
    member = Member()
    producer = FlakyProducer()
    publisher = SharePublisher(producer, "windows", member)
    first = WindowShare(SUMMARY, frozenset({0}))
    later = WindowShare(replace(SUMMARY, start_ms=2_000, end_ms=3_000), frozenset({0}))
    third = WindowShare(replace(SUMMARY, start_ms=3_000, end_ms=4_000), frozenset({0}))

    publisher.add([first], fence={0: 5})
    assert not publisher.publish()
    publisher.add([later], fence={0: 9})  # 9 would pass `first`'s records
    assert not publisher.publish()
    assert member.commits == [{0: 5}, {0: 5}]
    assert publisher.held == [first, later]

    producer.failing = False
    assert publisher.publish()  # the tick may now commit past both windows
    assert producer.acked == [first.key, later.key]  # each sent once, in order
    assert publisher.held == []
    publisher.add([third], fence={0: 12})
    assert publisher.publish()
    assert member.commits[-1] == {0: 12}


class StoppedError(Exception):
    """The step hook ended the publish, as a crash would."""


def test_a_publish_goes_window_by_window_so_a_crash_between_two_leaves_whole_windows() -> None:
    # Two segments of one window, then a second window: the first window is acknowledged as
    # a whole before anything of the second is sent.
    member, producer = Member(), FlakyProducer()
    producer.failing = False
    steps: list[str] = []

    def hook(step: str) -> None:
        steps.append(step)
        if step == "after-window-publish":
            raise StoppedError

    publisher = SharePublisher(producer, "windows", member, step=hook)
    first = WindowShare(SUMMARY, frozenset({0}))
    beside = WindowShare(replace(SUMMARY, segment=(("model", "v2"),)), frozenset({0}))
    later = WindowShare(replace(SUMMARY, start_ms=2_000, end_ms=3_000), frozenset({0}))
    publisher.add([first, beside, later], fence={0: 5})
    with pytest.raises(StoppedError):
        publisher.publish()
    assert producer.acked == [first.key, beside.key]
    assert producer.queued == []  # `later` was not even sent
    assert steps == ["after-window-publish"]


def test_a_publish_reports_each_window_then_the_whole_publish_to_its_hook() -> None:
    member, producer = Member(), FlakyProducer()
    producer.failing = False
    steps: list[str] = []
    publisher = SharePublisher(producer, "windows", member, step=steps.append)
    later = WindowShare(replace(SUMMARY, start_ms=2_000, end_ms=3_000), frozenset({0}))
    publisher.add([WindowShare(SUMMARY, frozenset({0})), later], fence={0: 5})
    assert publisher.publish()
    assert steps == ["after-window-publish", "after-window-publish", "after-publish"]
    assert publisher.publish()  # nothing held: a flush of the dead letters, no step
    assert len(steps) == 3


def shares_on(bootstrap: str, topic: str) -> list[bytes]:
    return [r.key for r in read_topic(bootstrap, topic)]


@pytest.mark.broker
def test_shares_wait_behind_the_fence_of_the_oldest_held_window_until_the_group_settles(
    tansu: EmbeddedBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    member = Member()
    producer = RecordProducer(bootstrap_servers=tansu.bootstrap_servers)
    publisher = SharePublisher(producer, topic, member)
    first = WindowShare(SUMMARY, frozenset({0}))
    later = WindowShare(replace(SUMMARY, start_ms=2_000, end_ms=3_000), frozenset({0}))
    try:
        member.rebalancing = True
        publisher.add([first], fence={0: 5})
        assert not publisher.publish()
        publisher.add([later], fence={0: 9})  # 9 would pass `first`'s records
        member.broker_up = False
        assert not publisher.publish()  # no broker: not even a fence attempt
        member.broker_up, member.rebalancing = True, False
        assert publisher.publish()
    finally:
        producer.close()

    assert member.commits == [{0: 5}, {0: 5}]
    assert publisher.held == []
    assert shares_on(tansu.bootstrap_servers, topic) == [first.key, later.key]


def test_restore_marks_every_share_but_keeps_only_the_newest_owned_ones_for_alerts() -> None:
    monitor, _ = windows(size=1_000)
    restore = ShareRestore(monitor, owned={0, 1}, keep=2)
    owned = [replace(SUMMARY, start_ms=1_000 * n, end_ms=1_000 * (n + 1)) for n in (1, 2, 3)]
    for summary in owned:
        restore.take(WindowShare(summary, frozenset({0})))
    restore.take(WindowShare(replace(SUMMARY, start_ms=4_000, end_ms=5_000), frozenset({2})))

    assert restore.read == 4
    assert monitor.state_size().published == 4
    assert restore.owned_summaries() == owned[1:]


class KafkaSizedBroker:
    """A sink that refuses, as Kafka's default message.max.bytes does, a record whose value
    compressed (the producer gzips) is past `max_bytes`: the flush then fails."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.refused = 0
        self.stored: list[bytes] = []
        self._queued: list[bytes] = []

    def send(self, topic: str, key: bytes | None, value: bytes, headers: Headers) -> None:
        self._queued.append(value)

    def flush(self) -> None:
        queued, self._queued = self._queued, []
        too_large = [v for v in queued if len(zlib.compress(v, 6)) > self.max_bytes]
        if too_large:
            self.refused += len(too_large)
            raise KafkaUnavailableError(f"{len(too_large)} records past message.max.bytes")
        self.stored += queued

    def close(self) -> None:
        pass


def test_a_share_whose_labels_never_fit_is_published_without_them_and_the_commit_moves() -> None:
    # One event with a 900 kB incompressible segment value made every later share carry it in
    # its label state: 1.31 MB gzipped against the 1 MiB record limit, refused for good.
    rng = random.Random(7)
    noise = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(1_800_000))
    labels = {"values": {"model": {"v1": 2_000, noise: 2_000}}, "combinations": []}
    member, broker = Member(), KafkaSizedBroker(1_048_576)
    counted: list[str] = []
    publisher = SharePublisher(broker, "windows", member, 1_048_576, trimmed=counted.append)
    share = WindowShare(replace(SUMMARY, segment_labels=labels), frozenset({0}))

    publisher.add([share], fence={0: 5})
    assert publisher.publish()
    assert publisher.held == []
    assert counted == ["query_means", "segment_labels"]
    (stored,) = broker.stored
    restored = WindowShare.from_record(stored, share.headers)
    assert restored.summary == replace(SUMMARY, query_means={}, segment_labels={})
    publisher.add(
        [WindowShare(replace(SUMMARY, start_ms=2_000, end_ms=3_000), frozenset({0}))], {0: 9}
    )
    assert publisher.publish()
    assert member.commits[-1] == {0: 9}
    assert broker.refused == 0


def test_a_share_that_fits_keeps_everything_and_counts_nothing() -> None:
    member, broker = Member(), KafkaSizedBroker(1_048_576)
    counted: list[str] = []
    publisher = SharePublisher(broker, "windows", member, 1_048_576, trimmed=counted.append)
    publisher.add([WindowShare(SUMMARY, frozenset({0}))], fence={0: 5})
    assert publisher.publish()
    assert counted == []
    assert WindowShare.from_record(broker.stored[0], []).summary == SUMMARY
