"""murphy_lab.paired: Student-t quantiles against published values, the paired interval, the verdict wording."""

from __future__ import annotations

import math

import pytest

from murphy_lab.paired import PairedDifference, paired_difference, t_quantile, verdict


@pytest.mark.parametrize("df, expected", [(1, 12.706), (4, 2.776), (9, 2.262), (30, 2.042), (1000, 1.962)])
def test_t_quantile_matches_the_published_table(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=2e-3)


def test_t_quantile_is_symmetric():
    assert t_quantile(0.025, 4) == pytest.approx(-t_quantile(0.975, 4))


def test_paired_difference_is_the_t_interval_of_the_differences():
    a, b = [21.0, 23.5, 20.0, 22.5, 24.0], [19.0, 21.0, 20.5, 20.0, 21.5]
    d = [x - y for x, y in zip(a, b)]
    mean = sum(d) / 5
    s = math.sqrt(sum((x - mean) ** 2 for x in d) / 4)
    got = paired_difference(a, b)
    assert got.mean == pytest.approx(mean) and got.half_width == pytest.approx(
        2.776 * s / math.sqrt(5), rel=1e-3
    )


def test_pairing_removes_what_the_seeds_share():
    shared = [10.0, 30.0, 20.0, 40.0, 25.0]  # seed effects far larger than the method effect
    got = paired_difference([x + 1.0 for x in shared], shared)
    assert got.mean == pytest.approx(1.0) and got.half_width == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(
    "lo, hi, says",
    [
        (0.5, 2.5, "MURPHY ahead"),
        (-2.5, -0.5, "GRPO-MT ahead"),
        (-1.0, 2.0, "no difference detectable at ±1.50 pp"),
    ],
)
def test_verdict_names_the_winner_only_when_the_interval_excludes_zero(lo, hi, says):
    line = verdict("MURPHY", "GRPO-MT", "Iter-3", PairedDifference((lo + hi) / 2, lo, hi, 5, 0.95))
    assert line.startswith("MURPHY − GRPO-MT at Iter-3: ") and line.endswith(f"over 5 paired seeds — {says}")


@pytest.mark.parametrize("a, b, match", [([1.0], [2.0], "at least 2"), ([1.0, 2.0], [1.0], "equal lengths")])
def test_bad_samples_are_refused(a, b, match):
    with pytest.raises(ValueError, match=match):
        paired_difference(a, b)
