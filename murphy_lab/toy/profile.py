"""The `toy` run profile: how `murphy_lab.config.resolve` turns profile="toy" into (model path, training tasks).

Registered on `import murphy_lab.toy` (config.resolve imports it on demand). Presets, chosen for a 2-core CPU:
8 tasks per step with G1 = G2 = 4 (a full tree: 4 + 16 trajectories), two turns, programs of at most 48
characters, 40 steps at lr 2e-4 (the prototype moved pass@1 within ~45 steps at 3e-4 but collapsed later), beta = 0.04 as in the paper, and
`reward_tests="visible"`: in the toy world the visible suite is the staged lock whose feedback reveals what the
next turn needs, and it is all-or-nothing, so reward and feedback both come from it (the hidden suite is kept
for the evaluation verdict).
"""

from __future__ import annotations

from pathlib import Path

TOY_PRESETS = dict(
    g1=4, g2=4, turns=2, per_device_train_batch_size=32, max_completion_length=48, max_steps=40,
    learning_rate=2e-4, beta=0.04, temperature=1.0, save_steps=50, bf16=False, reward_tests="visible",
    executor={"timeout": 2.0, "workers": 2},
)

TRAIN_TASKS = dict(n=512, seed=0)  # the training split's task set (task_args override these)


def toy_profile(config, workdir: str | Path) -> tuple[str, list]:
    """`builder(config, workdir)` for murphy_lab.config: the cached toy policy and training-split tasks.

    `config.task_args` may set n, seed, p_hide_a, p_hide_b (make_tasks) and `policy_size` ("toy" | "smoke").
    The policy is built once per machine in the shared cache (murphy_lab.toy.default_cache_dir), not in workdir.
    """
    from murphy_lab.toy.build import build_toy_policy
    from murphy_lab.toy.world import make_tasks

    args = {**TRAIN_TASKS, **(config.task_args or {})}
    size = args.pop("policy_size", "toy")
    model = config.model or build_toy_policy(size=size, progress=True)
    return model, make_tasks("train", **args)


def register() -> None:
    """Register the toy profile with murphy_lab.config (idempotent)."""
    from murphy_lab.config import register_profile

    register_profile("toy", toy_profile, TOY_PRESETS)
