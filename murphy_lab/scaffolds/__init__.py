"""Refinement scaffolds for the Iter-k evaluation: Reflexion-style (the paper's), LATS-style and DoT-style.

Every scaffold repairs programs with the visible tests only and reports the program it holds after each attempt,
so `murphy_lab.evaluate.evaluate(..., scaffold=NAME)` fills the same Iter-k pass@1 table for all of them (the
paper's cross-scaffold check that a MURPHY-trained model's self-repair skill is not a fit to one prompt format).

    from murphy_lab.scaffolds import get_scaffold
    program, transcript = get_scaffold("lats").solve(task, policy, executor, k=3)
"""

from __future__ import annotations

from typing import Any

from murphy_lab.scaffolds.base import Attempt, Episode, Scaffold, sample_requests
from murphy_lab.scaffolds.dot import DoT
from murphy_lab.scaffolds.lats import LATS
from murphy_lab.scaffolds.reflexion import Reflexion

SCAFFOLDS: dict[str, type[Scaffold]] = {"reflexion": Reflexion, "lats": LATS, "dot": DoT}


def get_scaffold(scaffold: str | Scaffold, **kw: Any) -> Scaffold:
    """A scaffold by name ("reflexion", "lats", "dot") built with `kw`, or an instance passed through."""
    if isinstance(scaffold, Scaffold):
        if kw:
            raise ValueError(
                "scaffold options are given to the constructor when scaffold is already an instance"
            )
        return scaffold
    if not isinstance(scaffold, str) or scaffold.lower() not in SCAFFOLDS:
        raise ValueError(
            f"scaffold must be one of {sorted(SCAFFOLDS)} or a Scaffold instance, got {scaffold!r}"
        )
    return SCAFFOLDS[scaffold.lower()](**kw)


__all__ = [
    "SCAFFOLDS",
    "Attempt",
    "DoT",
    "Episode",
    "LATS",
    "Reflexion",
    "Scaffold",
    "get_scaffold",
    "sample_requests",
]
