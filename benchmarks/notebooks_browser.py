"""The course tried as a student tries it: every notebook opened in JupyterLab in headless Chromium, Run All, timed.

An optional check, outside the test suite (it needs a browser). Set-up, once:

    apt-get install chromium chromium-driver                 # Debian's Chromium
    python3 -m venv /tmp/pw && /tmp/pw/bin/pip install playwright   # the driver only; no browser download

Then, from the repository root (JupyterLab and the kernel come from the project's .venv):

    /tmp/pw/bin/python benchmarks/notebooks_browser.py                     # every notebook, default parameters
    /tmp/pw/bin/python benchmarks/notebooks_browser.py 07_ablation_playground 11_reward_hacking

For each notebook: a copy in a scratch folder (JupyterLab saves outputs into the file it runs; the repository's
notebooks stay clean) is opened at /lab/tree/<name>.ipynb, Run → Run All Cells is clicked, and the run is done when
every code cell shows an execution count and the kernel is idle. A notebook passes when that happens within
`--limit` seconds (default 300) with no error output. In 07 the playground's b_grp slider is then moved with the
keyboard and its figure must change. One line per notebook, then

    browser run all: <n> notebooks, <p> passed, slowest <name> <s> s; playground sliders redraw: yes|no

A failure leaves a screenshot in --shots (default: a temporary folder). Exit status 1 when anything failed, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PLAYGROUND = "07_ablation_playground"
# JupyterLab renders every cell (no windowing), so each cell's prompt is in the page; no update or news checks
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(folder: Path, port: int, token: str) -> subprocess.Popen:
    settings = folder / ".settings"
    for name, value in SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        MPLBACKEND="module://matplotlib_inline.backend_inline",
    )
    lab = subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "jupyter"),
            "lab",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--ServerApp.token={token}",
            f"--ServerApp.root_dir={folder}",
            "--allow-root",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "lab.log", "w"),
        env=env,
    )
    for _ in range(120):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
            return lab
        except OSError:
            time.sleep(1)
    lab.kill()
    raise RuntimeError(f"JupyterLab did not start: {(folder / 'lab.log').read_text()[-2000:]}")


def kernels_idle(port: int, token: str) -> bool:
    """At least one kernel runs, and every kernel is idle."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/kernels?token={token}", timeout=5) as r:
        kernels = json.load(r)
    return bool(kernels) and all(k["execution_state"] == "idle" for k in kernels)


VISIBLE = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in the current tab
PROMPTS = f"""() => Array.from(document.querySelectorAll('{VISIBLE} .jp-CodeCell .jp-InputPrompt'))
                  .map(p => p.textContent.trim())"""
ERRORS = f"""() => Array.from(document.querySelectorAll('{VISIBLE} .jp-OutputArea-output'))
                  .filter(o => o.querySelector('pre') && /Traceback|Error:/.test(o.textContent)
                               && o.getAttribute('data-mime-type') === 'application/vnd.jupyter.stderr')
                  .map(o => o.textContent.slice(0, 300))"""


def run_all(page, base: str, name: str, port: int, token: str, limit: float) -> tuple[bool, float, str]:
    """Open, Run All, wait; (passed, seconds, why)."""
    page.goto(f"{base}/lab/workspaces/{name}/tree/{name}.ipynb?reset&token={token}")  # a workspace of its own
    page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=120_000)
    # the clock starts when the notebook is open: the kernel's start counts, as for a student
    t0 = time.perf_counter()
    page.wait_for_function(
        "() => /\\| Idle/.test(document.querySelector('.jp-StatusBar-Widget, #jp-main-statusbar')"
        "?.textContent || '')",
        timeout=int(limit * 1000),
    )  # the kernel is up
    page.click("div.lm-MenuBar-itemLabel:text-is('Run')")
    page.click("li.lm-Menu-item[data-command='runmenu:run-all']")
    quiet = 0  # polls in a row with the kernel idle and nothing running
    while True:
        time.sleep(2)
        elapsed = time.perf_counter() - t0
        prompts = page.evaluate(PROMPTS)
        # "[12]:" ran; "[*]:" runs; "[ ]:" waits
        pending = [p for p in prompts if not p[1:-2].strip().isdigit()]
        idle = kernels_idle(port, token)
        if not pending and prompts and idle:
            errors = page.evaluate(ERRORS)
            return (not errors, elapsed, f"error output: {errors[0]}" if errors else "")
        if elapsed > limit:
            return False, elapsed, f"{len(pending)} of {len(prompts)} cells not run after {limit:.0f} s"
        quiet = quiet + 1 if idle and "[*]:" not in prompts else 0
        if quiet >= 5:  # Run All ended with cells left: an error stopped it
            errors = page.evaluate(ERRORS)
            return False, elapsed, f"Run All stopped with {len(pending)} cells not run: {errors[:1]}"


def slider_redraws(page) -> bool:
    """Move the playground's b_grp slider one step with the keyboard; True when its figure changes."""
    image = ".widget-output img, .jupyter-widgets-output-area img"
    page.wait_for_selector(image, timeout=30_000)
    before = page.get_attribute(image, "src")
    handle = page.locator(".widget-slider:has(label:text-is('b_grp')) .noUi-handle").first
    handle.focus()
    page.keyboard.press("ArrowRight")
    for _ in range(30):
        time.sleep(1)
        after = page.get_attribute(image, "src")
        if after and after != before:
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help="notebooks (default: every notebooks/NN_*.ipynb)")
    p.add_argument(
        "--chromium", default="/usr/bin/chromium", help="the browser binary (default /usr/bin/chromium)"
    )
    p.add_argument("--limit", type=float, default=300.0, help="seconds per notebook (default 300)")
    p.add_argument("--shots", type=Path, default=None, help="folder for screenshots of failures")
    a = p.parse_args(argv)
    names = a.names or sorted(x.stem for x in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    unknown = [n for n in names if not (ROOT / "notebooks" / f"{n}.ipynb").is_file()]
    if unknown or not Path(a.chromium).is_file():
        print(
            f"notebooks_browser: {'no notebook ' + ', '.join(unknown) if unknown else 'no browser at ' + a.chromium}",
            file=sys.stderr,
        )
        return 2
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print(
            "notebooks_browser: needs playwright (pip install playwright in a scratch venv; see the docstring)",
            file=sys.stderr,
        )
        return 2
    folder = Path(tempfile.mkdtemp(prefix="course_browser_"))
    shots = a.shots or folder / "shots"
    shots.mkdir(parents=True, exist_ok=True)
    for n in names:
        shutil.copy(ROOT / "notebooks" / f"{n}.ipynb", folder / f"{n}.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    lab = start_lab(folder, port, token)
    results, redraw = {}, None
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=a.chromium, args=CHROMIUM_FLAGS)
            for name in names:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                ok, seconds, why = run_all(page, f"http://127.0.0.1:{port}", name, port, token, a.limit)
                if ok and name == PLAYGROUND:
                    redraw = slider_redraws(page)
                    ok, why = (
                        redraw,
                        "" if redraw else "the playground's figure did not change after a slider move",
                    )
                if not ok:
                    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
                results[name] = (ok, seconds)
                print(
                    f"{name}: {'passed' if ok else 'FAILED'} in {seconds:.0f} s{'' if ok else ' — ' + why}",
                    flush=True,
                )
                page.close()
                for kernel in json.load(
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/kernels?token={token}")
                ):
                    # one kernel at a time on 2 cores
                    req = urllib.request.Request(
                        f"http://127.0.0.1:{port}/api/kernels/{kernel['id']}?token={token}", method="DELETE"
                    )
                    urllib.request.urlopen(req)
            browser.close()
    finally:
        lab.terminate()
        lab.wait(timeout=30)
    passed = sum(ok for ok, _ in results.values())
    slowest = max(results, key=lambda n: results[n][1])
    print(
        f"browser run all: {len(results)} notebooks, {passed} passed, slowest {slowest} {results[slowest][1]:.0f} s; "
        f"playground sliders redraw: {'not tried' if redraw is None else 'yes' if redraw else 'no'}"
    )
    if passed == len(results):
        shutil.rmtree(folder, ignore_errors=True)
    else:
        print(f"screenshots and the JupyterLab log: {shots}, {folder / 'lab.log'}")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
