"""Hand-made rollout trees and a scripted policy for teaching (notebooks, course notes, tests of the figures).

Every function returns fresh objects, deterministic for a given seed; nothing here runs a model.

- `informative_failure_tree()`: the paper's motivating example (§1). Two first attempts fail all tests; one runs and
  its feedback reveals the expected value (an *informative* failure), the other is a syntax error whose feedback
  reveals nothing. Without backup both get credit 0 and the same advantage; MaRS credits the informative one.
- `paper_tree(seed)`: the shape behind the paper's counts: G1 = G2 = 8, S = 2, every turn-1 candidate fails, so the
  tree holds 8 + 8·8 = 72 trajectories in 9 groups; InterP (b_grp = 4) keeps 40, IntraP (b_traj = 4) keeps 36.
- `ScriptedTaxPolicy`: a tiny scripted "policy" for one task (`add_tax`), usable with `murphy_lab.tree.build_tree`:
  first attempts are right, wrong-but-running or broken; a refinement whose prompt quotes the expected value is
  usually fixed, one that quotes only a compile error is fixed by luck.
"""

from __future__ import annotations

import random

from murphy_lab.prompts import first_prompt, refine_prompt
from murphy_lab.tree import Node, RolloutTree

# --- the informative-failure example ------------------------------------------------------------------------------
TAX_PROMPT = "def add_tax(price):\n    '''Return the price with the shop's sales tax added.'''\n"
TAX_TESTS = ["assert add_tax(10) == 12.0", "assert add_tax(5) == 6.0", "assert add_tax(2.5) == 3.0"]

_RIGHT = "def add_tax(price):\n    return price * 1.2\n"
# runs; every test fails, the feedback shows 12.0
_WRONG_RATE = "def add_tax(price):\n    return price * 1.1\n"
_SYNTAX = "def add_tax(price)\n    return price * 1.15\n"  # missing colon: the feedback reveals nothing
_INDENT = "def add_tax(price):\nreturn price * 1.3\n"  # IndentationError: nothing about the rate either
_GUESS = "def add_tax(price):\n    return price * 1.15\n"  # a fix that still guesses the rate

# feedback texts as murphy_lab.executor.Executor writes them for these programs and TAX_TESTS
FB_WRONG_RATE = (
    "Tests failed:\nassert add_tax(10) == 12.0  # output: 11.0\nassert add_tax(5) == 6.0  # output: 5.5\n"
    "assert add_tax(2.5) == 3.0  # output: 2.75"
)
FB_SYNTAX = (
    'The program does not compile:\nFile "solution.py", line 1\n    def add_tax(price)\n'
    "                      ^\nSyntaxError: expected ':'"
)
FB_INDENT = (
    'The program does not compile:\nFile "solution.py", line 2\n    return price * 1.3\n    ^^^^^^\n'
    "IndentationError: expected an indented block after function definition on line 1"
)
FB_GUESS = (
    "Tests failed:\nassert add_tax(10) == 12.0  # output: 11.5\nassert add_tax(5) == 6.0  # output: 5.75\n"
    "assert add_tax(2.5) == 3.0  # output: 2.875"
)


def _leaf(code: str, reward: float, feedback: str = "", status: str = "") -> Node:
    status = status or ("passed" if reward >= 1.0 else "failed")
    return Node(
        reward=reward, code=code, completion=code, feedback=feedback or "All tests passed.", status=status
    )


def informative_failure_tree() -> RolloutTree:
    """The motivating example: an informative failure (A), an uninformative one (B), a solve (C), a lucky one (D).

    Turn 1 (G1 = 4):  A  r=0  runs, wrong rate; feedback shows the expected 12.0     -> refinements [1, 1, 0, 1]
                      B  r=0  syntax error; feedback reveals nothing                 -> refinements [0, 0, 0, 0]
                      C  r=1  correct (a leaf)
                      D  r=0  indentation error; feedback reveals nothing            -> refinements [0, 0, 1, 0]
    A, B and D share the same immediate reward (and outcome) 0; MaRS gives A = D = 1 (D by one lucky
    refinement) and B = 0; MeRS (γ = 1) gives A = (0 + 3/4)/2 = 0.375, D = (0 + 1/4)/2 = 0.125, B = 0.
    """

    def refinements(rewards: list[float]) -> list[Node]:
        return [_leaf(_RIGHT, 1.0) if r >= 1.0 else _leaf(_GUESS, 0.0, FB_GUESS) for r in rewards]

    a = _leaf(_WRONG_RATE, 0.0, FB_WRONG_RATE)
    a.children = refinements([1, 1, 0, 1])
    b = _leaf(_SYNTAX, 0.0, FB_SYNTAX, status="syntax")
    b.children = refinements([0, 0, 0, 0])
    c = _leaf(_RIGHT, 1.0)
    d = _leaf(_INDENT, 0.0, FB_INDENT, status="syntax")
    d.children = refinements([0, 0, 1, 0])
    for name, node in zip("ABCD", (a, b, c, d)):
        node.meta["name"] = name
    root = Node(prompt=TAX_PROMPT, feedback="task prompt", children=[a, b, c, d])
    for v in root.children:  # the prompts each group was sampled from (what the loss conditions on)
        v.prompt = first_prompt(TAX_PROMPT)
        for u in v.children:
            u.prompt = refine_prompt(TAX_PROMPT, v.code, v.feedback)
    return RolloutTree(root=root, task_id="add_tax")


# --- the 72/40/36 tree --------------------------------------------------------------------------------------------
def paper_tree(seed: int = 0, g1: int = 8, g2: int = 8, n_tests: int = 4) -> RolloutTree:
    """A random two-turn tree with every turn-1 candidate failing: g1 + g1·g2 trajectories (72 for 8, 8).

    Rewards are pass fractions k / n_tests. Turn-1 rewards lie below 1 (all fail, so all are expanded); each
    refinement group gets its own success rate, so groups differ in variance (which is what InterP ranks).
    """
    if g1 < 2 or g2 < 2:
        raise ValueError(f"g1 and g2 must be >= 2, got g1={g1}, g2={g2}")
    rng = random.Random(seed)
    root = Node(prompt="def f(x): ...  # task prompt q(1)", feedback="task prompt")
    for i in range(g1):
        k = rng.randrange(n_tests)  # 0 .. n_tests - 1 tests passed: a failure
        v = Node(reward=k / n_tests, code=f"# attempt {i}", status="failed", meta={"sample": i})
        v.feedback = (
            f"assert f({i}) == {i * i}  # output: {i * i + rng.randint(1, 9)}" if k else "Error: crashed"
        )
        p_fix = rng.choice([0.0, 0.1, 0.3, 0.5, 0.7, 0.9])  # how well v's feedback guides its refinements
        for j in range(g2):
            if rng.random() < p_fix:
                r, fb = 1.0, "all tests passed"
            else:
                kk = rng.randrange(n_tests)
                r, fb = kk / n_tests, f"assert f({j}) == {j + 1}  # output: {j}"
            status = "passed" if r >= 1 else "failed"
            v.children.append(
                Node(reward=r, feedback=fb, code=f"# refinement {i}.{j}", status=status, meta={"sample": j})
            )
        root.children.append(v)
    return RolloutTree(root=root, task_id=f"paper-shape-{seed}")


def small_tree() -> RolloutTree:
    """Three failures and a solve, two turns: the smallest tree on which MaRS, MeRS and pruning all differ."""
    v1 = Node(
        reward=0.0, feedback="assert f(2) == 4  # output: 3", children=[Node(reward=1.0), Node(reward=0.0)]
    )
    v2 = Node(
        reward=0.5, feedback="assert f(0) == 0  # output: 1", children=[Node(reward=0.5), Node(reward=0.5)]
    )
    v3 = Node(reward=1.0, feedback="all tests passed")
    return RolloutTree(root=Node(children=[v1, v2, v3]), task_id="small")


# --- a scripted policy for build_tree ------------------------------------------------------------------------------
class ScriptedTaxPolicy:
    """A scripted stand-in for a language model on the `add_tax` task: `sample(prompts, n) -> list[list[str]]`.

    Turn 1 (a prompt without feedback): correct with `p_right`, a wrong rate with `p_wrong` (runs, informative),
    otherwise a program that does not compile (uninformative: the executor then shows no test). A refinement whose
    feedback quotes the expected value ("== 12.0") is fixed with `p_fix_informed`; any other with `p_fix_blind`.
    """

    def __init__(
        self,
        seed: int = 0,
        p_right: float = 0.2,
        p_wrong: float = 0.4,
        p_fix_informed: float = 0.8,
        p_fix_blind: float = 0.15,
    ) -> None:
        for name, p in (
            ("p_right", p_right),
            ("p_wrong", p_wrong),
            ("p_fix_informed", p_fix_informed),
            ("p_fix_blind", p_fix_blind),
        ):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {p!r}")
        if p_right + p_wrong > 1.0:
            raise ValueError(f"p_right + p_wrong must be <= 1, got {p_right + p_wrong}")
        self.rng = random.Random(seed)
        self.p_right, self.p_wrong = p_right, p_wrong
        self.p_fix_informed, self.p_fix_blind = p_fix_informed, p_fix_blind
        self.calls = 0  # number of sample() calls (build_tree makes one per turn)

    def _first(self) -> str:
        u = self.rng.random()
        if u < self.p_right:
            return _RIGHT
        return _WRONG_RATE if u < self.p_right + self.p_wrong else self.rng.choice([_SYNTAX, _INDENT])

    def _refine(self, prompt: str) -> str:
        feedback = prompt.split("Feedback", 1)[-1]
        informed = "== 12.0" in feedback  # the feedback quotes the expected value
        p = self.p_fix_informed if informed else self.p_fix_blind
        return _RIGHT if self.rng.random() < p else _GUESS

    def sample(self, prompts: list, n: int) -> list[list[str]]:
        self.calls += 1
        return [
            [self._refine(p) if "Feedback" in str(p) else self._first() for _ in range(n)] for p in prompts
        ]


# --- exercise checks -----------------------------------------------------------------------------------------------
def check_answer(name: str, answer, expected, tol: float = 1e-6) -> None:
    """The check cell of a notebook exercise: a hint while `answer` is None, else assert that it is right.

    Numbers compare within `tol`; anything else compares with ==. Raises AssertionError on a wrong answer.
    """
    if answer is None:
        print(f"exercise {name}: not answered yet — fill in the cell above and run this one again")
        return
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        ok = isinstance(answer, (int, float)) and abs(answer - expected) <= tol
    else:
        ok = answer == expected
    assert ok, f"exercise {name}: {answer!r} is not right — look again at the equation above the exercise"
    print(f"exercise {name}: correct ✓")
