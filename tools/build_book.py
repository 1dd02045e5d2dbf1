"""Build the book like `jupyter-book build`, with pages executed in parallel on every core.

Jupyter Book 1's build function takes a number of parallel jobs, but its command line offers no
option for it, so this wrapper passes one (``BOOK_JOBS``, default: the number of cores) and then
runs the ordinary command line with the arguments it was given. MyST-NB executes each page while
Sphinx reads it, and Sphinx's parallel reading forks one worker per job.

Sphinx groups the pages into one chunk per worker in alphabetical order, which would put the
slowest chapters into one worker; with one page per chunk a worker that finishes early takes the
next page, and the slowest pages (``SLOWEST_FIRST``, measured by ``make bench``) are handed out
first, so that no long page starts last while the other core idles. Every page still runs in its
own kernel, with the package's canonical numeric mode; the order changes no output.

When a page's last cell has replied, its kernel is stopped at once (``shutdown_kernel="immediate"``,
as nbval does) instead of being asked to exit: a kernel that imported torch spends about 0.5 s
tearing its interpreter down, which added that much to every page and nothing to its outputs.

Kernels listen on Unix sockets rather than TCP (``kernels.kernel_options``), so none logs a
warning about unencrypted TCP into the build log.

When a page's cell raises, Sphinx prints some 70 lines of its own traceback and Jupyter Book ends
with "Look above for the cause". So the build records each failing page, cell and exception
(``record_failure``, called in the worker that executed the page) and prints them last
(``failure_report``): the page, the cell's number and first line, and the exception's own
message, such as the data loader's "run `make data`".

Usage: python tools/build_book.py book [--path-output DIR]   # the book, as `make book` builds it
       python tools/build_book.py build PATH [jupyter-book options]

``book`` is ``build .`` with ``BOOK_FLAGS``, the one home of the strict build's flags (`make
book`, `make bench` and the build tests use them).
"""

import functools
import json
import multiprocessing
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import jupyter_book.sphinx
import jupyter_cache.executors.utils
import nbclient
import sphinx.builders
from jupyter_book.cli.main import main as jupyter_book_main
from myst_nb.core.execute.direct import NotebookClientDirect

from kernels import kernel_options

JOBS_VARIABLE = "BOOK_JOBS"
# Where the workers that execute pages write what failed (one JSON file per failing page).
FAILURES_VARIABLE = "BOOK_FAILURES_DIR"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def book_jobs() -> int:
    """How many pages run at once: ``BOOK_JOBS`` if set, else the number of cores."""
    value = os.environ.get(JOBS_VARIABLE, "")
    if value:
        if not value.isdigit() or int(value) < 1:
            raise SystemExit(
                f"{JOBS_VARIABLE} must be a positive whole number, got {value!r}"
            )
        return int(value)
    return max(
        1,
        len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count() or 1,
    )


# The pages that take longest to execute, slowest first (``make bench`` lists every page's time).
# Pages not listed follow in Sphinx's order. A stale entry only costs wall time, never output.
SLOWEST_FIRST = (
    "chapters/06-choosing-an-architecture",
    "chapters/04-position-embeddings",
    "chapters/03-set-classifier",
    "chapters/05-tokenizers",
    "chapters/02-encoder-layer",
)


def one_page_per_chunk(
    arguments: Sequence[str], nproc: int, maxbatch: int = 10
) -> list[list[str]]:
    """Sphinx's ``make_chunks`` with chunks of one page, slowest pages first, so that the free
    worker takes the next page and the long ones do not start last."""
    rank = {docname: place for place, docname in enumerate(SLOWEST_FIRST)}
    ordered = sorted(arguments, key=lambda docname: rank.get(docname, len(rank)))
    return [[docname] for docname in ordered]


def stop_kernels_at_once() -> None:
    """Make MyST-NB stop each page's kernel at once when its last cell has replied.

    MyST-NB executes through jupyter-cache's ``executenb`` (nbclient's ``execute``) and passes no
    NotebookClient options; this adds ``shutdown_kernel="immediate"`` (and the IPC kernel
    manager, ``kernel_options``) to every call.
    """
    jupyter_cache.executors.utils.executenb = functools.partial(
        nbclient.execute, **kernel_options()
    )


def failing_cell(notebook) -> tuple[int, int, str] | None:
    """(number among the code cells, 1-based, their count, first source line) of the cell whose
    output is an error, or ``None``."""
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code_cells, start=1):
        if any(output.get("output_type") == "error" for output in cell.get("outputs", [])):
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            return number, len(code_cells), first
    return None


def record_failure(page: Path | str, notebook, error: BaseException | None) -> dict:
    """Describe a page whose execution failed; write it where ``main`` will read it, if set.

    ``error`` is nbclient's ``CellExecutionError`` (its ``ename`` and ``evalue`` are the cell's
    exception) or a ``CellTimeoutError``.
    """
    cell = failing_cell(notebook)
    name = getattr(error, "ename", None) or type(error).__name__
    message = getattr(error, "evalue", None)
    if message is None:
        message = str(error).strip().splitlines()[-1] if str(error).strip() else ""
    failure = {
        "page": str(page),
        "cell": cell,
        "error": ANSI_ESCAPE.sub("", f"{name}: {message}".strip()),
    }
    folder = os.environ.get(FAILURES_VARIABLE)
    if folder:
        target = Path(folder) / f"{os.getpid()}-{len(os.listdir(folder))}.json"
        target.write_text(json.dumps(failure), encoding="utf-8")
    return failure


def report_failing_pages() -> None:
    """Make MyST-NB's direct execution call ``record_failure`` for a page whose cell raised."""
    start_client = NotebookClientDirect.start_client
    if getattr(start_client, "reports_failures", False):
        return

    @functools.wraps(start_client)
    def start_and_report(self) -> None:
        try:
            start_client(self)
        except Exception as error:
            if self.path is not None:
                record_failure(self.path, self.notebook, error.__cause__ or error)
            raise

    start_and_report.reports_failures = True
    NotebookClientDirect.start_client = start_and_report


def failure_report(failures: Sequence[dict], root: Path) -> str:
    """The lines printed last when pages failed: each page, its failing cell and the message."""
    lines = ["", "=" * 78, "The book did not build: a page's code raised an error.", ""]
    for failure in failures:
        page = Path(failure["page"])
        try:
            page = page.resolve().relative_to(root.resolve())
        except ValueError:
            pass
        lines.append(f"  page:  {page}")
        if failure["cell"]:
            number, total, first = failure["cell"]
            lines.append(f"  cell:  code cell {number} of {total}, which starts: {first}")
        lines.append(f"  error: {failure['error']}")
        lines.append("")
    lines.append(
        "Fix what the error says (the traceback above shows the cell), then run `make book` again."
    )
    lines.append("=" * 78)
    return "\n".join(lines)


def read_failures(folder: Path) -> list[dict]:
    """The failures the workers recorded in ``folder``, in the order they happened."""
    files = sorted(folder.glob("*.json"), key=lambda path: path.stat().st_mtime_ns)
    return [json.loads(path.read_text(encoding="utf-8")) for path in files]


# -W: warnings are errors; -n: nitpicky cross-references; --keep-going: report every warning
# before failing; --all: rebuild (and so re-execute) every page.
BOOK_FLAGS = ("-W", "-n", "--keep-going", "--all")


def book_arguments(arguments: Sequence[str]) -> list[str]:
    """``book [OPTIONS]`` -> ``build . BOOK_FLAGS OPTIONS``; anything else is left as it is."""
    if arguments[:1] == ["book"]:
        return ["build", ".", *BOOK_FLAGS, *arguments[1:]]
    return list(arguments)


def source_folder(arguments: Sequence[str]) -> Path:
    """The book's folder in ``build PATH ...`` (the working directory if not given)."""
    positional = [argument for argument in arguments[1:] if not argument.startswith("-")]
    return Path(positional[0]) if positional else Path.cwd()


def main() -> None:
    stop_kernels_at_once()
    report_failing_pages()
    jobs = book_jobs()
    if jobs > 1:
        jupyter_book.sphinx.build_sphinx = functools.partial(
            jupyter_book.sphinx.build_sphinx, jobs=jobs
        )
        sphinx.builders.make_chunks = one_page_per_chunk
    arguments = book_arguments(sys.argv[1:])
    sys.argv = ["jupyter-book", *arguments]
    with tempfile.TemporaryDirectory(prefix="book-failures-") as folder:
        os.environ[FAILURES_VARIABLE] = folder
        try:
            jupyter_book_main()
        except BaseException:
            failures = read_failures(Path(folder))
            if not failures:
                raise
            # The build is over: stop the workers still executing other pages, so that their
            # log lines do not come after the report.
            for worker in multiprocessing.active_children():
                worker.terminate()
                worker.join()
            sys.stdout.flush()
            print(failure_report(failures, source_folder(arguments)), file=sys.stderr)
            raise SystemExit(1) from None


if __name__ == "__main__":
    main()
