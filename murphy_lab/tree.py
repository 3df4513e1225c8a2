"""The feedback-conditioned rollout tree (MURPHY §3.1): the data every other module speaks.

One tree per task. A virtual root stands for the task prompt q(1); its children are the turn-1 group (G1 samples).
Every candidate is executed; a candidate with reward 1.0 is a leaf. A failed candidate v at turn s < S is expanded:
its refinement prompt [task prompt, v's code, v's feedback] is sampled G2 times, and those samples are C(v), the
children of v. So every response group is the children of one node, and every group shares one prompt.

    root (task prompt)                turn 0, virtual
    ├── v1  r=0.0  "assert f(2)==7 # output: 5"    turn 1  ┐ group C(root), G1 members
    │   ├── u1  r=1.0                              turn 2  │ ┐ group C(v1), G2 members
    │   └── u2  r=0.0                              turn 2  │ ┘
    └── v2  r=1.0  (solved: a leaf)                turn 1  ┘

Paper symbol -> code name: r(v) -> `node.reward`, f(v) -> `node.feedback`, C(v) -> `node.children`,
r~(v) -> `node.credit`, Â -> `node.advantage`, G1/G2 -> `g1`/`g2`, S -> `turns` (see docs/notation.md).

`build_trees` grows many trees turn by turn with ONE sampling call and ONE execution batch per turn, written
against two small interfaces so that it runs with a scripted policy in a notebook and with TRL/vLLM in training:

    sample(prompts: list, n: int) -> list[list[str]]        (or any object with a `.sample(prompts, n)` method)
    execute(jobs: list[(program, tests)]) -> list[result]   (or any object with `.run_many(jobs)`);
        a result has `.reward` in [0, 1], `.feedback` (str) and optionally `.status`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

SOLVED = 1.0  # a candidate whose reward reaches this is a leaf (all tests pass)


@dataclass(eq=False)
class Node:
    """One candidate program in the tree (or the virtual root when `turn == 0`).

    Buildable by hand: `Node(reward=0.0, children=[Node(reward=1.0), Node(reward=0.0)])`.
    """

    reward: float = 0.0  # r(v): fraction of tests passed, in [0, 1]
    children: list[Node] = field(default_factory=list)  # C(v): the group sampled from v's refinement prompt
    feedback: str = ""  # f(v): executor feedback quoted in the children's prompt
    completion: str = ""  # the raw model output
    prompt: Any = ""  # the prompt this completion was sampled from (str, or chat messages)
    code: str = ""  # the program extracted from `completion`
    turn: int | None = None  # 0 for the root, 1 for the turn-1 group, ...; filled from depth when None
    status: str = ""  # executor status (passed, failed, error, timeout, ...)
    credit: float | None = None  # r~(v) after retrospective backup (credit.py)
    advantage: float | None = None  # Â(v), group-relative (grpo.py)
    pruned: bool = False  # dropped by InterP / IntraP (prune.py)
    meta: dict = field(default_factory=dict)  # free room: token ids, sample index, timings, ...

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def kept_children(self) -> list[Node]:
        return [c for c in self.children if not c.pruned]

    def walk(self) -> Iterator[Node]:
        """Pre-order walk of this node and all its descendants."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    # --- JSON ---------------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in _NODE_FIELDS}
        d["children"] = [c.to_dict() for c in self.children]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Node:
        kw = {k: d[k] for k in _NODE_FIELDS if k in d}
        return cls(children=[cls.from_dict(c) for c in d.get("children", [])], **kw)


_NODE_FIELDS = (
    "reward",
    "feedback",
    "completion",
    "prompt",
    "code",
    "turn",
    "status",
    "credit",
    "advantage",
    "pruned",
    "meta",
)


@dataclass(eq=False)
class RolloutTree:
    """A rollout tree: a virtual `root` (the task prompt) whose children are the turn-1 group."""

    root: Node
    task_id: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        _fill_turns(self.root, 0)

    def nodes(self, include_root: bool = False, kept_only: bool = False) -> list[Node]:
        """Every node of the tree in pre-order; the virtual root only when `include_root`."""
        out = [n for n in self.root.walk() if include_root or n is not self.root]
        return [n for n in out if not n.pruned] if kept_only else out

    def groups(self, kept_only: bool = False) -> list[tuple[Node, list[Node]]]:
        """Every response group as (parent, members), breadth-first (turn-1 group first).

        With `kept_only`, members dropped by pruning are left out and groups left empty are skipped.
        """
        out, frontier = [], [self.root]
        while frontier:
            nxt = []
            for parent in frontier:
                if parent.children:
                    members = parent.kept_children() if kept_only else list(parent.children)
                    if members:
                        out.append((parent, members))
                    nxt.extend(parent.children)
            frontier = nxt
        return out

    @property
    def depth(self) -> int:
        return max((n.turn or 0) for n in self.root.walk())

    def __len__(self) -> int:  # number of trajectories (non-root nodes)
        return len(self.nodes())

    def validate(self) -> RolloutTree:
        """Raise ValueError on an empty tree or rewards outside [0, 1]; return self."""
        if not self.root.children:
            raise ValueError(f"tree {self.task_id!r} is empty: its root has no children (no turn-1 group)")
        for n in self.nodes():
            r = n.reward
            if not isinstance(r, (int, float)) or r != r or not 0.0 <= r <= 1.0:
                raise ValueError(
                    f"reward must lie in [0, 1], got {r!r} at a turn-{n.turn} node of tree {self.task_id!r}"
                )
        return self

    # --- JSON lines: one tree per line --------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps({"task_id": self.task_id, "meta": self.meta, "root": self.root.to_dict()})

    @classmethod
    def from_json(cls, line: str) -> RolloutTree:
        d = json.loads(line)
        return cls(root=Node.from_dict(d["root"]), task_id=d.get("task_id", ""), meta=d.get("meta", {}))


def _fill_turns(node: Node, depth: int) -> None:
    for n, d in _walk_depth(node, depth):
        if n.turn is None:
            n.turn = d


def _walk_depth(node: Node, depth: int) -> Iterator[tuple[Node, int]]:
    stack = [(node, depth)]
    while stack:
        n, d = stack.pop()
        yield n, d
        stack.extend((c, d + 1) for c in n.children)


def save_trees(trees: Sequence[RolloutTree], path: str) -> None:
    """Write trees as JSON lines (one tree per line)."""
    with open(path, "w") as f:
        for t in trees:
            f.write(t.to_json() + "\n")


def load_trees(path: str) -> list[RolloutTree]:
    """Read trees written by `save_trees` (or by a training run's `trees/` folder)."""
    with open(path) as f:
        return [RolloutTree.from_json(line) for line in f if line.strip()]


# ---------------------------------------------------------------------------------------------------------------
# Growing trees
# ---------------------------------------------------------------------------------------------------------------
SampleFn = Callable[[list, int], list[list[str]]]
RefineFn = Callable[[Any, str, str], Any]


def default_refine(task: Any, code: str, feedback: str) -> str:
    """The plain-text refinement prompt q = [task, v's code, v's feedback] (murphy_lab.prompts has richer ones)."""
    return f"{task}\n\n# Previous attempt:\n{code}\n\n# Feedback:\n{feedback}\n\n# Fixed program:\n"


def _sampler(sample: Any) -> SampleFn:
    return sample.sample if hasattr(sample, "sample") else sample


def _runner(execute: Any) -> Callable[[list], list]:
    if hasattr(execute, "run_many"):
        return execute.run_many
    return lambda jobs: [execute(*job) for job in jobs]


def build_trees(
    prompts: Sequence[Any],
    tests: Sequence[Any],
    sample: Any,
    execute: Any,
    *,
    g1: int = 8,  # = G1 in the paper: turn-1 group size
    g2: int = 8,  # = G2 in the paper: refinements sampled per failed node
    turns: int = 2,  # = S in the paper
    refine: RefineFn = default_refine,
    extract: Callable[[str], str] = lambda completion: completion,
    task_ids: Sequence[str] | None = None,
    on_turn: Callable[[int, list[Node]], None] | None = None,
    programs: Sequence[Callable[[str], str]] | None = None,
    tasks: Sequence[Any] | None = None,
) -> list[RolloutTree]:
    """Grow one rollout tree per prompt, turn by turn: one `sample` call and one `execute` batch per turn.

    Turn 1 samples `g1` candidates per task prompt; at each turn s < `turns`, every failed candidate (reward < 1)
    gets `g2` refinements sampled from `refine(task, code, feedback)`, where `task` is `tasks[i]` for tree i
    (default: `prompts[i]` itself). `tests[i]` are the tests whose results give rewards and feedback for tree i
    (in evaluation these are the *visible* tests).
    `on_turn(turn, new_nodes)` is called after each turn has been executed (progress, logging).
    `programs[i](code)` is what the executor runs for a candidate of tree i (default: the code itself; pass
    `[task.program for task in tasks]`); `node.code` keeps the model's code, which refinement prompts quote.
    """
    if len(prompts) != len(tests):
        raise ValueError(f"prompts and tests differ in length: {len(prompts)} vs {len(tests)}")
    if not isinstance(g1, int) or g1 < 2:
        raise ValueError(f"g1 must be an integer >= 2 (a GRPO group needs two members), got {g1!r}")
    if not isinstance(g2, int) or g2 < 1:  # g2 = 1 grows GRPO-MT's chains (modes.grpo_mt)
        raise ValueError(f"g2 must be an integer >= 1, got {g2!r}")
    if not isinstance(turns, int) or turns < 1:
        raise ValueError(f"turns must be an integer >= 1, got {turns!r}")
    if programs is not None and len(programs) != len(prompts):
        raise ValueError(f"prompts and programs differ in length: {len(prompts)} vs {len(programs)}")
    if tasks is not None and len(tasks) != len(prompts):
        raise ValueError(f"prompts and tasks differ in length: {len(prompts)} vs {len(tasks)}")
    task_of = list(prompts) if tasks is None else list(tasks)  # what refine(task, code, feedback) is handed
    sample_fn, run_fn = _sampler(sample), _runner(execute)
    ids = list(task_ids) if task_ids is not None else [str(i) for i in range(len(prompts))]
    trees = [RolloutTree(root=Node(prompt=p, turn=0), task_id=tid) for p, tid in zip(prompts, ids)]

    # open = (tree index, parent node, prompt to sample from, group size)
    open_ = [(i, t.root, prompts[i], g1) for i, t in enumerate(trees)]
    for turn in range(1, turns + 1):
        if not open_:
            break
        # one sampling call per turn; prompts with different group sizes (turn 1 vs later) never share a turn
        n = open_[0][3]
        completions = sample_fn([p for _, _, p, _ in open_], n)
        if len(completions) != len(open_) or any(len(c) != n for c in completions):
            raise ValueError(
                f"sample returned the wrong shape at turn {turn}: expected {len(open_)} lists of {n}"
            )
        new_nodes, jobs = [], []
        for (i, parent, prompt, _), outs in zip(open_, completions):
            for k, completion in enumerate(outs):
                code = extract(completion)
                child = Node(prompt=prompt, completion=completion, code=code, turn=turn, meta={"sample": k})
                parent.children.append(child)
                new_nodes.append((i, child))
                jobs.append((code if programs is None else programs[i](code), tests[i]))
        results = run_fn(jobs)  # one execution batch per turn
        if len(results) != len(jobs):
            raise ValueError(f"execute returned {len(results)} results for {len(jobs)} jobs")
        for (_, child), res in zip(new_nodes, results):
            child.reward = float(res.reward)
            child.feedback = getattr(res, "feedback", "")
            child.status = getattr(res, "status", "")
        if on_turn is not None:
            on_turn(turn, [c for _, c in new_nodes])
        open_ = [
            (i, child, refine(task_of[i], child.code, child.feedback), g2)
            for i, child in new_nodes
            if child.reward < SOLVED and turn < turns
        ]
    return trees


def build_tree(
    prompt: Any, tests: Any, sample: Any, execute: Any, *, task_id: str = "", task: Any = None, **kw: Any
) -> RolloutTree:
    """Grow one rollout tree (see `build_trees` for the arguments; `task` is what `refine` is handed)."""
    tasks = None if task is None else [task]
    return build_trees([prompt], [tests], sample, execute, task_ids=[task_id], tasks=tasks, **kw)[0]
