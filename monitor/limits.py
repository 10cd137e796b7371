"""What every record rankmon reads is held to, whoever wrote it: the limits of an event.

A ranking event's time may be at most `events.max_future` ahead of rankmon's clock, and it
moves the watermark at most `windows.max_clock_skew` past its record's Kafka timestamp; its
strings are at most `events.max_id_bytes`. The records of the other topics (progress records
on the windows topic, pairs on the to-judge topic, judgments) and a replay's notices carry
times and strings too: `RecordLimits` holds them to the same bounds, so one record that claims
the future cannot stall the group, spend the judging budget for a year, or outrank every
later grade.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_LIMITS", "RecordLimits", "longer_than"]


@dataclass(frozen=True, slots=True)
class RecordLimits:
    """The bounds of `events.max_future`, `windows.max_clock_skew` and `events.max_id_bytes`."""

    max_future_ms: int = 300_000
    max_clock_skew_ms: int = 10_000
    max_id_bytes: int = 512

    def time_refusal(self, time_ms: int, record_ms: int, now_ms: int) -> str | None:
        """Why a time a record names is too far ahead (None: it is not): past `now_ms` plus
        the allowed future, or past the record's Kafka timestamp plus the clock skew (a
        writer sends a record after the time it names; a timestamp of 0 or less is none)."""
        if time_ms > now_ms + self.max_future_ms:
            return "past events.max_future ahead of now"
        if record_ms > 0 and time_ms > record_ms + self.max_clock_skew_ms:
            return "past its record timestamp plus windows.max_clock_skew"
        return None

    def too_long(self, text: str) -> bool:
        """Whether `text` is longer than `max_id_bytes` in UTF-8."""
        return longer_than(text, self.max_id_bytes)


def longer_than(text: str, max_bytes: int) -> bool:
    """Whether `text` is longer than `max_bytes` in UTF-8."""
    # A str of n characters takes n to 4n bytes: only the doubtful ones are encoded.
    return len(text) * 4 > max_bytes and (
        len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes
    )


DEFAULT_LIMITS: Final = RecordLimits()
