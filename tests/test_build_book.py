"""tools/build_book.py (`make book`): pages in parallel, one per chunk, the slowest handed out first,
each page's kernel stopped as soon as its last cell has replied."""

import nbclient
import nbformat
from myst_nb.core.execute import direct

from book_pages import ROOT, has_code, toc_pages
from build_book import SLOWEST_FIRST, one_page_per_chunk, stop_kernels_at_once

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
    assert executor.keywords == {"shutdown_kernel": "immediate"}
    client = nbclient.NotebookClient(nbformat.v4.new_notebook(), **executor.keywords)
    assert client.shutdown_kernel == "immediate"
