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

Usage: python tools/build_book.py build . -W -n --keep-going --all
"""

import functools
import os
import sys
from collections.abc import Sequence

import jupyter_book.sphinx
import jupyter_cache.executors.utils
import nbclient
import sphinx.builders
from jupyter_book.cli.main import main as jupyter_book_main

JOBS_VARIABLE = "BOOK_JOBS"


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
    NotebookClient options; this adds ``shutdown_kernel="immediate"`` to every call.
    """
    jupyter_cache.executors.utils.executenb = functools.partial(
        nbclient.execute, shutdown_kernel="immediate"
    )


def main() -> None:
    stop_kernels_at_once()
    jobs = book_jobs()
    if jobs > 1:
        jupyter_book.sphinx.build_sphinx = functools.partial(
            jupyter_book.sphinx.build_sphinx, jobs=jobs
        )
        sphinx.builders.make_chunks = one_page_per_chunk
    sys.argv = ["jupyter-book", *sys.argv[1:]]
    jupyter_book_main()


if __name__ == "__main__":
    main()
