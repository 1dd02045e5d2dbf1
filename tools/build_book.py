"""Build the book like `jupyter-book build`, with pages executed in parallel on every core.

Jupyter Book 1's build function takes a number of parallel jobs, but its command line offers no
option for it, so this wrapper passes one (``BOOK_JOBS``, default: the number of cores) and then
runs the ordinary command line with the arguments it was given. MyST-NB executes each page while
Sphinx reads it, and Sphinx's parallel reading forks one worker per job.

Sphinx groups the pages into one chunk per worker in alphabetical order, which would put the
slowest chapters into one worker; with one page per chunk a worker that finishes early takes the
next page. Every page still runs in its own kernel, with the package's canonical numeric mode.

Usage: python tools/build_book.py build . -W -n --keep-going --all
"""

import functools
import os
import sys
from collections.abc import Sequence

import jupyter_book.sphinx
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


def one_page_per_chunk(
    arguments: Sequence[str], nproc: int, maxbatch: int = 10
) -> list[list[str]]:
    """Sphinx's ``make_chunks`` with chunks of one page, so the free worker takes the next page."""
    return [[argument] for argument in arguments]


def main() -> None:
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
