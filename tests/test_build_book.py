"""tools/build_book.py (`make book`): pages in parallel, one per chunk, the slowest handed out first,
each page's kernel stopped as soon as its last cell has replied, kernels on Unix sockets (no TCP
warning in the log), and a failing page named in the build's last lines."""

import os
import subprocess
import sys

import nbclient
import nbformat
from myst_nb.core.execute import direct

from book_pages import ROOT, has_code, toc_pages
from build_book import (
    BOOK_FLAGS,
    SLOWEST_FIRST,
    TIMING_KEY,
    failure_report,
    one_page_per_chunk,
    record_failure,
    stop_kernels_at_once,
)
from kernels import IPCKernelManager, kernel_options

DOCNAMES = [page.relative_to(ROOT).with_suffix("").as_posix() for page in toc_pages()]


def test_every_page_named_slowest_first_is_an_executed_page_of_the_book():
    executed = {
        page.relative_to(ROOT).with_suffix("").as_posix()
        for page in toc_pages()
        if has_code(page)
    }
    assert set(SLOWEST_FIRST) <= executed, set(SLOWEST_FIRST) - executed
    assert len(set(SLOWEST_FIRST)) == len(SLOWEST_FIRST)


def test_chunks_hold_one_page_each_slowest_first_and_every_page_once():
    alphabetical = sorted(DOCNAMES)
    chunks = one_page_per_chunk(alphabetical, nproc=2)
    assert all(len(chunk) == 1 for chunk in chunks)
    order = [chunk[0] for chunk in chunks]
    assert sorted(order) == alphabetical
    assert tuple(order[: len(SLOWEST_FIRST)]) == SLOWEST_FIRST
    rest = [docname for docname in alphabetical if docname not in SLOWEST_FIRST]
    assert order[len(SLOWEST_FIRST) :] == rest  # the others keep Sphinx's order


def test_myst_nb_executes_pages_with_kernels_stopped_at_once():
    stop_kernels_at_once()
    # The function MyST-NB's direct execution calls, and the executor it looks up when it runs:
    # an upgrade that routes execution elsewhere fails here instead of silently slowing the build.
    executor = direct.single_nb_execution.__globals__["executenb"]
    assert executor.func is nbclient.execute
    assert executor.keywords == kernel_options()
    assert executor.keywords["shutdown_kernel"] == "immediate"
    assert executor.keywords["kernel_manager_class"] is IPCKernelManager
    client = nbclient.NotebookClient(nbformat.v4.new_notebook(), **executor.keywords)
    assert client.shutdown_kernel == "immediate"


PAGE_HEADER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def tiny_book(folder, failing_source):
    """A two-page book whose second page's second cell runs ``failing_source``."""
    (folder / "_config.yml").write_text(
        "title: tiny\nonly_build_toc_files: true\n"
        "execute:\n  execute_notebooks: force\n"
        "sphinx:\n  config:\n    nb_execution_raise_on_error: true\n"
    )
    (folder / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n  - file: works\n  - file: breaks\n"
    )
    (folder / "intro.md").write_text("# Intro\n\nA tiny book.\n")
    cell = "```{code-cell} ipython3\n%s\n```\n"
    (folder / "works.md").write_text(PAGE_HEADER + "# Works\n\n" + cell % "print(1 + 1)")
    (folder / "breaks.md").write_text(
        PAGE_HEADER + "# Breaks\n\n" + cell % "x = 1" + "\n" + cell % failing_source
    )


def build_tiny_book(folder, failing_source) -> subprocess.CompletedProcess:
    """Build ``tiny_book`` as `make book` builds the book."""
    tiny_book(folder, failing_source)
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_book.py"), "build", str(folder)]
        + list(BOOK_FLAGS),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_failing_page_is_named_in_the_builds_last_lines(tmp_path):
    message = "no data/ folder holding feedback.json; run `make data`"
    completed = build_tiny_book(tmp_path, f"raise FileNotFoundError({message!r})")
    assert completed.returncode == 1
    last = completed.stderr.strip().splitlines()[-8:]
    assert "  page:  breaks.md" in last, last
    assert any(
        line.startswith("  cell:  code cell 2 of 2, which starts: raise") for line in last
    )
    assert f"  error: FileNotFoundError: {message}" in last, last
    # The kernels run over Unix sockets, so none warns about unencrypted TCP.
    assert "without encryption" not in completed.stdout + completed.stderr


def test_a_build_that_works_writes_no_failure_report(tmp_path):
    completed = build_tiny_book(tmp_path, "print('fine')")
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "did not build" not in completed.stderr
    assert "without encryption" not in completed.stdout + completed.stderr


def test_the_failure_report_names_page_cell_and_message(tmp_path):
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# A page"),
            nbformat.v4.new_code_cell("import os"),
            nbformat.v4.new_code_cell("\nload_feedback()\nmore()"),
        ]
    )
    notebook.cells[2].outputs = [
        nbformat.v4.new_output("error", ename="ValueError", evalue="bad", traceback=[])
    ]
    error = nbclient.exceptions.CellExecutionError(
        "traceback", "ValueError", "data/feedback.json, line 3: rating should be 1-5"
    )
    failure = record_failure(tmp_path / "chapters" / "04-x.md", notebook, error)
    assert failure["cell"] == (2, 2, "load_feedback()")
    report = failure_report([failure], tmp_path).splitlines()
    assert "  page:  chapters/04-x.md" in report
    assert "  cell:  code cell 2 of 2, which starts: load_feedback()" in report
    assert "  error: ValueError: data/feedback.json, line 3: rating should be 1-5" in report
    assert report[-2].startswith("Fix what the error says")


def test_book_is_build_dot_with_the_strict_flags():
    from build_book import book_arguments

    assert book_arguments(["book", "--path-output", "x"]) == [
        "build",
        ".",
        *BOOK_FLAGS,
        "--path-output",
        "x",
    ]
    assert book_arguments(["build", "here"]) == ["build", "here"]


def test_one_cell_time_limit_everywhere():
    """The build reads execute.timeout itself; `make refresh`, the portability tests and the
    Binder rehearsal read it through book_pages (the page tests execute nothing)."""
    import yaml

    from book_pages import CELL_TIMEOUT_SECONDS

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert CELL_TIMEOUT_SECONDS == config["execute"]["timeout"]
    binder_check = (ROOT / "tools" / "binder_check.py").read_text(encoding="utf-8")
    assert "CELL_TIMEOUT_S = CELL_TIMEOUT_SECONDS" in binder_check


def test_a_time_out_names_the_page_the_cell_the_limit_and_what_to_do(tmp_path):
    """A busy machine can push a long cell past the limit: the report says it is a time-out,
    not an error of the page, names the page, the cell and the limit, and what to do."""
    tiny_book(tmp_path, "import time\ntime.sleep(120)")
    config = tmp_path / "_config.yml"
    config.write_text(config.read_text().replace("force\n", "force\n  timeout: 3\n"))
    completed = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_book.py"), "build", str(tmp_path)]
        + list(BOOK_FLAGS),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 1
    assert "The book did not build" in completed.stderr, completed.stderr[-3000:]
    report = completed.stderr[completed.stderr.rindex("The book did not build") :]
    assert report.startswith("The book did not build: a cell timed out."), report
    assert "  page:  breaks.md" in report, report
    assert "  cell:  code cell 2 of 2, which starts: import time" in report, report
    assert "  error: time-out: the cell was still running after 3 seconds" in report, report
    flat = " ".join(report.split())
    assert "time limit of 3 seconds per cell (execute.timeout in _config.yml)" in flat, flat
    assert "run `make book` again; the pages that finished are kept" in flat, flat
    assert "raise execute.timeout in _config.yml" in flat, flat
    assert "Fix what the error says" not in flat


RUNS = "runs.txt"
COUNTED = (
    "from pathlib import Path\n"
    "with Path({runs!r}).open('a') as runs:\n"
    "    runs.write({name!r} + '\\n')"
)


def test_make_book_resumes_keeping_the_pages_that_finished(tmp_path):
    """`make book` (``book``) after a failed build executes only the pages that did not finish;
    ``book --fresh`` (`make test`) executes every page. Each executed page is saved, its glued
    values included, under _build/executed/."""
    tiny_book(tmp_path, "")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n  - file: a_works\n  - file: b_breaks\n"
    )
    cell = "```{code-cell} ipython3\n%s\n```\n"
    (tmp_path / "a_works.md").write_text(
        PAGE_HEADER
        + "# Works\n\n"
        + cell
        % (
            COUNTED.format(runs=RUNS, name="works")
            + "\nfrom myst_nb import glue\nglue('answer', 42, display=False)"
        )
    )
    (tmp_path / "b_breaks.md").write_text(
        PAGE_HEADER
        + "# Breaks\n\n"
        + cell
        % (
            COUNTED.format(runs=RUNS, name="breaks")
            + "\nassert not Path('broken').exists()"
        )
    )
    broken = tmp_path / "broken"
    broken.write_text("")

    def book(*options):
        return subprocess.run(
            [sys.executable, str(ROOT / "tools" / "build_book.py"), "book", *options],
            cwd=tmp_path,
            # One page at a time, in Sphinx's order: a_works.md has finished when b_breaks.md fails.
            env={**os.environ, "BOOK_JOBS": "1"},
            capture_output=True,
            text=True,
            timeout=300,
        )

    def runs():
        return sorted((tmp_path / RUNS).read_text().split())

    first = book()
    assert first.returncode == 1, first.stderr[-2000:]
    assert "  page:  b_breaks.md" in first.stderr, first.stderr[-2000:]
    assert runs() == ["breaks", "works"]
    executed = tmp_path / "_build" / "executed"
    assert not (executed / "b_breaks.ipynb").exists()  # a failed page has no executed copy

    broken.unlink()
    second = book()
    assert second.returncode == 0, second.stderr[-2000:]
    assert runs() == ["breaks", "breaks", "works"]  # a_works.md came from the cache
    saved = nbformat.read(executed / "a_works.ipynb", as_version=4)
    glued = [
        output
        for cell in saved.cells
        for output in cell.get("outputs", [])
        if "scrapbook" in output.get("metadata", {})
    ]
    assert [output["metadata"]["scrapbook"]["name"] for output in glued] == ["answer"]
    # The page executed by this build records its kernel's CPU time (make bench reads it).
    timing = nbformat.read(executed / "b_breaks.ipynb", as_version=4).metadata[TIMING_KEY]
    assert timing["kernel_cpu_s"] > 0

    fresh = book("--fresh")
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert runs() == ["breaks", "breaks", "breaks", "works", "works"]
