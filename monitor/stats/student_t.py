"""Student's t distribution: CDF, survival function and quantiles, to about 1e-13.

The CDF is the regularized incomplete beta function, I_x(a, b) with x = nu / (nu + t^2),
a = nu / 2 and b = 1 / 2, evaluated by its continued fraction (modified Lentz), on the side
of the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where the fraction converges fast; 1 - x is
computed as t^2 / (nu + t^2), never by subtraction. The quantile solves cdf(t) = p by Newton's
method on the density from the normal quantile's neighbourhood, bracketed by bisection.
"""

from __future__ import annotations

import math

__all__ = ["t_cdf", "t_pdf", "t_ppf", "t_sf"]

_EPS = 1e-16
_TINY = 1e-300
_MAX_TERMS = 10_000


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (without its prefactor)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS):
        m2 = 2 * m
        even = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + even * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + even / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + odd * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + odd / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            return h
    return h  # not reached for the a, b a t distribution needs


def _incomplete_beta(a: float, b: float, x: float, one_minus_x: float) -> float:
    """I_x(a, b), with 1 - x passed exactly."""
    if x <= 0.0:
        return 0.0
    if one_minus_x <= 0.0:
        return 1.0
    log_front = (
        math.lgamma(a + b)
        - math.lgamma(a)
        - math.lgamma(b)
        + a * math.log(x)
        + b * math.log(one_minus_x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, one_minus_x) / b


def t_sf(t: float, dof: float) -> float:
    """P(T > t) for T ~ t(dof)."""
    if math.isnan(t) or not dof > 0:
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    t2 = t * t
    # P(|T| > |t|) = I_{nu / (nu + t^2)}(nu / 2, 1 / 2)
    two_tails = _incomplete_beta(dof / 2.0, 0.5, dof / (dof + t2), t2 / (dof + t2))
    return 0.5 * two_tails if t > 0 else 1.0 - 0.5 * two_tails


def t_cdf(t: float, dof: float) -> float:
    """P(T <= t) for T ~ t(dof)."""
    return t_sf(-t, dof)


def t_pdf(t: float, dof: float) -> float:
    """The density of t(dof) at t."""
    log_density = (
        math.lgamma((dof + 1.0) / 2.0)
        - math.lgamma(dof / 2.0)
        - 0.5 * math.log(dof * math.pi)
        - (dof + 1.0) / 2.0 * math.log1p(t * t / dof)
    )
    return math.exp(log_density)


def t_ppf(p: float, dof: float) -> float:
    """The t with P(T <= t) = p, for T ~ t(dof)."""
    if not 0.0 <= p <= 1.0 or not dof > 0:
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_ppf(1.0 - p, dof)
    # p > 0.5: the root is positive; sf(t) = 1 - p is computed without cancellation
    target = 1.0 - p
    low, high = 0.0, 1.0
    while t_sf(high, dof) > target:
        low, high = high, high * 2.0
        if high > 1e300:
            return math.inf
    t = (low + high) / 2.0
    for _ in range(200):
        error = t_sf(t, dof) - target  # decreasing in t
        if error == 0.0:
            return t
        if error > 0:
            low = t
        else:
            high = t
        step = error / t_pdf(t, dof)
        candidate = t + step
        if abs(step) <= 1e-15 * max(1.0, t) or high - low <= 1e-15 * max(1.0, t):
            return candidate
        t = candidate if low < candidate < high else (low + high) / 2.0
    return t
