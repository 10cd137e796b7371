"""The per-ranking reference measures, on hand-derived values.

The conventions are docs/metric-conventions.md sections 3-5.

Each expected value is written out from the formula: discount 1/log2(rank + 1), so rank 1 has
discount 1, rank 2 has 1/log2(3), rank 3 has 1/2, rank 4 has 1/log2(5).
"""

from __future__ import annotations

import math

import pytest

from monitor.errors import MeasureError
from monitor.scoring.catalog import KIND_TABLE, MeasureKey, monitor_keys
from monitor.scoring.gain import EXP, LINEAR, Gain
from monitor.trec.selection import select_measures
from tests.support.oracle import (
    average_precision,
    dcg,
    ideal_dcg,
    judged,
    ndcg,
    precision,
    recall,
    reciprocal_rank,
)

D2 = 1 / math.log2(3)  # discount at rank 2
D4 = 1 / math.log2(5)  # discount at rank 4


def test_dcg_adds_each_gain_times_the_discount_of_its_rank() -> None:
    grades = [3, None, 0, 2, -1, 1]
    assert dcg(grades, 4) == pytest.approx(3 + 2 * D4, rel=1e-14)
    assert dcg(grades, None) == pytest.approx(3 + 2 * D4 + 1 / math.log2(7), rel=1e-14)


def test_unjudged_and_negative_grades_gain_nothing() -> None:
    assert dcg([None, -1, -2, 0], 4) == 0.0


def test_ideal_dcg_counts_relevant_documents_that_were_not_retrieved() -> None:
    # The query's judged grades are 3, 1, 0: the 3 was never retrieved but is in the ideal.
    value = ndcg([0, 1], [1, 3, 0], k=2)
    assert value == pytest.approx((1 * D2) / (3 + 1 * D2), rel=1e-14)


def test_short_ranking_is_not_padded_and_ideal_is_not_cut_to_its_length() -> None:
    # One document retrieved, two relevant judged: DCG@10 = 1, IDCG@10 = 1 + 1/log2(3).
    assert ndcg([1], [1, 1], k=10) == pytest.approx(1 / (1 + D2), rel=1e-14)


def test_ndcg_cut_looks_at_the_first_k_only() -> None:
    assert ndcg([0, 2, 2], [2, 2], k=1) == 0.0
    assert ndcg([2, 0, 2], [2, 2], k=1) == 1.0


def test_ndcg_without_cutoff_uses_the_whole_ranking_and_every_judged_document() -> None:
    grades = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]  # the relevant doc at rank 11
    assert ndcg(grades, [1, 0], k=None) == pytest.approx(1 / math.log2(12), rel=1e-14)
    assert ndcg(grades, [1, 0], k=10) == 0.0


def test_idcg_zero_scores_zero_by_default_or_nan_when_excluded() -> None:
    assert ndcg([0, None, -1], [0, -1], k=10) == 0.0
    assert math.isnan(ndcg([0, None, -1], [0, -1], k=10, idcg_zero="exclude"))
    with pytest.raises(ValueError, match="idcg_zero"):
        ndcg([1], [1], k=10, idcg_zero="one")  # type: ignore[arg-type]


def test_exponential_gain_uses_two_to_the_grade_minus_one() -> None:
    # gains: grade 3 -> 7, grade 2 -> 3. DCG@2 = 3 + 7/log2(3), IDCG@2 = 7 + 3/log2(3).
    assert dcg([2, 3], 2, EXP) == pytest.approx(3 + 7 * D2, rel=1e-14)
    assert ndcg([2, 3], [3, 2], k=2, gain=EXP) == pytest.approx((3 + 7 * D2) / (7 + 3 * D2))
    assert ndcg([2, 3], [3, 2], k=2, gain=LINEAR) == pytest.approx((2 + 3 * D2) / (3 + 2 * D2))


def test_custom_gain_map_orders_the_ideal_by_gain_not_by_grade() -> None:
    # Grade 2 is worth more than grade 3 here: the ideal puts the grade-2 doc first.
    gain = Gain.parse({1: 1, 2: 10, 3: 5})
    assert ideal_dcg([3, 2], 2, gain) == pytest.approx(10 + 5 * D2, rel=1e-14)
    assert ndcg([2, 3], [3, 2], k=2, gain=gain) == 1.0


def test_precision_always_divides_by_k() -> None:
    assert precision([1, 1], 5) == 2 / 5
    assert precision([1, 0, None, 2, 1, 1], 5) == 3 / 5


def test_relevance_level_changes_binary_measures_only() -> None:
    grades = [1, 2, 0, 3]
    assert precision(grades, 4, relevance_level=2) == 2 / 4
    assert recall(grades, num_rel=2, k=4, relevance_level=2) == 1.0
    assert reciprocal_rank(grades, relevance_level=2) == 1 / 2
    assert reciprocal_rank(grades, relevance_level=3) == 1 / 4
    assert average_precision(grades, num_rel=2, relevance_level=2) == (1 / 2 + 2 / 4) / 2


def test_negative_grades_are_never_relevant_even_at_level_zero() -> None:
    assert precision([-1, 0, None], 3, relevance_level=0) == 1 / 3


def test_recall_is_zero_when_the_query_has_no_relevant_documents() -> None:
    assert recall([0, None], num_rel=0, k=10) == 0.0
    assert recall([1, 0, 1], num_rel=4, k=2) == 1 / 4


def test_reciprocal_rank_has_no_cutoff_and_is_zero_without_a_relevant_document() -> None:
    assert reciprocal_rank([None] * 30 + [1]) == 1 / 31
    assert reciprocal_rank([0, None, -1]) == 0.0


def test_average_precision_divides_by_all_relevant_including_unretrieved() -> None:
    # Relevant at ranks 1, 3, 5; four relevant judged in all.
    assert average_precision([1, 0, 1, None, 1], num_rel=4) == (1 / 1 + 2 / 3 + 3 / 5) / 4
    assert average_precision([0, 0], num_rel=3) == 0.0
    assert average_precision([1], num_rel=0) == 0.0


def test_judged_counts_any_grade_and_divides_by_the_retrieved_part_of_the_cutoff() -> None:
    grades = [1, None, -1, 0]
    assert judged(grades, 10) == 3 / 4
    assert judged(grades, 2) == 1 / 2
    assert judged([], 10) == 0.0


def test_cutoff_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="cutoff"):
        precision([1], 0)


# Measure keys and trec_eval names (monitor.scoring.catalog).


@pytest.mark.parametrize(
    "text", ["ndcg@10:linear", "ndcg:exp", "dcg@10:linear", "precision@5", "recall@10",
             "judged@10", "mrr", "map", "ndcg@3:1=1,2=3,3=7", "num_rel_ret"],
)  # fmt: skip
def test_measure_keys_print_and_parse_back(text: str) -> None:
    assert str(MeasureKey.parse(text)) == text


def test_ndcg_key_without_gain_means_linear_gain() -> None:
    assert MeasureKey.parse("ndcg@10") == MeasureKey("ndcg", 10, LINEAR)
    assert str(MeasureKey("ndcg", 10)) == "ndcg@10:linear"


@pytest.mark.parametrize(
    "text", ["ndcg@0", "precision", "mrr@10", "map:exp", "bleu@4", "P", "ndcg@10:q=1"]
)
def test_malformed_measure_keys_raise_measure_error(text: str) -> None:
    with pytest.raises(MeasureError):
        MeasureKey.parse(text)


def keys_of(names: list[str], gain: Gain = LINEAR) -> dict[str, str]:
    """What `-m names` asks the batch engine for: trec_eval's value name -> measure key."""
    return {name: str(key) for name, key in select_measures(names, gain).keys.items()}


def test_trec_eval_names_and_rankmons_name_the_same_keys() -> None:
    trec = keys_of(["ndcg_cut.5,10", "P_5", "recall.10", "ndcg", "recip_rank", "map", "Rprec"])
    assert trec == {
        "map": "map", "Rprec": "rprec", "recip_rank": "mrr", "P_5": "precision@5",
        "recall_10": "recall@10", "ndcg": "ndcg:linear", "ndcg_cut_5": "ndcg@5:linear",
        "ndcg_cut_10": "ndcg@10:linear",
    }  # fmt: skip
    ours = keys_of(["ndcg@5", "ndcg@10", "precision@5", "recall@10", "ndcg", "mrr", "map", "rprec"])
    assert ours == trec
    assert all(MeasureKey.parse(key).trec_name == name for name, key in trec.items())


def test_trec_eval_family_without_cutoffs_takes_trec_eval_defaults() -> None:
    assert list(keys_of(["P"])) == [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]


def test_gain_option_applies_to_ndcg_names_only() -> None:
    assert keys_of(["ndcg_cut.10", "P.10"], gain=EXP) == {
        "P_10": "precision@10",
        "ndcg_cut_10": "ndcg@10:exp",
    }


@pytest.mark.parametrize(
    "name",
    ["ndcg_cutt.5", "P.x", "P.5,,10", "map.5", "P.0", "", "ndcg@x", "judgd@10", "ndcg@10:exp"],
)
def test_unknown_measure_names_raise_measure_error(name: str) -> None:
    with pytest.raises(MeasureError):
        select_measures([name])


def test_a_measure_only_rankmons_table_has_is_computed_under_its_key() -> None:
    selection = select_measures(["judged@10", "rbp@5", "P.5", "err@10:max_grade=3"])
    assert selection.names == ("P_5", "judged@10", "rbp@5:p=0.8", "err@10:max_grade=3")
    assert selection.engine_only
    assert str(selection.keys["rbp@5:p=0.8"]) == "rbp@5:p=0.8"


def test_a_misspelt_measure_name_is_answered_with_the_closest_one() -> None:
    with pytest.raises(MeasureError) as caught:
        select_measures(["ndgc_cut.10"])
    assert "did you mean 'ndcg_cut'?" in str(caught.value)
    with pytest.raises(MeasureError) as caught:
        select_measures(["precison@5"])
    assert "did you mean 'precision'?" in str(caught.value)


@pytest.mark.parametrize(
    ("names", "canonical"),
    [
        (["ndcg@10", "ndcg@10:linear", "ndcg_cut_10", "ndcg_cut@10"], "ndcg@10:linear"),
        (["precision@5", "P@5", "P_5"], "precision@5"),
        (["recall@100", "recall_100"], "recall@100"),
        (["mrr", "recip_rank"], "mrr"),
        (["rprec", "Rprec"], "rprec"),
        (["ndcg@10:1=1,2=3"], "ndcg@10:1=1,2=3"),
    ],
)
def test_every_way_of_naming_a_measure_parses_into_one_key_with_one_name(
    names: list[str], canonical: str
) -> None:
    keys = {MeasureKey.parse(name) for name in names}
    assert len(keys) == 1
    (key,) = keys
    assert str(key) == canonical
    assert MeasureKey.parse(str(key)) == key


def test_counts_are_marked_for_summing_and_have_no_gain() -> None:
    keys = [MeasureKey(kind) for kind in ("num_ret", "num_rel", "num_rel_ret", "map")]
    assert [k.is_count for k in keys] == [True, True, True, False]
    assert [k.gain for k in keys] == [None] * 4


def test_monitor_keys_cover_every_gain_and_cutoff() -> None:
    keys = [str(k) for k in monitor_keys([5, 10], ["linear", "exp"])]
    streamed = [kind for kind in KIND_TABLE if kind.stream]
    # The table's stream kinds in table order: those with a cutoff first, each for every gain
    # (the gain kinds) and then every cutoff; those without a cutoff last.
    expected = [
        f"{kind.name}@{k}" + (f":{gain}" if kind.gain else "")
        for kind in streamed
        if kind.cutoff is not False
        for gain in (("linear", "exp") if kind.gain else ("",))
        for k in (5, 10)
    ] + [kind.name for kind in streamed if kind.cutoff is False]
    assert keys == expected
    assert keys[:4] == ["ndcg@5:linear", "ndcg@10:linear", "ndcg@5:exp", "ndcg@10:exp"]
    assert set(keys) >= {"precision@5", "recall@10", "judged@5", "mrr", "map", "rprec"}
    assert MeasureKey("judged", 5).trec_name is None
