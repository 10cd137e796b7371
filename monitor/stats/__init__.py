"""Statistics of paired per-query differences, shared by the alert rules, the live comparisons
and `rankmon compare`.

Enters: arrays of per-query differences (candidate - baseline), or window estimates.
Leaves: intervals, p-values and effect sizes (`paired.py`), Student's t distribution
(`student_t.py`), sign-flip enumeration and draws (`sign_flips.py`), the always-valid
normal-mixture confidence sequence (`sequence.py`), multiple-testing corrections
(`corrections.py`), and a model judge held to a human audit (`judges.py`: weighted kappa,
PPI++). numpy only: no scipy at run time; the tests check every figure against
scipy.stats.
"""

from monitor.stats.corrections import CORRECTIONS, adjust_p_values
from monitor.stats.paired import TESTS, PairedResult, paired_comparison
from monitor.stats.sequence import MixtureSequence, SequenceState
from monitor.stats.student_t import t_cdf, t_ppf, t_sf

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "MixtureSequence",
    "PairedResult",
    "SequenceState",
    "adjust_p_values",
    "paired_comparison",
    "t_cdf",
    "t_ppf",
    "t_sf",
]
