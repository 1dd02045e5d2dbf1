"""The book's pages and their committed reference outputs (used by tests and `make refresh`).

Pages stay MyST markdown (`.md`) so that they diff well and build with Jupyter Book. nbval only
reads `.ipynb`, so each page with code has an executed copy under `tests/references/`, at the
same relative path. Those copies are the reviewed outputs that CI compares every re-execution
against; `make refresh` rewrites them after a deliberate change.

    python tools/book_pages.py refresh [PAGE.md ...]   # re-execute and rewrite references
    python tools/book_pages.py execute PAGE.md ...     # execute pages for their page tests
    python tools/book_pages.py list                    # pages in the table of contents
    python tools/book_pages.py record-outputs          # rewrite the visible-outputs floor (deliberately)
    python tools/book_pages.py check-site SITE         # every page has its HTML in SITE (before publishing)
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path

# First: importing kernels blocks the imports no tool needs (see kernels.py).
from kernels import kernel_options

# isort: split
import jupytext
import nbformat
import yaml
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = ROOT / "tests" / "references"
VISIBLE_OUTPUTS = REFERENCES / "visible_outputs.json"


def cell_timeout() -> int:
    """Seconds one cell may run: ``execute.timeout`` of _config.yml, the limit's one home."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return int(config["execute"]["timeout"])


CELL_TIMEOUT_SECONDS = cell_timeout()
HIDDEN_OUTPUT_TAGS = {"remove-output", "remove-cell"}
# Alt text that is empty or looks like a file name or path counts as missing: when a figure has none,
# Sphinx fills in the image's path, which a check for "some alt text" would accept. Used as a
# Python and a JavaScript regular expression (case-insensitive), so keep to the syntax both share.
FILE_NAME_ALT = r"_build|^\S*[/\\]\S*$|\.(png|svg|jpe?g|gif|webp|pdf)$"


def alt_text_problem(alt: str | None) -> str | None:
    """Why ``alt`` is not a usable description (empty, or a file name or path), or None if it is."""
    text = (alt or "").strip()
    if not text:
        return "no alt text"
    if re.search(FILE_NAME_ALT, text, flags=re.IGNORECASE):
        return f"alt text {text!r} is a file name or path, not a description"
    return None


def toc_pages() -> list[Path]:
    """Every page listed in `_toc.yml`, as paths to existing source files, in reading order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    names: list[str] = [toc["root"]]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                names.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({key: value for key, value in toc.items() if key != "root"})
    pages = []
    for name in names:
        candidates = [ROOT / f"{name}{suffix}" for suffix in (".md", ".ipynb")]
        found = [path for path in candidates if path.exists()]
        if not found:
            raise FileNotFoundError(
                f"_toc.yml lists {name!r} but neither {name}.md nor {name}.ipynb exists"
            )
        pages.append(found[0])
    return pages


def read_page(page: Path) -> nbformat.NotebookNode:
    """Read a MyST page as a notebook: only `{code-cell}` blocks become code cells.

    Parsing a page takes a tenth of a second or more, and one build reads each page several times
    (the reader notebooks, the references' staleness check), so the parse is kept per file
    version (path, modification time, size); every caller gets its own copy to change."""
    page = Path(page).resolve()
    stat = page.stat()
    return copy.deepcopy(_parsed_page(page, stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=64)
def _parsed_page(page: Path, mtime_ns: int, size: int) -> nbformat.NotebookNode:
    return jupytext.read(page, fmt="md:myst" if page.suffix == ".md" else None)


def code_sources(notebook: nbformat.NotebookNode) -> list[str]:
    """The source of every code cell, in order."""
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def has_code(page: Path) -> bool:
    return bool(code_sources(read_page(page)))


def reference_path(page: Path) -> Path:
    """Where the committed, executed copy of ``page`` lives."""
    return REFERENCES / page.resolve().relative_to(ROOT).with_suffix(".ipynb")


def visible_outputs(page: Path) -> int:
    """Code cells of ``page`` whose reference holds an output the reader sees.

    A cell counts when its reference copy has at least one output and the page's cell is not
    tagged ``remove-output`` or ``remove-cell`` (the page's tags, so a new tag counts at once).
    """
    reference = nbformat.read(reference_path(page), as_version=4)
    page_cells = [cell for cell in read_page(page).cells if cell.cell_type == "code"]
    reference_cells = [cell for cell in reference.cells if cell.cell_type == "code"]
    return sum(
        bool(then.get("outputs"))
        and not HIDDEN_OUTPUT_TAGS & set(now.metadata.get("tags", []))
        for now, then in zip(page_cells, reference_cells)
    )


def record_outputs() -> None:
    """Rewrite ``VISIBLE_OUTPUTS``, the floor ``tests/test_references.py`` holds every page to."""
    counts = {
        page.resolve().relative_to(ROOT).as_posix(): visible_outputs(page)
        for page in toc_pages()
        if has_code(page)
    }
    VISIBLE_OUTPUTS.write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {VISIBLE_OUTPUTS.relative_to(ROOT)}: review the diff before committing")


def execute_page(
    page: Path, environment: Mapping[str, str] | None = None
) -> nbformat.NotebookNode:
    """Execute a page from its own folder, exactly as the book build does.

    ``environment``, when given, is the whole environment of the page's kernel (the default is
    this process's): the test that runs every page off the canonical numeric mode uses it.
    Raises ``nbclient.exceptions.CellExecutionError`` at the first cell that raises.
    """
    notebook = read_page(page)
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_SECONDS,
        kernel_name="python3",
        resources={"metadata": {"path": str(page.parent)}},
        # As the build does: Unix sockets, the kernel stopped at once (tools/kernels.py).
        **kernel_options(),
    )
    client.execute(**({} if environment is None else {"env": dict(environment)}))
    # The explorers' widgets (transformer_lab.explorers): nbclient keeps what they sent, under
    # model ids drawn at random on every run. Neither the build nor nbval reads it (nbval skips
    # the outputs' widget views too), and the reader notebooks draw the widgets by running.
    notebook.metadata.pop("widgets", None)
    for index, cell in enumerate(notebook.cells):
        cell.metadata.pop("execution", None)  # timestamps: they change on every run
        # jupytext draws fresh random ids on every read; numbered ones keep the diff of a
        # refreshed reference down to what changed.
        cell.id = f"cell-{index}"
    return notebook


def refresh(pages: list[Path]) -> None:
    """Re-execute ``pages`` and overwrite their reference notebooks."""
    for page in pages:
        if not has_code(page):
            continue
        start = time.perf_counter()
        executed = execute_page(page)
        target = reference_path(page)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(executed, target)
        print(
            f"refreshed {target.relative_to(ROOT)} in {time.perf_counter() - start:.1f} s"
        )


def execute_for_tests(pages: list[Path], folder: Path | None = None) -> None:
    """Execute ``pages`` and save them where the page tests read the build's executed pages, so
    that ``pytest tests/references/<page>.ipynb`` checks one page without building the book
    (``folder``: ``BOOK_EXECUTED_DIR`` or ``_build/executed``, where the page tests look).

    Copies there from an earlier build with other inputs (package, data, lock, config) are stale
    and removed first; the others are kept."""
    from build_book import (
        EXECUTED_FOLDER,
        EXECUTED_VARIABLE,
        FINGERPRINT_FILE,
        inputs_fingerprint,
    )

    if folder is None:
        folder = Path(
            os.environ.get(EXECUTED_VARIABLE) or ROOT / "_build" / EXECUTED_FOLDER
        )
    fingerprint = inputs_fingerprint(ROOT)
    marker = folder / FINGERPRINT_FILE
    if folder.exists() and (
        not marker.is_file() or marker.read_text(encoding="utf-8").strip() != fingerprint
    ):
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    marker.write_text(fingerprint + "\n", encoding="utf-8")
    for page in pages:
        if not has_code(page):
            continue
        start = time.perf_counter()
        target = folder / page.resolve().relative_to(ROOT).with_suffix(".ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        nbformat.write(execute_page(page), target)
        print(
            f"executed {page.relative_to(ROOT)} in {time.perf_counter() - start:.1f} s: "
            f"`pytest {reference_path(page).relative_to(ROOT)}` compares it with its reference"
        )


def missing_html(site: Path) -> list[str]:
    """The pages of the table of contents (and the site's index) whose HTML is not in ``site``."""
    expected = ["index.html"] + [
        page.relative_to(ROOT).with_suffix(".html").as_posix() for page in toc_pages()
    ]
    return [name for name in expected if not (site / name).is_file()]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {
        "refresh",
        "execute",
        "list",
        "record-outputs",
        "check-site",
    }:
        print(__doc__)
        return 2
    if argv[0] == "check-site":
        site = Path(argv[1] if len(argv) > 1 else "_build/html")
        missing = missing_html(site)
        for name in missing:
            print(
                f"{site / name} is missing: the site would be published without that page"
            )
        return 1 if missing else 0
    if argv[0] == "list":
        for page in toc_pages():
            print(page.relative_to(ROOT))
        return 0
    if argv[0] == "record-outputs":
        record_outputs()
        return 0
    pages = [Path(arg).resolve() for arg in argv[1:]] or toc_pages()
    listed = {page.resolve() for page in toc_pages()}
    for page in pages:
        if page not in listed:
            print(f"{page} is not in _toc.yml; add it there first")
            return 2
    if argv[0] == "execute":
        if not argv[1:]:
            print("name the pages to execute, for example chapters/01-soft-join.md")
            return 2
        execute_for_tests(pages)
        return 0
    refresh(pages)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
