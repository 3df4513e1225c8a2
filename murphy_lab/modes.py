"""GRPO, GRPO-MT and MURPHY as data: what each mode grows per task and the G2 / S it implies.

    grpo      one group      turns S = 1             credit = reward, advantages inside the turn-1 group
    grpo_mt   G chains       G2 = 1, any S           the chain's final reward, normalised across the G chains
    murphy    the tree       G2 >= 2 when S > 1      InterP / IntraP, MaRS / MeRS backup, GRPO in every kept group

`MODES` is the one list of mode names: `MurphyConfig.validate` checks a config against its mode
(`Mode.problems`), the method registry (`murphy_lab.methods`) gives each trainer method its mode's fields, and
`murphy_lab.scoring.score_tree` scores a tree as its mode says. This module imports nothing (no torch), so the
names are free to import anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Mode:
    """What a method grows per task and which G2 / S it implies (None: any value the config gives)."""

    name: str
    shape: str  # "one group", "chains" or "tree"
    why: str  # why the mode fixes G2 / S (quoted in the config's errors)
    turns: int | None = None  # S fixed by the mode
    g2: int | None = None  # G2 fixed by the mode
    min_g2: int = 1  # the smallest G2 when refinements are grown (S > 1)
    prunes: bool = False  # InterP / IntraP apply

    def fields(self) -> dict[str, Any]:
        """The config fields this mode implies: `MurphyConfig(**mode("grpo_mt").fields())` grows G chains."""
        out: dict[str, Any] = {"mode": self.name}
        if self.turns is not None:
            out["turns"] = self.turns
        if self.g2 is not None:
            out["g2"] = self.g2
        return out

    def problems(self, g2: int, turns: int) -> list[tuple[str, str]]:
        """(field, message) for every way `g2` / `turns` contradict this mode (empty when they fit)."""
        out = []
        if self.turns is not None and turns != self.turns:
            out.append(("turns", f"must be {self.turns} for mode={self.name!r} ({self.why})"))
        if self.g2 is not None and g2 != self.g2:
            out.append(("g2", f"must be {self.g2} for mode={self.name!r} ({self.why})"))
        if turns > 1 and g2 < self.min_g2:
            out.append(("g2", f"must be >= {self.min_g2} for mode={self.name!r} ({self.why})"))
        return out


MODES: dict[str, Mode] = {
    "murphy": Mode("murphy", "tree", "a refinement group needs two members", min_g2=2, prunes=True),
    "grpo_mt": Mode("grpo_mt", "chains", "one refinement per failure: G chains", g2=1),
    "grpo": Mode("grpo", "one group", "single-turn GRPO", turns=1),
}


def mode(name: str) -> Mode:
    """The Mode called `name` (ValueError naming the known ones otherwise)."""
    if name not in MODES:
        raise ValueError(f"mode must be one of {tuple(MODES)}, got {name!r}")
    return MODES[name]


__all__ = ["MODES", "Mode", "mode"]
