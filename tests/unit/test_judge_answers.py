"""What a judge worker reads from a model's answer, the prompt it sends, and its hourly
budget: grades read leniently but never guessed."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from monitor.errors import ConfigError
from monitor.judge.grade import Graded, Ungraded, read_grade
from monitor.judge.prompt import DEFAULT_TEMPLATE, Prompt
from monitor.judge.worker import HourlyBudget, progress_bar

SCALE = (0, 1, 2, 3)


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ("The passage answers it directly.\nGrade: 3", 3),
        ("Reason: partly.\n**Grade:** 2", 2),
        ("grade=1", 1),
        ('{"grade": 0, "reason": "off topic"}', 0),
        ('```json\n{"score": 2}\n```', 2),
        ("2", 2),
        ("Relevance: 1. Grade: 2", 2),  # the last one stands
    ],
)
def test_a_grade_is_read_from_the_answers_models_give(answer: str, grade: int) -> None:
    read = read_grade(answer, SCALE)
    assert isinstance(read, Graded) and read.grade == grade


def test_the_reason_is_the_text_before_the_grade() -> None:
    read = read_grade("It names the exact answer.\nGrade: 3", SCALE)
    assert read == Graded(3, "It names the exact answer.")


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ("I can't help with rating this content.", "refused"),
        ("As an AI, I cannot judge this.", "refused"),
        ("It is hard to say.", "unparsable"),
        ("Grade: 7", "unparsable"),  # off the scale
        ("The year 2023 saw 4 releases.", "unparsable"),  # numbers, but no grade
        ("", "unparsable"),
    ],
)
def test_refusals_and_answers_without_a_grade_are_outcomes_never_grades(
    answer: str, outcome: str
) -> None:
    read = read_grade(answer, SCALE)
    assert isinstance(read, Ungraded) and read.outcome == outcome


def test_the_default_prompt_fills_the_query_and_document_and_keeps_braces_in_values() -> None:
    prompt = Prompt.of(DEFAULT_TEMPLATE)
    system, user = prompt.messages(
        {"query": "what is {x}?", "title": "T", "text": "x is {query}", "doc_id": "d"}
    )
    assert system["role"] == "system" and "0 to 3" in system["content"]
    assert "Query: what is {x}?" in user["content"]
    assert "Passage: x is {query}" in user["content"]  # a value is never filled again
    assert len(prompt.hash) == 12 and prompt.hash != Prompt.of(DEFAULT_TEMPLATE + " ").hash


def test_a_template_without_the_query_or_the_text_is_a_config_error(tmp_path: Path) -> None:
    template = tmp_path / "prompt.txt"
    template.write_text("Rate {title} please", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"judge.prompt_file.*needs \{query\}"):
        Prompt.read(template)
    template.write_text("Rate {text} for {query}", encoding="utf-8")
    [only] = Prompt.read(template).messages({"query": "q", "text": "t"})
    assert only == {"role": "user", "content": "Rate t for q"}


def test_the_hourly_budget_waits_for_the_oldest_request_to_leave_the_hour() -> None:
    now = [0.0]
    budget = HourlyBudget(requests=2, tokens=0, clock=lambda: now[0])
    budget.spend(10)
    now[0] = 100.0
    budget.spend(10)
    assert budget.wait_s() == pytest.approx(3500.0)
    now[0] = 3600.0
    assert budget.wait_s() == 0.0
    tokens = HourlyBudget(requests=0, tokens=150, clock=lambda: now[0])
    tokens.spend(100)
    assert tokens.wait_s() == 0.0
    tokens.spend(100)
    assert tokens.wait_s() == pytest.approx(3600.0)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_judge_workers_progress_bar_is_drawn_on_stderr_never_on_stdout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stderr, stdout = Terminal(), io.StringIO()  # stdout piped to a file
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(sys, "stdout", stdout)
    bar = progress_bar(True, 4)
    assert bar is not None
    for task in bar.tasks:
        bar.advance(task.id, 4)
    bar.stop()
    assert "judging" in stderr.getvalue()
    assert stdout.getvalue() == ""
