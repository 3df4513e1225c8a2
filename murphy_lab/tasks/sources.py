"""Where benchmark rows come from: a Hugging Face hub id, a local file or folder, or rows already in memory.

Every loader reads through `read_rows`, so the hub path and the offline fixture path are the same code with a
different `source`:

- a hub id such as ``"google-research-datasets/mbpp"`` -> ``datasets.load_dataset(hub_id, config, split=...)``
  (or, with `files`, ``datasets.load_dataset("json", data_files=["hf://datasets/<id>/<file>", ...])``);
- a local data file (``.jsonl``/``.json``/``.parquet``/``.csv``/``.arrow``) -> ``datasets.load_dataset(<format>,
  data_files=path)``;
- a local folder in Hugging Face layout (``<config>/<split>-00000-of-00001.parquet`` or ``<split>.jsonl`` ...) ->
  ``datasets.load_dataset(<format>, data_files=<that split's files>)`` (else ``datasets.load_dataset(folder)``);
- a `datasets.Dataset` or a list of dicts -> used as is (handy in notebooks and tests).

Nothing here downloads unless `source` is a hub id; a path that does not exist is an error, never a hub lookup.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# data file suffix -> datasets builder name
FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv", ".arrow": "arrow"}


def looks_like_path(source: str) -> bool:
    """A string that names a local file or folder rather than a hub id ("owner/name")."""
    return (
        source.startswith((".", "/", "~"))
        or Path(source).suffix in FORMATS
        or Path(source).expanduser().exists()
        or source.count("/") > 1
    )


def _builder(path: Path) -> str:
    suffixes = [s for s in path.suffixes if s not in (".gz", ".bz2", ".xz", ".zst")]
    builder = FORMATS.get(suffixes[-1] if suffixes else "")
    if builder is None:
        raise ValueError(f"source {str(path)!r}: unknown data file type (expected one of {sorted(FORMATS)})")
    return builder


def load_file(path: str | Path) -> Any:
    """One local data file as a `datasets.Dataset` (all its rows)."""
    import datasets

    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"data file {str(path)!r} does not exist")
    return datasets.load_dataset(_builder(path), data_files=str(path), split="train")


def read_rows(
    source: Any,
    *,
    config: str | None = None,
    split: str | None = None,
    files: Sequence[str] | None = None,
) -> Sequence[dict]:
    """Rows (dict-like, indexable) of a dataset named by `source`; see the module docstring for what `source` may be.

    Args:
        source: hub id, local file/folder path, `datasets.Dataset`, or list of dicts.
        config: the hub configuration (e.g. MBPP's "sanitized"); for a local folder, a subfolder of that name is
            used as `data_dir` when it exists.
        split: the split to read ("train", "test", ...); ignored for a single local file.
        files: data files inside the dataset repository or folder to read instead of a configuration (used for
            LiveCodeBench, whose release tags are sets of JSONL files). Every file must exist.
    """
    import datasets

    if isinstance(source, (datasets.Dataset, list, tuple)):
        return source
    if not isinstance(source, (str, Path)):
        raise TypeError(
            f"source must be a hub id, a path, a datasets.Dataset or a list of dicts, not {type(source).__name__}"
        )
    text = str(source)
    if isinstance(source, Path) or looks_like_path(text):
        path = Path(text).expanduser()
        if not path.exists():
            raise FileNotFoundError(
                f"source {text!r} does not exist (a local path; hub ids look like 'owner/name')"
            )
        if path.is_file():
            return load_file(path)
        if files:
            missing = [f for f in files if not (path / f).is_file()]
            if missing:
                raise FileNotFoundError(f"source folder {text!r} lacks the data file(s) {missing}")
            paths = [str(path / f) for f in files]
            return datasets.load_dataset(_builder(path / files[0]), data_files=paths, split="train")
        folder = path / config if config and (path / config).is_dir() else path
        if split:  # <split>-00000-of-00001.parquet, <split>.jsonl, ... (also names `datasets` does not infer)
            found = sorted(f for f in folder.glob(f"{split}[-.]*") if f.is_file() and f.suffix in FORMATS)
            if found:
                return datasets.load_dataset(
                    _builder(found[0]), data_files=[str(f) for f in found], split="train"
                )
        return datasets.load_dataset(str(folder), split=split)
    # A hub id: the only branch that may touch the network.
    log.info(
        "loading %s (config=%s, split=%s, files=%s) from the Hugging Face hub", text, config, split, files
    )
    if files:
        paths = [f"hf://datasets/{text}/{f}" for f in files]
        return datasets.load_dataset(_builder(Path(files[0])), data_files=paths, split="train")
    return datasets.load_dataset(text, config, split=split)
