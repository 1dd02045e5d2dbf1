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

A cell that runs longer than ``execute.timeout`` (_config.yml) is reported as a time-out: the
page, the cell, the limit, and what to do (run again on a quieter machine, where finished pages are
kept, or raise the limit).

Every executed page is saved as a notebook, outputs and glued values included, under
``_build/executed/`` (``EXECUTED_FOLDER``), the folder emptied when a build starts. MyST-NB's
own copy under ``_build/jupyter_execute/`` has its glued outputs taken out, so the page tests
(``tests/built_pages.py``) compare this one with the references, cell by cell, instead of
executing every page a second time. A page that failed or was not built has no copy there.

``book`` resumes (`make book`): pages are executed through MyST-NB's cache (jupyter-cache), so a
build that stopped (a time-out on a busy laptop, an error, Ctrl-C) keeps every page that finished,
and the next `make book` executes only the rest. The cache lives in
``_build/.jupyter_cache/<key>``: the key (``cache_key``) hashes what a page's outputs depend on
besides its own code (the package, the data, the lock, _config.yml, the numeric-mode variables),
so a change to any of them starts a new cache and every page runs again; the cache itself matches
a page by its code cells. ``book --fresh`` (`make test`, `make bench`) executes
every page, nothing read from a cache: the test's build is the honest one.

Usage: python tools/build_book.py book [--fresh] [--path-output DIR]   # the book, as `make book` builds it
       python tools/build_book.py build PATH [jupyter-book options]

``book`` is ``build .`` with ``BOOK_FLAGS``, the one home of the strict build's flags (`make
book`, `make bench` and the build tests use them).
"""

import copy
import functools
import hashlib
import json
import multiprocessing
import os
import platform
import re
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path

# First: importing kernels blocks the imports no tool needs (see kernels.py).
from kernels import kernel_options

# isort: split
import jupyter_book.sphinx
import jupyter_cache.executors.utils
import nbclient
import nbformat
import sphinx.builders
from jupyter_book.cli.main import main as jupyter_book_main
from myst_nb.core.execute.cache import NotebookClientCache
from myst_nb.core.execute.direct import NotebookClientDirect

JOBS_VARIABLE = "BOOK_JOBS"
# Where the workers that execute pages write what failed (one JSON file per failing page).
FAILURES_VARIABLE = "BOOK_FAILURES_DIR"
# Where the workers save each executed page (``save_executed``), and the book's folder.
EXECUTED_VARIABLE = "BOOK_EXECUTED_DIR"
SOURCE_VARIABLE = "BOOK_SOURCE_DIR"
EXECUTED_FOLDER = "executed"  # under the build folder (_build)
# Beside the executed pages: the inputs_fingerprint they were executed with.
FINGERPRINT_FILE = "FINGERPRINT"
# Under the build folder: `make book`'s cache of executed pages, one folder per cache_key.
CACHE_FOLDER = ".jupyter_cache"
FRESH_OPTION = "--fresh"
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


def unfinished_cell(notebook) -> tuple[int, int, str] | None:
    """(number among the code cells, their count, first source line) of the cell that was running
    when execution stopped: the last code cell with an execution count (nbclient runs the cells
    in order and gives each its count when it starts)."""
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    started = [
        number
        for number, cell in enumerate(code_cells, start=1)
        if cell.get("execution_count") is not None
    ]
    if not started:
        return None
    cell = code_cells[started[-1] - 1]
    first = next((line for line in cell.source.splitlines() if line.strip()), "")
    return started[-1], len(code_cells), first


def record_failure(
    page: Path | str, notebook, error: BaseException | None, timeout: float | None = None
) -> dict:
    """Describe a page whose execution failed; write it where ``main`` will read it, if set.

    ``error`` is nbclient's ``CellExecutionError`` (its ``ename`` and ``evalue`` are the cell's
    exception) or a ``CellTimeoutError`` (then ``timeout``, the cell limit in seconds, is kept).
    """
    timed_out = isinstance(error, nbclient.exceptions.CellTimeoutError)
    cell = unfinished_cell(notebook) if timed_out else failing_cell(notebook)
    name = getattr(error, "ename", None) or type(error).__name__
    message = getattr(error, "evalue", None)
    if message is None:
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    failure = {
        "page": str(page),
        "cell": cell,
        "error": ANSI_ESCAPE.sub("", f"{name}: {message}".strip()),
    }
    if timed_out:
        failure["timeout"] = timeout
    folder = os.environ.get(FAILURES_VARIABLE)
    if folder:
        target = Path(folder) / f"{os.getpid()}-{len(os.listdir(folder))}.json"
        target.write_text(json.dumps(failure), encoding="utf-8")
    return failure


def children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's finished children, the page kernels."""
    try:
        import resource
    except ImportError:  # Windows: no getrusage, no figure
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# The executed copy's notebook metadata key holding how long its page ran (``make bench`` reads it).
TIMING_KEY = "book_execution"


def save_executed(
    page: Path | str, notebook, kernel_cpu_s: float | None = None
) -> Path | None:
    """Save the executed ``notebook`` of ``page`` under ``BOOK_EXECUTED_DIR`` (if set), at the
    page's path relative to the book's folder, with the suffix ``.ipynb``.

    Saved before MyST-NB takes the glued outputs out of the cells, so the copy holds every output
    the reference holds. Widget state and execution timestamps change on every run and no test
    reads them (as ``book_pages.execute_page``), so they are dropped. ``kernel_cpu_s``, the CPU
    time of the page's kernel (0 for a page read from the cache), is kept in the notebook's
    metadata (``TIMING_KEY``).
    """
    folder, source = os.environ.get(EXECUTED_VARIABLE), os.environ.get(SOURCE_VARIABLE)
    if not folder or not source or page is None:
        return None
    relative = Path(page).resolve().relative_to(Path(source).resolve())
    target = Path(folder) / relative.with_suffix(".ipynb")
    executed = copy.deepcopy(notebook)
    executed.metadata.pop("widgets", None)
    for cell in executed.cells:
        cell.metadata.pop("execution", None)
    if kernel_cpu_s is not None:
        executed.metadata[TIMING_KEY] = {"kernel_cpu_s": round(kernel_cpu_s, 2)}
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(executed, target)
    return target


def watch_page_execution() -> None:
    """Make MyST-NB's execution, direct or through the cache, save each executed page
    (``save_executed``) and call ``record_failure`` for a page whose cell raised or timed out."""
    for client_class in (NotebookClientDirect, NotebookClientCache):
        start_client = client_class.start_client
        if getattr(start_client, "watched", False):
            continue

        def start_and_watch(self, start_client=start_client) -> None:
            before = children_cpu_s()
            try:
                start_client(self)
            except Exception as error:
                if self.path is not None:
                    record_failure(
                        self.path,
                        self.notebook,
                        error.__cause__ or error,
                        self.nb_config.execution_timeout,
                    )
                raise
            # The kernel has been stopped and reaped: its CPU time is now this worker's children's.
            save_executed(self.path, self.notebook, children_cpu_s() - before)

        functools.update_wrapper(start_and_watch, start_client)
        start_and_watch.watched = True
        client_class.start_client = start_and_watch


# What to do after a time-out; {limit} is the cell limit in seconds.
TIMEOUT_ADVICE = (
    "A cell ran past the time limit of {limit} seconds per cell (execute.timeout in _config.yml). "
    "This is a time-out, not an error in the page: on a busy machine (another build, a browser, "
    "an update) a long cell can take many times its usual time. What to do: close what keeps the "
    "machine busy and run `make book` again; the pages that finished are kept and only the rest "
    "run. If the cell is slow on this machine even when it is quiet, raise execute.timeout in "
    "_config.yml."
)


def failure_report(failures: Sequence[dict], root: Path) -> str:
    """The lines printed last when pages failed: each page, its failing cell and the message;
    for a time-out, the limit and what to do."""
    timed_out = [failure for failure in failures if "timeout" in failure]
    heading = (
        "The book did not build: a page's code raised an error."
        if len(timed_out) < len(failures)
        else "The book did not build: a cell timed out."
    )
    lines = ["", "=" * 78, heading, ""]
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
        if "timeout" in failure:
            lines.append(
                f"  error: time-out: the cell was still running after {failure['timeout']} "
                "seconds, the limit per cell"
            )
        else:
            lines.append(f"  error: {failure['error']}")
        lines.append("")
    if timed_out:
        limit = timed_out[0]["timeout"]
        lines.extend(textwrap.wrap(TIMEOUT_ADVICE.format(limit=limit), width=78))
    if len(timed_out) < len(failures):
        lines.append(
            "Fix what the error says (the traceback above shows the cell), then run `make book` "
            "again."
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
    """``book [--fresh] [OPTIONS]`` -> ``build . BOOK_FLAGS OPTIONS``; anything else is left as
    it is."""
    if arguments[:1] == ["book"]:
        options = [argument for argument in arguments[1:] if argument != FRESH_OPTION]
        return ["build", ".", *BOOK_FLAGS, *options]
    return list(arguments)


def resumes(arguments: Sequence[str]) -> bool:
    """Whether this build reads finished pages from the cache: ``book`` without ``--fresh``."""
    return arguments[:1] == ["book"] and FRESH_OPTION not in arguments


def build_folder(arguments: Sequence[str]) -> Path:
    """The build folder Jupyter Book writes to: ``--path-output``'s, or the book's, ``_build``."""
    arguments = list(arguments)
    for index, argument in enumerate(arguments):
        if argument.startswith("--path-output="):
            return Path(argument.split("=", 1)[1]) / "_build"
        if argument == "--path-output" and index + 1 < len(arguments):
            return Path(arguments[index + 1]) / "_build"
    return source_folder(arguments) / "_build"


# What a page's outputs depend on besides its own code cells, relative to the book's folder.
PAGE_INPUTS = ("code", "data", "requirements.txt", "_config.yml")


def inputs_fingerprint(root: Path) -> str:
    """A hash of every file in ``PAGE_INPUTS`` (names and contents; caches and the package's
    egg-info left out): what the executed pages depend on besides their own code."""
    digest = hashlib.sha256()
    for name in PAGE_INPUTS:
        path = root / name
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        for file in files:
            parts = file.relative_to(root).parts
            if not file.is_file() or any(
                part == "__pycache__" or part.endswith(".egg-info") for part in parts
            ):
                continue
            digest.update("/".join(parts).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_key(root: Path) -> str:
    """``inputs_fingerprint``, the machine's architecture, Python's version and the numeric-mode
    variables (``TRANSFORMER_LAB_*``, ``ATEN_CPU_CAPABILITY``): a cached page is reused only
    while all of them are unchanged."""
    variables = sorted(
        (name, value)
        for name, value in os.environ.items()
        if name.startswith("TRANSFORMER_LAB_") or name == "ATEN_CPU_CAPABILITY"
    )
    state = repr((inputs_fingerprint(root), platform.machine(), sys.version, variables))
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def cache_folder(build: Path, root: Path) -> Path:
    """This fingerprint's jupyter-cache folder, created; the caches of other fingerprints (stale:
    something a page depends on has changed since) are removed."""
    from jupyter_cache import get_cache

    caches = build / CACHE_FOLDER
    folder = caches / cache_key(root)
    if caches.is_dir():
        for other in caches.iterdir():
            if other != folder:
                shutil.rmtree(other, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    # Created here, once, so that the parallel workers do not race to create its database.
    get_cache(str(folder)).list_cache_records()
    return folder


def execute_through_cache(folder: Path) -> None:
    """Make the build execute pages through MyST-NB's cache in ``folder``."""
    build = jupyter_book.sphinx.build_sphinx
    overrides = {"nb_execution_mode": "cache", "nb_execution_cache_path": str(folder)}

    @functools.wraps(build)
    def build_with_cache(*args, confoverrides=None, **kwargs):
        return build(*args, confoverrides={**(confoverrides or {}), **overrides}, **kwargs)

    jupyter_book.sphinx.build_sphinx = build_with_cache


def source_folder(arguments: Sequence[str]) -> Path:
    """The book's folder in ``build PATH ...`` (the working directory if not given)."""
    positional = [argument for argument in arguments[1:] if not argument.startswith("-")]
    return Path(positional[0]) if positional else Path.cwd()


def main() -> None:
    stop_kernels_at_once()
    watch_page_execution()
    jobs = book_jobs()
    if jobs > 1:
        jupyter_book.sphinx.build_sphinx = functools.partial(
            jupyter_book.sphinx.build_sphinx, jobs=jobs
        )
        sphinx.builders.make_chunks = one_page_per_chunk
    arguments = book_arguments(sys.argv[1:])
    root, build = source_folder(arguments), build_folder(arguments)
    if resumes(sys.argv[1:]):
        execute_through_cache(cache_folder(build, root))
    # Emptied first: a page this build does not execute (it failed, or the build stopped
    # before it) has no executed copy, so its page tests fail instead of passing on an old one.
    executed = build / EXECUTED_FOLDER
    shutil.rmtree(executed, ignore_errors=True)
    executed.mkdir(parents=True)
    (executed / FINGERPRINT_FILE).write_text(
        inputs_fingerprint(root) + "\n", encoding="utf-8"
    )
    os.environ[EXECUTED_VARIABLE] = str(executed.resolve())
    os.environ[SOURCE_VARIABLE] = str(root.resolve())
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
