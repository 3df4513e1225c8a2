"""The executed copies under docs/executed/: notebooks run at their default parameters, readable in a static viewer.

    .venv/bin/python benchmarks/notebooks_executed.py                        # every notebook of EXECUTED
    .venv/bin/python benchmarks/notebooks_executed.py 11_reward_hacking      # one of them
    .venv/bin/python benchmarks/notebooks_executed.py --text 06_training_toy_world   # only the text changed

Each notebook runs under papermill in a fresh temporary folder with the toy runs' CPU kernels pinned to AVX2 (as
`make demo` pins them, so the numbers are the machine's, not its CPU flags'), then the copy is made readable without
a kernel:

- a progress bar is a widget whose text a static viewer shows as it was when the bar appeared (`0/40`): each bar's
  output is replaced by its final line, read from the widget state papermill saved (`freeze_bars`), and the widget
  state is dropped;
- papermill's record of the input and output paths and anything that names a folder of this machine are refused
  (`machine_paths`): the script stops instead of writing a copy that prints one.

Writes docs/executed/<name>.ipynb and prints one line per notebook (`<name>: <wall> s, <cpu> CPU-s (load <l>)`). tests/test_notebook_claims.py
checks the copies: their cells are the notebook's cells, every number a `<!-- measured -->` block of their text
quotes is among their outputs, no bar froze at its start, no machine path.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "docs" / "executed"
# the copies docs/ links to
EXECUTED = ("06_training_toy_world", "11_reward_hacking", "12_benchmark_protocol")
# as the Makefile's demo
PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
WIDGET = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# a folder of this machine in an output: a temporary folder, a home, the checkout's parent
MACHINE_PATH = re.compile(r"(/tmp/|/var/folders/|/root/|/home/\w|/Users/\w|/work/\w|[A-Z]:\\\\Users)")


def _text(value: str) -> str:
    return html.unescape(value).replace("\u2007", " ").replace("\xa0", " ")


def bar_line(state: dict, model_id: str) -> str | None:
    """The final text of a tqdm notebook bar (an HBox of an HTML label, a FloatProgress and an HTML counter), from
    saved widget state; None when `model_id` is not such a bar."""
    box = state.get(model_id, {})
    children = box.get("state", {}).get("children") or []
    if box.get("model_name") != "HBoxModel" or len(children) != 3:
        return None
    left, progress, right = (state.get(c.removeprefix("IPY_MODEL_"), {}) for c in children)
    if progress.get("model_name") != "FloatProgressModel":
        return None
    value, total = progress["state"].get("value") or 0, progress["state"].get("max") or 0
    filled = int(10 * value / total) if total else 0
    bar = "█" * filled + " " * (10 - filled)
    return f"{_text(left['state'].get('value', ''))}|{bar}|{_text(right['state'].get('value', ''))}".strip()


def freeze_bars(nb: dict) -> int:
    """Replace every progress-bar widget output by its final line (text/plain); drop the widget state. Returns the
    number of bars frozen."""
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    frozen = 0
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET)
            if view is None:
                continue
            line = bar_line(state, view["model_id"])
            if line is None:
                raise ValueError(
                    f"a widget output that is not a progress bar: {out['data'].get('text/plain')}"
                )
            out["data"] = {"text/plain": [line]}
            frozen += 1
    nb.get("metadata", {}).pop("widgets", None)
    return frozen


def outputs_text(nb: dict) -> str:
    """Everything a reader sees of the outputs: streams, text/plain, text/html and errors."""
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append("".join(out.get("text", "")))
            elif out.get("output_type") == "error":
                parts.append(f"{out.get('ename')}: {out.get('evalue')}")
            for kind in ("text/plain", "text/html", "text/markdown"):
                value = out.get("data", {}).get(kind)
                if value is not None:
                    parts.append("".join(value))
    return "\n".join(parts)


def machine_paths(nb: dict) -> list[str]:
    """Every place the copy names a folder of this machine (outputs and metadata)."""
    found = [m.group(0) for m in MACHINE_PATH.finditer(outputs_text(nb))]
    papermill = nb.get("metadata", {}).get("papermill", {})
    found += [f"papermill {k}" for k in ("input_path", "output_path", "cwd") if papermill.get(k)]
    return found


def execute(name: str, out_dir: Path = OUT) -> tuple[float, float]:
    """Run notebooks/<name>.ipynb at its defaults into <out_dir>/<name>.ipynb (see the module docstring); returns
    (wall seconds, CPU seconds of the run and everything it started)."""
    source = NOTEBOOKS / f"{name}.ipynb"
    with tempfile.TemporaryDirectory(prefix="executed_") as folder:
        raw = Path(folder) / source.name
        env = dict(os.environ, **PINS, MPLBACKEND="module://matplotlib_inline.backend_inline")
        t0, cpu0 = time.perf_counter(), _children_cpu()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "papermill",
                str(source),
                str(raw),
                "--cwd",
                folder,
                "-k",
                "python3",
                "--no-progress-bar",
                "--log-level",
                "WARNING",
            ],
            check=True,
            env=env,
        )
        wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
        nb = json.loads(raw.read_text())
    freeze_bars(nb)
    for key in ("input_path", "output_path", "cwd"):  # where papermill ran: this machine's folders
        nb.get("metadata", {}).get("papermill", {}).pop(key, None)
    paths = machine_paths(nb)
    if paths:
        raise SystemExit(
            f"{name}: the executed copy names folders of this machine ({sorted(set(paths))[:5]}); fix "
            f"the notebook's prints, nothing written"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return wall, cpu


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes and their descendants."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def refresh_text(name: str, out_dir: Path = OUT) -> None:
    """Give an executed copy the notebook's current markdown, without running it again: refused unless its code
    cells are the notebook's code cells (the outputs come from the code alone)."""
    copy_path = out_dir / f"{name}.ipynb"
    nb, copy = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text()), json.loads(copy_path.read_text())

    def code(cells):
        return [("".join(c["source"]), c["cell_type"] == "code") for c in cells if c["cell_type"] == "code"]

    if (
        code(nb["cells"]) != code(copy["cells"])
        or len(nb["cells"]) != len(copy["cells"])
        or [c["cell_type"] for c in nb["cells"]] != [c["cell_type"] for c in copy["cells"]]
    ):
        raise SystemExit(
            f"{name}: the code cells changed since the copy was made; run it again (without --text)"
        )
    for mine, theirs in zip(copy["cells"], nb["cells"]):
        if mine["cell_type"] == "markdown":
            mine["source"] = theirs["source"]
    copy_path.write_text(json.dumps(copy, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help=f"notebooks to run (default: {', '.join(EXECUTED)})")
    p.add_argument(
        "--text", action="store_true", help="only copy the notebooks' current markdown into their copies"
    )
    a = p.parse_args(argv)
    unknown = [n for n in a.names if not (NOTEBOOKS / f"{n}.ipynb").is_file()]
    if unknown:
        print(f"notebooks_executed: no notebook {', '.join(unknown)} under notebooks/", file=sys.stderr)
        return 2
    for name in a.names or EXECUTED:
        if a.text:
            refresh_text(name)
            print(f"{name}: text refreshed", flush=True)
        else:
            wall, cpu = execute(name)
            print(f"{name}: {wall:.0f} s, {cpu:.0f} CPU-s (load {os.getloadavg()[0]:.1f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
