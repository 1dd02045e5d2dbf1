"""Re-check records: what the book's slow re-checks found, stored with the recipe they checked.

Some claims of the pages rest on re-runs that take minutes (a longer patience, other splits and
seeds), far over a page's time budget, so they cannot run when a page executes.
``tools/rechecks.py`` (``make rechecks``) runs them with the package's own functions and writes
one record per chapter; the page glues every number it states about them from that record.

Where the records live: ``transformer_lab/recheck_records/<chapter>.json``, package data beside
the modules (as the self-check's stored answers in ``selfcheck/data``). A page reads its record
wherever it executes — a clone, Binder, or a venv where only the package was installed from the
repository's archive — and the package is the one thing all of them have. ``data/`` holds the
CloudWave data sets that ``make data`` regenerates, not results.

Each record carries the *recipe* it checked (``recipe_of``): every UPPER_CASE constant of the
chapter's experiment modules, a hash of the code of every package module those import (comments
and docstrings left out, so that rewording does not invalidate a record), the hash of every data
file the experiment reads, and the versions of Python, PyTorch, NumPy and scikit-learn.
``load_record`` recomputes that recipe and raises ``StaleRecordError`` naming ``make rechecks``
when any part differs, so a page built on a changed experiment fails instead of showing numbers
of another one. The record's numbers are those of the canonical numeric mode on x86-64
(``reproducibility``); off that mode a page still glues them, and says so.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import json
import platform
import textwrap
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

RECORD_DIR = Path(__file__).resolve().parent / "recheck_records"
RERUN_COMMAND = "make rechecks"
PROVENANCE_WIDTH = 72  # the pages' output column (CONTRIBUTING's code column, with room)
PACKAGE = "transformer_lab"
VERSIONED = ("torch", "numpy", "scikit-learn")


@dataclass(frozen=True)
class Experiment:
    """What one chapter's re-check depends on: its experiment modules (their UPPER_CASE
    constants, and the code of every package module they import) and the data files it reads
    (names in ``data/``, found by ``datasets.find_data_dir``)."""

    title: str
    modules: tuple[str, ...]
    data_files: tuple[str, ...] = ()


EXPERIMENTS = {
    "ch3": Experiment(
        "chapter 3 (the set classifier)",
        ("transformer_lab.set_task", "transformer_lab.set_classifier"),
    ),
    "ch4": Experiment(
        "chapter 4 (position embeddings)",
        ("transformer_lab.char_transformer", "transformer_lab.mirrored_pairs"),
        ("feedback.json",),
    ),
    "ch6": Experiment(
        "chapter 6 (the Customer 360 bake-off)",
        ("transformer_lab.bakeoff",),
        ("customer360.csv",),
    ),
}


class StaleRecordError(RuntimeError):
    """A chapter's re-check record is missing, or was made for another recipe."""


def check_chapter(chapter: str) -> Experiment:
    """The ``Experiment`` of ``chapter`` ("ch3", "ch4" or "ch6"); a clear error otherwise."""
    if chapter not in EXPERIMENTS:
        raise ValueError(f"chapter must be one of {sorted(EXPERIMENTS)}, got {chapter!r}")
    return EXPERIMENTS[chapter]


def code_hash(source: str) -> str:
    """SHA-256 of a module's code: its syntax tree without docstrings (comments never enter it)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def _source_path(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ValueError(f"module {module!r} cannot be found")
    return Path(spec.origin)


def _package_imports(module: str, path: Path) -> set[str]:
    """The ``transformer_lab`` modules that ``module``'s source imports (absolute or relative)."""
    found = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = (
                    package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                )
                base = f"{parent}.{base}" if base else parent
            # `from transformer_lab import set_task` names a module, `from x import f` a name
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        found.update(name for name in names if _is_package_module(name))
    return found


def _is_package_module(name: str) -> bool:
    if name.split(".")[0] != PACKAGE:
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a name inside a module, not a module
        return False


def modules_behind(roots: tuple[str, ...]) -> list[str]:
    """``roots`` and every package module they import, directly or not (sorted names)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(_package_imports(module, _source_path(module)) - seen)
    return sorted(seen)


def recipe_constants(module: str) -> dict[str, str]:
    """Every UPPER_CASE constant of ``module`` (numbers, strings, tuples, dicts), as its repr."""
    loaded = importlib.import_module(module)
    return {
        name: repr(value)
        for name, value in sorted(vars(loaded).items())
        if name.isupper()
        and isinstance(value, (bool, int, float, str, tuple, dict, frozenset))
    }


def data_hash(content: bytes) -> str:
    """SHA-256 of a data file with Windows line endings read as Unix ones (a checkout on Windows
    may convert them; the data are the same)."""
    return hashlib.sha256(content.replace(b"\r\n", b"\n")).hexdigest()


def public_version(text: str) -> str:
    """A version without its local label: PyTorch's Linux CPU build is ``2.13.0+cpu``, the same
    release is ``2.13.0`` on macOS and Windows."""
    return text.split("+", 1)[0]


def recipe_of(chapter: str) -> dict[str, dict[str, str]]:
    """The current recipe of ``chapter``'s re-check: ``constants`` ("module.NAME" → repr),
    ``code`` (module → hash of its code), ``data`` (file → SHA-256) and ``versions``."""
    experiment = check_chapter(chapter)
    constants = {
        f"{module}.{name}": value
        for module in experiment.modules
        for name, value in recipe_constants(module).items()
    }
    code = {
        module: code_hash(_source_path(module).read_text(encoding="utf-8"))
        for module in modules_behind(experiment.modules)
    }
    data = {}
    if experiment.data_files:
        from transformer_lab.datasets import find_data_dir

        folder = find_data_dir(files=experiment.data_files)
        data = {
            name: data_hash((folder / name).read_bytes()) for name in experiment.data_files
        }
    versions = {"python": ".".join(platform.python_version_tuple()[:2])}
    versions.update({name: public_version(version(name)) for name in VERSIONED})
    return {"constants": constants, "code": code, "data": data, "versions": versions}


def fingerprint(recipe: dict[str, dict[str, str]]) -> str:
    """SHA-256 of a recipe (from ``recipe_of``): equal exactly when every part is equal."""
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def recipe_changes(recorded: dict, current: dict) -> list[str]:
    """What differs between two recipes, one short phrase per part (empty when none does)."""
    changes = []
    for part in sorted(set(recorded) | set(current)):
        old, new = recorded.get(part, {}), current.get(part, {})
        for key in sorted(set(old) | set(new)):
            if old.get(key) == new.get(key):
                continue
            if part in ("constants", "versions"):
                changes.append(
                    f"{key} {old.get(key, 'absent')} -> {new.get(key, 'absent')}"
                )
            else:
                what = "code of" if part == "code" else "data file"
                changes.append(f"{what} {key}")
    return changes


def record_path(chapter: str) -> Path:
    """Where ``chapter``'s record lives: ``RECORD_DIR/<chapter>.json``."""
    check_chapter(chapter)
    return RECORD_DIR / f"{chapter}.json"


def write_record(
    chapter: str, results: dict, provenance: dict, path: Path | str | None = None
) -> Path:
    """Store ``results`` with ``provenance`` and the current recipe; return the file written."""
    recipe = recipe_of(chapter)
    record = {
        "chapter": chapter,
        "fingerprint": fingerprint(recipe),
        "provenance": provenance,
        "recipe": recipe,
        "results": results,
    }
    path = Path(path) if path is not None else record_path(chapter)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


# The parts of a recipe that define the experiment. The library versions are recorded too, but a
# reader whose versions differ (a pip install off the lock) still gets the page, with a note: the
# committed records are tested against the lock's versions (tests/test_rechecks.py).
EXPERIMENT_PARTS = ("constants", "code", "data")


def load_record(
    chapter: str, path: Path | str | None = None, strict_versions: bool = False
) -> dict:
    """``chapter``'s record (chapter, fingerprint, provenance, recipe, results), checked against
    the current recipe. Raises ``StaleRecordError`` naming ``make rechecks`` when the record is
    missing or the experiment changed since it was made (its constants, code or data; with
    ``strict_versions`` also the library versions). Otherwise differing versions are listed
    under ``"version_changes"``, which ``describe_provenance`` prints."""
    experiment = check_chapter(chapter)
    path = Path(path) if path is not None else record_path(chapter)
    rerun = f"run `{RERUN_COMMAND}` (or `python tools/rechecks.py {chapter}`) and commit"
    if not path.is_file():
        raise StaleRecordError(
            f"{experiment.title} has no re-check record at {path}: {rerun} the record it writes"
        )
    record = json.loads(path.read_text(encoding="utf-8"))
    recorded, current = record.get("recipe", {}), recipe_of(chapter)
    if record.get("fingerprint") != fingerprint(recorded):
        changes = ["its fingerprint does not match its own recipe"]
    else:
        parts = EXPERIMENT_PARTS + (("versions",) if strict_versions else ())
        changes = recipe_changes(
            {k: v for k, v in recorded.items() if k in parts},
            {k: v for k, v in current.items() if k in parts},
        )
    if changes:
        shown = "; ".join(changes[:6]) + (
            f"; and {len(changes) - 6} more" if len(changes) > 6 else ""
        )
        raise StaleRecordError(
            f"the re-check record of {experiment.title} ({path.name}) is stale: it was made for "
            f"another recipe (changed since: {shown}). Its numbers no longer describe this "
            f"experiment: {rerun} the new record"
        )
    record["version_changes"] = recipe_changes(
        {"versions": recorded.get("versions", {})}, {"versions": current["versions"]}
    )
    return record


def describe_provenance(record: dict, width: int = PROVENANCE_WIDTH) -> str:
    """When, on which CPU, in which numeric mode and how fast the record was made: one sentence,
    wrapped at ``width`` characters (a page's output column)."""
    made = record["provenance"]
    seconds = made["wall_seconds"]
    took = f"{seconds} s" if seconds < 120 else f"{seconds / 60:.0f} min"
    line = (
        f"made by `{made['command']}` on {made['date']}, {made['cpu']}, "
        f"{made['numeric_mode']}, in {took} (load average {made['load_average']})"
    )
    if record.get("version_changes"):
        line += (
            f"; with other library versions than yours ({'; '.join(record['version_changes'])}),"
            " so its numbers may differ from a re-run here"
        )
    return textwrap.fill(line, width, break_on_hyphens=False)
