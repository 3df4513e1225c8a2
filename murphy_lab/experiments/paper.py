"""The numbers MURPHY (arXiv 2511.07833) reports, as data: what `reproduce/` puts our results next to.

Transcribed from the paper's tables (arXiv 2511.07833: Table 1 and the ablation tables). Every value is pass@1 in percent, "mean ± std" over the paper's
evaluation runs. Cells the paper leaves empty ("–") are `None`, never a guess.

Keys used everywhere in `murphy_lab.experiments.paper_tables` and `reproduce/`:

- model:      "OLMo-2-7B", "Qwen3-1.7B", "Qwen3-4B"  (plus our own "toy" models, which the paper has no row for)
- benchmark:  "HumanEval", "MBPP", "LCB-v6 Hard"      (LiveCodeBench release_v6, Hard split)
- iter:       k of Iter-k (1, 3, 5): solved within k attempts of the Reflexion-style refinement scaffold
- method:     "base", "grpo", "grpo_mt", "mucode", "reveal", "murphy"  (display names in `METHOD_NAMES`)

>>> main_table().query("model == 'Qwen3-4B' and iter == 5 and method == 'murphy'")[["mean", "std"]].values.tolist()
[[24.29, 0.38]]
"""

from __future__ import annotations

import itertools

import pandas as pd

from murphy_lab.credit import CREDIT_RULES
from murphy_lab.methods import METHODS  # the paper's main-table columns, plus single-turn GRPO (it has none)

METHOD_NAMES = {
    "base": "Base",
    "grpo": "GRPO",
    "grpo_mt": "GRPO-MT",
    "mucode": "µCode",
    "reveal": "ReVeal",
    "murphy": "Murphy (MaRS)",
}
PAPER_MODELS = ("OLMo-2-7B", "Qwen3-1.7B", "Qwen3-4B")

# Main table: (model, benchmark, iter) -> {method: (mean, std) or None}. The paper has no single-turn GRPO column.
_MAIN = {
    ("OLMo-2-7B", "HumanEval", 1): dict(base=(37.20, 0.86), grpo_mt=(39.02, 0.00), mucode=(35.17, 0.35), reveal=None, murphy=(45.53, 0.70)),
    ("OLMo-2-7B", "HumanEval", 3): dict(base=(46.04, 0.43), grpo_mt=(41.87, 0.93), mucode=(41.46, 1.06), reveal=None, murphy=(52.24, 1.96)),
    ("OLMo-2-7B", "MBPP", 1): dict(base=(19.90, 0.42), grpo_mt=(28.33, 0.31), mucode=(22.47, 0.42), reveal=None, murphy=(29.33, 0.90)),
    ("OLMo-2-7B", "MBPP", 3): dict(base=(29.60, 0.28), grpo_mt=(33.60, 0.69), mucode=(31.60, 0.60), reveal=None, murphy=(39.67, 1.29)),
    ("Qwen3-1.7B", "HumanEval", 3): dict(base=(80.07, 1.27), grpo_mt=(82.11, 0.35), mucode=(83.34, 0.70), reveal=None, murphy=(86.58, 1.06)),
    ("Qwen3-1.7B", "MBPP", 3): dict(base=(53.93, 3.52), grpo_mt=(58.53, 1.03), mucode=(56.20, 0.60), reveal=None, murphy=(62.00, 1.91)),
    ("Qwen3-4B", "HumanEval", 3): dict(base=(93.49, 0.93), grpo_mt=(93.80, 1.00), mucode=(94.10, 1.54), reveal=None, murphy=(95.73, 0.31)),
    ("Qwen3-4B", "MBPP", 3): dict(base=(70.93, 1.01), grpo_mt=(71.40, 0.70), mucode=(71.93, 0.12), reveal=None, murphy=(73.33, 1.31)),
    ("Qwen3-4B", "LCB-v6 Hard", 1): dict(base=(10.76, 0.59), grpo_mt=(11.05, 1.00), mucode=(11.95, 2.64), reveal=(11.43, 1.59), murphy=(14.33, 0.41)),
    ("Qwen3-4B", "LCB-v6 Hard", 3): dict(base=(16.19, 1.72), grpo_mt=(18.29, 0.58), mucode=(18.10, 1.08), reveal=(18.13, 1.28), murphy=(21.29, 0.43)),
    ("Qwen3-4B", "LCB-v6 Hard", 5): dict(base=(19.15, 1.03), grpo_mt=(19.14, 0.99), mucode=(20.09, 1.46), reveal=(19.14, 0.86), murphy=(24.29, 0.38)),
}  # fmt: skip

# Ablations on Qwen3-1.7B: (axis, variant) -> kept trajectories per tree and {(benchmark, iter): (mean, std)}.
# The no-pruning row and the MaRS row are the same run (the default MURPHY configuration).
_ABLATION_METRICS = (("HumanEval", 1), ("HumanEval", 3), ("MBPP", 3))
_ABLATIONS = {
    ("credit", "mars"): (None, ((79.67, 3.01), (86.58, 1.06), (62.00, 1.91))),
    ("credit", "mers_0.9"): (None, ((78.66, 2.11), (84.76, 1.22), (60.53, 1.79))),
    ("credit", "mers_1.0"): (None, ((78.46, 0.70), (85.57, 0.35), (60.93, 1.29))),
    ("pruning", "none"): (72, ((79.67, 3.01), (86.58, 1.06), (62.00, 1.91))),
    ("pruning", "intrap"): (36, ((82.34, 1.03), (84.28, 2.01), (59.87, 1.70))),
    ("pruning", "interp"): (40, ((77.43, 2.20), (86.17, 0.70), (61.20, 1.39))),
}
# the credit rules' row labels come from the rule table ("mers_0.9" -> "MeRS γ=0.9"); "none" is the pruning axis's
CREDIT_NAMES = {
    rule.variant(g): rule.table_label(g) for rule in CREDIT_RULES.values() for g in rule.ablation_gammas()
}


def credit_name(variant: str) -> str | None:
    """A credit variant's row label (`plan.credit_label` read back): the rule's table label, its γ for a rule that
    reads one, each knob the variant sets by its symbol ("gigpo_1.0_omega0.5" -> "GiGPO anchors γ=1.0 ω=0.5");
    None for a label that is no credit variant."""
    if variant in CREDIT_NAMES:
        return CREDIT_NAMES[variant]
    rule = next(
        (
            r
            for r in sorted(CREDIT_RULES.values(), key=lambda r: -len(r.name))
            if variant == r.name or variant.startswith(r.name + "_")
        ),
        None,
    )
    if rule is None:
        return None
    items = variant[len(rule.name) + 1 :].split("_") if variant != rule.name else []
    try:
        gamma = float(items.pop(0)) if rule.discounted else 1.0
    except (ValueError, IndexError):
        return None
    named = []
    for item in items:
        knob = next((k for k in rule.knobs if item.startswith(k.name) and item[len(k.name) :]), None)
        if knob is None:
            return None
        named.append(f"{knob.doc.split(',')[0]}={item[len(knob.name) :]}")
    return " ".join([rule.table_label(gamma), *named])


VARIANT_NAMES = {
    **CREDIT_NAMES,
    "none": "none (MaRS)",
    "intrap": "IntraP",
    "interp": "InterP",
}

# Pruning cost on Qwen3-1.7B, seconds per training step (8×H100). The paper states: no pruning 17.49 s optimization
# of a 72.74 s step; InterP 4.53 s optimization (−74.1%) and a step 21.4% shorter. IntraP: only "half the
# trajectories" (no time given). `step_s` for InterP is derived here as 72.74 × (1 − 0.214), not printed in the paper.
PRUNING_TIME = {
    "none": dict(optimization_s=17.49, step_s=72.74, note="stated"),
    "intrap": dict(optimization_s=None, step_s=None, note="paper gives no time; keeps half the trajectories"),
    "interp": dict(optimization_s=4.53, step_s=round(72.74 * (1 - 0.214), 2), note="−74.1% optimization, −21.4% step (step derived)"),
}  # fmt: skip

# LiveCodeBench-v6, Qwen3-4B: MURPHY's Iter-5 gain over the base model, in percentage points, per difficulty.
LCB_ITER5_GAIN_PP = {"Easy": 0.96, "Medium": 4.38, "Hard": 4.20}

# Other statements with a number: MaRS beats MeRS by 10.37 pp on OLMo-2-7B HumanEval Iter-3.
MARS_OVER_MERS_OLMO_HUMANEVAL_ITER3_PP = 10.37
# Cross-scaffold (LATS, DoT): the paper states only that the gains hold; it prints no table we could transcribe.
CROSS_SCAFFOLD_NOTE = (
    "The paper reports that MURPHY's gains hold under the LATS and DoT scaffolds; no numbers to compare."
)


# --- what the numbers themselves say about the evaluation (docs/evaluation.md, "The MBPP split") -------------------
# A mean of R runs over N tasks is (solved trials) / (R·N): every printed mean must be a whole count of R·N trials
# to its two decimals. The paper's 20 distinct MBPP cells (main table and ablations) decide its MBPP split.
EVAL_RUNS = 3  # the paper's "mean ± std" is over 3 values: every ± fits 3 (docs/evaluation.md)
# full MBPP's test split, task ids 11–510: the only MBPP split whose 3 runs fit 19 of the 20 cells
MBPP_TASKS = 500


def solved_trials(mean: float, trials: int) -> int | None:
    """The whole number of solved trials, out of `trials`, whose percentage prints as `mean` (two decimals);
    None when no whole count does. `solved_trials(19.90, 1500)` is None: 298 → 19.87 %, 299 → 19.93 %."""
    count = round(mean * trials / 100)
    return count if abs(100 * count / trials - mean) <= 0.005 + 1e-9 else None


def run_counts(
    mean: float, std: float, tasks: int, runs: int = EVAL_RUNS, ddof: int = 1
) -> tuple[int, ...] | None:
    """Solved tasks per run, c_1 ≤ … ≤ c_R out of `tasks`, whose mean and std (over the R per-run percentages,
    `ddof` 1: the sample std, 0: the population std) both print as `mean` ± `std`; None when no counts do."""

    def fits(counts: tuple[int, ...]) -> bool:
        p = [100 * c / tasks for c in counts]  # per-run pass@1 (%)
        mu = sum(p) / runs
        sd = (sum((x - mu) ** 2 for x in p) / (runs - ddof)) ** 0.5
        return abs(mu - mean) <= 0.005 + 1e-9 and abs(sd - std) <= 0.005 + 1e-9

    # a run lies within ~2.5 std of the mean
    center, reach = (
        mean * tasks / 100,
        int(3 * std * tasks / 100) + 2,
    )
    values = range(max(0, int(center) - reach), min(tasks, int(center) + reach + 1) + 1)
    return next((c for c in itertools.combinations_with_replacement(values, runs) if fits(c)), None)


def benchmark_cells(benchmark: str) -> dict[str, tuple[float, float]]:
    """Every distinct (mean, std) the paper prints for `benchmark` ("MBPP", "HumanEval", "LCB-v6 Hard"), main table
    and ablations, by a label naming the cell. The ablations' MaRS / no-pruning row repeats the main table's MURPHY
    cell on Qwen3-1.7B and is counted once."""
    cells = {
        f"{model} Iter-{k} {method}": value
        for (model, bench, k), row in _MAIN.items()
        if bench == benchmark
        for method, value in row.items()
        if value is not None
    }
    for (axis, variant), (_, values) in _ABLATIONS.items():
        for (bench, k), value in zip(_ABLATION_METRICS, values):
            if bench == benchmark and value not in cells.values():
                cells[f"Qwen3-1.7B Iter-{k} {axis}:{variant}"] = value
    return cells


def main_table() -> pd.DataFrame:
    """The paper's main table in long form: one row per (model, benchmark, iter, method), columns mean and std.

    Cells the paper leaves empty have mean = std = NaN; GRPO (single turn) is not in the paper's table at all.
    """
    rows = []
    for (model, bench, k), cells in _MAIN.items():
        for method in METHODS:
            cell = cells.get(method)
            mean, std = cell if cell is not None else (float("nan"), float("nan"))
            rows.append(dict(model=model, benchmark=bench, iter=k, method=method, mean=mean, std=std))
    return pd.DataFrame(rows)


def ablation_table(axis: str | None = None) -> pd.DataFrame:
    """The paper's ablations on Qwen3-1.7B in long form: (axis, variant, kept_traj, benchmark, iter, mean, std).

    `axis` selects "credit" or "pruning"; None returns both.
    """
    if axis not in (None, "credit", "pruning"):
        raise ValueError(f"axis must be 'credit', 'pruning' or None, got {axis!r}")
    rows = []
    for (ax, variant), (kept, values) in _ABLATIONS.items():
        if axis is not None and ax != axis:
            continue
        for (bench, k), (mean, std) in zip(_ABLATION_METRICS, values):
            rows.append(
                dict(axis=ax, variant=variant, kept_traj=kept, benchmark=bench, iter=k, mean=mean, std=std)
            )
    return pd.DataFrame(rows)


def lookup(model: str, benchmark: str, k: int, method: str) -> tuple[float, float] | None:
    """The paper's (mean, std) for one main-table cell, or None where the paper has no number."""
    cell = _MAIN.get((model, benchmark, int(k)), {}).get(method)
    return tuple(cell) if cell is not None else None
