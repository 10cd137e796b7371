"""A grade read from a model's answer, or why there is none.

The default prompt (`monitor.judge.prompt`) asks for a short reason and then a last line
`Grade: N`. Models do not always comply, so the answer is read leniently but never guessed:

- a JSON object with an integer `grade` (or `score`, `relevance`), alone or in a code fence;
- else the last `grade:`, `score:` or `relevance:` followed by an integer;
- else an answer that is nothing but an integer.

The integer must be one of the grades the evaluation set uses. An answer that declines
("I can't", "I cannot", "as an AI") with no grade is `refused`; anything else without a grade,
or with one off the scale, is `unparsable`. Both are outcomes the worker counts, never grades.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

import orjson

__all__ = ["Graded", "Ungraded", "read_grade"]

_LABELLED: Final = re.compile(r"\b(?:grade|score|relevance)\s*[:=]\s*\**\s*(-?\d+)\b", re.I)
_ALONE: Final = re.compile(r"\s*\**\s*(-?\d+)\s*\**\s*\.?\s*")
_FENCE: Final = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)
_REFUSAL: Final = re.compile(
    r"\b(?:I\s+(?:can(?:'|no)t|cannot|won't|am\s+unable\s+to)|as\s+an\s+AI)\b", re.I
)
_KEYS: Final = ("grade", "score", "relevance")


@dataclass(frozen=True)
class Graded:
    """A grade on the scale, and the answer's text before it (its reason)."""

    grade: int
    reason: str


@dataclass(frozen=True)
class Ungraded:
    """No grade: `refused` or `unparsable`, with the answer's start for the log."""

    outcome: str
    sample: str


def read_grade(answer: str, grades: Collection[int]) -> Graded | Ungraded:
    """The grade of `answer` on the scale `grades` (module docstring)."""
    text = answer.strip()
    found = _from_json(text)
    if found is None:
        labelled = list(_LABELLED.finditer(text))
        if labelled:
            found = int(labelled[-1].group(1)), text[: labelled[-1].start()]
        elif (alone := _ALONE.fullmatch(text)) is not None:
            found = int(alone.group(1)), ""
    sample = text[:120]
    if found is None:
        outcome = "refused" if _REFUSAL.search(text) else "unparsable"
        return Ungraded(outcome, sample)
    grade, reason = found
    if grade not in grades:
        return Ungraded("unparsable", sample)
    return Graded(grade, reason.strip())


def _from_json(text: str) -> tuple[int, str] | None:
    fenced = _FENCE.search(text)
    candidate = fenced.group(1) if fenced else text
    if not candidate.startswith("{"):
        return None
    try:
        value = orjson.loads(candidate)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    for key in _KEYS:
        grade = value.get(key)
        if type(grade) is int:
            reason = value.get("reason", value.get("rationale", ""))
            return grade, reason if isinstance(reason, str) else ""
    return None
