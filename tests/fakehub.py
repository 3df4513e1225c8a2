"""A stand-in for the Hugging Face hub on 127.0.0.1: the hub's HTTP API for the few calls `hf download` and
`datasets.load_dataset` make, serving repositories from a local folder. With HF_ENDPOINT pointing at it, a command
runs exactly as a user types it and goes through the same loading code as against huggingface.co (the hub client,
`datasets`' hub resolution, `murphy_lab.tasks.sources.read_rows`'s hub branch); only the bytes are fixtures.

    with FakeHub(tmp_path / "hub") as hub:           # hub.root/<models|datasets>/<owner>/<name>/<files>
        paper_repos(hub.root)                        # KodCode, MBPP, LiveCodeBench and Qwen/Qwen3-1.7B fixtures
        env = hub.env(tmp_path / "hf-home")          # HF_ENDPOINT + an empty HF_HOME
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

SHA = "0" * 40  # every repository's one revision


def _listing(folder: Path) -> list[dict]:
    out = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        out.append(
            {
                "type": "file",
                "path": path.relative_to(folder).as_posix(),
                "size": len(data),
                "oid": hashlib.sha1(data).hexdigest(),
            }
        )
    return out


class _Handler(BaseHTTPRequestHandler):
    root: Path
    requests: list

    def log_message(self, *args):  # quiet; the requests are kept in `requests`
        pass

    def _send(self, code: int, body: bytes = b"", headers: tuple = ()) -> None:
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj) -> None:
        self._send(200, json.dumps(obj).encode(), (("Content-Type", "application/json"),))

    def _repo(self, parts: list[str]) -> tuple[Path, list[str]]:  # api/<kind>/<owner>/<name>/...
        return self.root / parts[1] / parts[2] / parts[3], parts[4:]

    def do_HEAD(self):
        self.do_GET()

    def do_POST(self):  # api/<kind>/<owner>/<name>/paths-info/<rev>
        self.requests.append(f"POST {self.path}")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        folder, _ = self._repo(urlparse(self.path).path.strip("/").split("/"))
        try:
            paths = json.loads(body)["paths"]
        except (ValueError, KeyError):
            paths = parse_qs(body).get("paths", [])
        entries = [e for e in _listing(folder) if e["path"] in paths]
        entries += [{"type": "directory", "path": p, "oid": SHA} for p in paths if (folder / p).is_dir()]
        self._json(entries)

    def do_GET(self):
        self.requests.append(f"{self.command} {self.path}")
        url = urlparse(self.path)
        parts = url.path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 4 and parts[1] in ("models", "datasets"):
            folder, rest = self._repo(parts)
            if not folder.is_dir():
                return self._send(
                    404, b'{"error": "Repository not found"}', (("X-Error-Code", "RepoNotFound"),)
                )
            if rest[:1] == ["tree"]:  # tree/<rev>[/<subfolder>]
                sub = "/".join(rest[2:])
                recursive = "recursive=true" in url.query
                files = [e for e in _listing(folder) if e["path"].startswith(f"{sub}/" if sub else "")]
                dirs = sorted({str(Path(e["path"]).parent) for e in files} - {".", sub})
                if not recursive:
                    files = [e for e in files if str(Path(e["path"]).parent) in (sub or ".",)]
                    dirs = [d for d in dirs if str(Path(d).parent) == (sub or ".")]
                return self._json([{"type": "directory", "path": d, "oid": SHA} for d in dirs] + files)
            return self._json(
                {
                    "id": "/".join(parts[2:4]),
                    "sha": SHA,
                    "private": False,
                    "gated": False,
                    "disabled": False,
                    "tags": [],
                    "cardData": {},
                    "siblings": [{"rfilename": e["path"]} for e in _listing(folder)],
                }
            )
        kind = "datasets" if parts[0] == "datasets" else "models"
        parts = parts[1:] if kind == "datasets" else parts
        if len(parts) >= 5 and parts[2] == "resolve":  # <owner>/<name>/resolve/<rev>/<path>
            path = self.root / kind / parts[0] / parts[1] / "/".join(parts[4:])
            if not path.is_file():
                return self._send(404, b"", (("X-Error-Code", "EntryNotFound"),))
            data = path.read_bytes()
            return self._send(
                200,
                data,
                (
                    ("ETag", f'"{hashlib.sha1(data).hexdigest()}"'),
                    ("X-Repo-Commit", SHA),
                    ("Content-Type", "application/octet-stream"),
                ),
            )
        self._send(404)


class FakeHub:
    """The stand-in hub, serving `root` on a free port of 127.0.0.1 while the `with` block runs."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.requests: list[str] = []
        handler = type("Handler", (_Handler,), {"root": self.root, "requests": self.requests})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def env(self, hf_home: Path) -> dict:
        """The environment of a process that reaches this hub, with empty caches (`hf_home`), online."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_OFFLINE"))}
        return {**env, "HF_ENDPOINT": self.url, "HF_HOME": str(hf_home), "HF_HUB_DISABLE_TELEMETRY": "1"}


# --- the paper profile's repositories, as small fixtures ------------------------------------------------------------
MBPP_README = """---
configs:
- config_name: full
  data_files:
  - {split: train, path: full/train-00000-of-00001.parquet}
  - {split: test, path: full/test-00000-of-00001.parquet}
  - {split: validation, path: full/validation-00000-of-00001.parquet}
  - {split: prompt, path: full/prompt-00000-of-00001.parquet}
- config_name: sanitized
  data_files:
  - {split: train, path: sanitized/train-00000-of-00001.parquet}
  - {split: test, path: sanitized/test-00000-of-00001.parquet}
  - {split: validation, path: sanitized/validation-00000-of-00001.parquet}
  - {split: prompt, path: sanitized/prompt-00000-of-00001.parquet}
---
"""
MBPP_SPLITS = {"prompt": 1, "test": 11, "validation": 511, "train": 601}  # a task id of each split


def mbpp_row(task_id: int, sanitized: bool = False) -> dict:
    row = {
        "task_id": task_id,
        "code": "def add(a, b):\n    return a + b\n",
        "test_list": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"],
    }
    if sanitized:
        return {
            **row,
            "prompt": f"Write a function add (task {task_id}).",
            "source_file": "x",
            "test_imports": [],
        }
    return {
        **row,
        "text": f"Write a function add (task {task_id}).",
        "test_setup_code": "",
        "challenge_test_list": [],
    }


def paper_repos(root: Path, model: Path | None = None) -> dict[str, int]:
    """Write the paper profile's hub repositories under `root` (KodCode-V1: 6 eligible rows and one without a
    solution; MBPP: 3 test-split tasks per configuration; LiveCodeBench: 2 problems in v6's test6.jsonl; and, when
    `model` is a model folder, Qwen/Qwen3-1.7B as a copy of it). Returns the tasks each loader should find."""
    import shutil

    import pandas as pd
    from test_tasks_loaders import kod_row, lcb_row

    from murphy_lab.tasks.livecodebench import VERSION_FILES

    kod = root / "datasets" / "KodCode" / "KodCode-V1" / "data"
    kod.mkdir(parents=True)
    rows = [kod_row(f"q{i}") for i in range(6)] + [kod_row("bad", solution="")]
    pd.DataFrame(rows).to_parquet(kod / "train-00000-of-00001.parquet")

    mbpp = root / "datasets" / "google-research-datasets" / "mbpp"
    for variant in ("full", "sanitized"):
        (mbpp / variant).mkdir(parents=True)
        for split, first in MBPP_SPLITS.items():
            n = 3 if split == "test" else 1
            frame = pd.DataFrame([mbpp_row(first + i, variant == "sanitized") for i in range(n)])
            frame.to_parquet(mbpp / variant / f"{split}-00000-of-00001.parquet")
    (mbpp / "README.md").write_text(MBPP_README)

    lcb = root / "datasets" / "livecodebench" / "code_generation_lite"
    lcb.mkdir(parents=True)
    for name in VERSION_FILES["release_v6"]:
        lcb.joinpath(name).write_text("")
    rows = [
        lcb_row("a1", "easy", "2025-02-10T00:00:00", functional=True),
        lcb_row("a2", "hard", "2025-03-01T00:00:00", functional=False),
    ]
    lcb.joinpath(VERSION_FILES["v6"][0]).write_text("".join(json.dumps(r) + "\n" for r in rows))

    if model is not None:
        shutil.copytree(model, root / "models" / "Qwen" / "Qwen3-1.7B")
    return {"kodcode-1k": 6, "HumanEval": 164, "MBPP": 3, "LCB-v6": 2}
