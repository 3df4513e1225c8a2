"""Paired comparisons between methods: the mean difference over paired seeds, its t confidence interval, a verdict.

For each seed every method starts from the same base, trains on the same task order and is evaluated on the same
held-out tasks, so the per-seed difference d_i = a_i - b_i removes what the seeds share. With n paired seeds,

    d̄ = (1/n) Σ d_i,   s = sqrt(Σ (d_i - d̄)² / (n - 1)),   CI = d̄ ± t_{(1+c)/2, n-1} · s / √n

(Student's t, c the confidence level). The verdict names the method ahead only when the interval excludes 0.

    d = paired_difference([21.0, 23.5, 20.0, 22.5, 24.0], [19.0, 21.0, 20.5, 20.0, 21.5])
    verdict("MURPHY", "GRPO-MT", "Iter-3", d)
    # 'MURPHY − GRPO-MT at Iter-3: +1.80 pp, 95% CI [+0.18, +3.42] over 5 paired seeds — MURPHY ahead'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def t_cdf(x: float, df: int) -> float:
    """P(T ≤ x) for Student's t with `df` degrees of freedom (Simpson's rule on the density from 0 to |x|)."""
    if df < 1:
        raise ValueError(f"df must be >= 1, got {df!r}")
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def pdf(t: float) -> float:
        return math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))

    steps, h = 2000, abs(x) / 2000
    area = pdf(0.0) + pdf(abs(x)) + sum((4 if i % 2 else 2) * pdf(i * h) for i in range(1, steps))
    half = area * h / 3
    return 0.5 + half if x >= 0 else 0.5 - half


def t_quantile(q: float, df: int) -> float:
    """The x with P(T ≤ x) = q (bisection on `t_cdf`); e.g. t_quantile(0.975, 4) = 2.776."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must lie in (0, 1), got {q!r}")
    if q < 0.5:
        return -t_quantile(1.0 - q, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        hi *= 2.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < q else (lo, mid)
    return (lo + hi) / 2


@dataclass(frozen=True)
class PairedDifference:
    """d̄ and its confidence interval over n paired seeds (in the units of the inputs, e.g. pass@1 points)."""

    mean: float
    lo: float
    hi: float
    n: int
    confidence: float

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> PairedDifference:
    """The mean of a_i - b_i over paired seeds with its Student-t interval (see the module docstring)."""
    if len(a) != len(b):
        raise ValueError(f"paired samples need equal lengths, got {len(a)} and {len(b)}")
    if len(a) < 2:
        raise ValueError(f"a confidence interval needs at least 2 paired seeds, got {len(a)}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    d = [x - y for x, y in zip(a, b)]
    n = len(d)
    mean = sum(d) / n  # d̄
    s = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))  # sample standard deviation of the differences
    half = t_quantile((1 + confidence) / 2, n - 1) * s / math.sqrt(n)  # t_{(1+c)/2, n-1} · s / √n
    return PairedDifference(mean, mean - half, mean + half, n, confidence)


def verdict(a: str, b: str, at: str, d: PairedDifference, unit: str = "pp") -> str:
    """One line: the difference, its interval, and which method is ahead (only when the interval excludes 0)."""
    if d.lo > 0:
        says = f"{a} ahead"
    elif d.hi < 0:
        says = f"{b} ahead"
    else:
        says = f"no difference detectable at ±{d.half_width:.2f} {unit}"
    return (
        f"{a} − {b} at {at}: {d.mean:+.2f} {unit}, {d.confidence:.0%} CI [{d.lo:+.2f}, {d.hi:+.2f}] "
        f"over {d.n} paired seeds — {says}"
    )
