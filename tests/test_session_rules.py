"""tests/session_rules.py: how `make test` hands out work to its pytest-xdist workers."""

from collections import OrderedDict

from book_pages import ROOT
from session_rules import BROWSER_TESTS, SLOWEST_FIRST, WHOLE_BOOK, WorkUnits


def test_every_file_named_slowest_first_is_a_test_file_of_the_suite():
    assert len(set(SLOWEST_FIRST)) == len(SLOWEST_FIRST)
    for name in SLOWEST_FIRST:
        assert (ROOT / name).is_file() and name.startswith("tests/"), name
        assert (ROOT / name).name.startswith("test_"), name


def test_the_slowest_files_go_first_then_the_pages_and_the_whole_book_last():
    scheduler = object.__new__(
        WorkUnits
    )  # the queue and rank read nothing else of their own
    page = f"{BROWSER_TESTS}chapters/01-x.md"
    rest = ["tests/test_style.py", "tests/references/intro.ipynb"]
    scheduler.workqueue = OrderedDict(
        (scope, {}) for scope in [WHOLE_BOOK, *rest, page, *reversed(SLOWEST_FIRST)]
    )
    ranked = sorted(scheduler.workqueue, key=scheduler.rank)
    assert ranked == [*SLOWEST_FIRST, page, *rest, WHOLE_BOOK]
