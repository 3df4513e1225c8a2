# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Credit ablation: MaRS against MeRS (γ = 0.9, 1.0) and the multi-turn rules beside them
#
# MURPHY backs the success of a refinement up to the failed attempt that prompted it. MaRS takes the max over the
# refinements, r̃(v) = max(r(v), max_{u∈C(v)} r̃(u)); MeRS a discounted mean, r̃(v) = (r(v) + γ·mean r̃(u)) / Z(v).
# The paper (Qwen3-1.7B) finds MaRS best. Beside them, every other rule of `murphy_lab.credit.CREDIT_RULES`
# (TreeRPO, Kevin's reward-to-go, prime-rl's turn credit, MT-GRPO, GiGPO; docs/credit_rules.md) trains on the same
# trees: the same tasks, seeds, G1/G2/S and steps, so every rule sees equally many sampled sequences; only the
# credit and the advantages differ. This notebook trains MURPHY once per rule (at each γ its table entry ablates)
# and seed, and writes `ablation_credit.{csv,md,tex,png}` with one paired verdict line per rule against MaRS. The
# MaRS run is the main table's MURPHY run (same config: cached).

# %% [markdown]
# **Parameters** (papermill: `-p name value`). `profile`: `smoke` (CI, seconds), `toy` (a laptop CPU, minutes;
# `make demo`), `paper` (8×H100). `None` means the profile's default (`murphy_lab.profiles`).

# %% tags=["parameters"]
profile = "toy"  # smoke | toy | paper
models = None  # e.g. ["Qwen3-1.7B"]; None: the profile's models
methods = ["murphy"]
seeds = None  # training seeds; None: the profile's (smoke: 0; toy and paper: 0, 1, 2)
benchmarks = None  # None: the profile's (toy: the toy world's test split; paper: HumanEval, MBPP, LCB-v6)
output_dir = "results"  # tables and run records go to <output_dir>/<profile>/
cache_dir = "cache"  # checkpoints (large, git-ignored) go to <cache_dir>/<profile>/
train = True  # False: evaluate existing checkpoints only (missing ones are an error that says where it looked)
from_cache_only = False  # True: build the tables from finished runs alone; nothing is trained or evaluated
backend = "real"  # "stand-in": fake train/evaluate that only exercise the pipeline (numbers are NOT measurements)
model_paths = {}  # {"Qwen3-1.7B": "/ckpt/base", "Qwen3-1.7B/murphy": "/ckpt/murphy"}: use these models as they are
train_overrides = {}  # trainer-config fields on top of the profile's, e.g. {"max_steps": 20} (part of the run keys)
torch_threads = 1
credits = None  # rules to compare (names of murphy_lab.credit.CREDIT_RULES); None: every rule (paper profile: MaRS, MeRS)
gammas = None  # γ of the rules that read one; None: each rule's own (CREDIT_RULES: MeRS 0.9 and 1.0, as the paper)
knobs = None  # a rule's other knobs to sweep, e.g. {"omega": [0.5, 1.0]} (GiGPO's ω); None: each knob's default

# %%
from IPython.display import Image, Markdown, display

from murphy_lab import experiments as X
from murphy_lab.experiments import ablation_tables as A
from murphy_lab.experiments import paper_tables as T
from murphy_lab.experiments.verdicts import credit_pairs

# The paper profile stops here, with the reason, on a machine without CUDA. S.plan / S.run carry these settings.
S = X.setup(profile, output_dir, cache_dir, train=train, from_cache_only=from_cache_only, backend=backend,
            model_paths=model_paths, train_overrides=train_overrides, torch_threads=torch_threads)
out = S.out  # results/<profile>: run records, tables, figures

# %%
# every rule of the table, "none" (no backup: each attempt credited with its own reward) included; the paper profile,
# which trains from recipes, the rules the paper ablates (MaRS, MeRS γ = 0.9, 1.0)
variants = X.credit_variants(S.profile, credits, gammas, knobs)
if models is None and profile == "paper":
    models = ["Qwen3-1.7B"]  # the paper's ablations are on Qwen3-1.7B
exps = S.plan(methods=methods, models=models, seeds=seeds, benchmarks=benchmarks, variants=variants)
print(f"{len(exps)} runs:", ", ".join(sorted({e.variant for e in exps})))
runs = S.run(exps)

# %%
results = X.results_frame(runs)
agg = T.aggregate(results)
tables = A.ablation_credit_tables(T.main_rows(agg))
# MaRS − each other rule per cell (model, benchmark, Iter-k), paired by training seed: one verdict line each
# (the pairs follow the planned variants: every rule of the table, and any knob the plan sweeps).
verdict_lines = X.paired_verdicts(results, k=None, pairs=credit_pairs(variants))
tables[0].notes += verdict_lines
paths = T.write_tables(tables, out, "ablation_credit")
display(Markdown(paths["md"].read_text()))

# %%
if not agg.empty:
    T.plot_pass_at_k(T.main_rows(agg), out / "ablation_credit.png", title=f"Credit ablation ({profile})")
    display(Image(str(out / "ablation_credit.png")))

# %%
assert from_cache_only or len(runs) == len(exps), (len(runs), len(exps))
assert agg["mean"].between(0, 100).all()

# %% [markdown]
# ## Summary
# MaRS credits a failed attempt with its *best* refinement, MeRS with their (discounted) average. Where refinements
# succeed only sometimes, MaRS keeps the signal of the one that worked; compare the rows above, and the paper's.
# docs/credit_rules.md sets each rule's equation beside its measured row.
