"""The sign-flip null distribution of the mean of paired differences.

Under "no difference" each per-query difference d_i is as likely to be +|d_i| as -|d_i|, so
the means of s * d over sign patterns s in {-1, +1}^n are its null distribution: all 2^n of
them when n <= `EXACT_LIMIT` (an exact p-value), else random patterns from a seeded
generator (the same input always gets the same p-value).
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

__all__ = ["EXACT_LIMIT", "all_flipped_means", "random_flipped_means", "tie_tolerance"]

EXACT_LIMIT = 12

Vector = npt.NDArray[np.float64]


def all_flipped_means(differences: Vector) -> Vector:
    """The mean of s * d for every sign pattern s (2^n of them, the identity among them)."""
    n = differences.size
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=n)), dtype=np.float64)
    means: Vector = signs @ differences / n
    return means


def random_flipped_means(differences: Vector, rows: int, generator: np.random.Generator) -> Vector:
    """The mean of s * d for `rows` sign patterns drawn uniformly by `generator`."""
    n = differences.size
    # 0/1 bits from random bytes; mean(s * d) with s = 2 * bit - 1.
    packed = generator.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8)
    bits = np.unpackbits(packed, axis=1, count=n).astype(np.float64)
    means: Vector = (2.0 * (bits @ differences) - differences.sum()) / n
    return means


def tie_tolerance(differences: Vector) -> float:
    """How close a flipped mean must be to the observed one to count as a tie: the identity
    flip must count even when the two means differ only by float summation order, which is
    at most about n ulps of the largest |d_i|; anything larger is a real difference (scipy's
    `permutation_test` counts ties within 100 ulps of the observed value)."""
    largest = float(np.abs(differences).max(initial=0.0))
    return 4.0 * max(1, differences.size) * float(np.finfo(np.float64).eps) * largest
