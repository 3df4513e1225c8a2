"""The toy world: a synthetic task family and a small self-trained policy where MURPHY's mechanism can act on a CPU.

    from murphy_lab.toy import make_tasks, build_toy_policy, informative_share
    train, test = make_tasks("train", 256, seed=0), make_tasks("test", 200, seed=0)
    path = build_toy_policy()            # the shipped policy (murphy_lab/toy/policy); loads with from_pretrained

See docs/toy_world.md for the design, why it should make retrospective credit matter, and measured numbers.
"""

from murphy_lab.toy.build import SIZES, ToyPolicyConfig, build_toy_policy, default_cache_dir
from murphy_lab.toy.corpus import NoiseConfig, build_corpus
from murphy_lab.toy.measure import failure_values, informative, informative_share, measure_policy
from murphy_lab.toy.world import Spec, make_tasks, revealed, revealed_in, spec_of

__all__ = [
    "SIZES",
    "NoiseConfig",
    "Spec",
    "ToyPolicyConfig",
    "build_corpus",
    "build_toy_policy",
    "default_cache_dir",
    "failure_values",
    "informative",
    "informative_share",
    "measure_policy",
    "make_tasks",
    "revealed",
    "revealed_in",
    "spec_of",
]
