"""The rules behind tests/conftest.py's session hooks, in a module of their own so that tests can
import them (two conftest.py files, this folder's and tests/browser/'s, share one module name).

Where the numeric mode is not canonical, pages are still compared, without the package's warning;
the run's last line says what to do; and how `pytest -n auto --dist loadfile` splits work.
"""

import re

from nbformat import NotebookNode
from xdist.scheduler import LoadFileScheduling

from transformer_lab.reproducibility import numeric_mode_problem

BROWSER_TESTS = "tests/browser/"
# The browser tests that load their pages themselves (not through the shared ``visit``).
BROWSER_OWN_LOADS = "tests/browser/test_browser_explorers.py"
# The work unit of the browser tests that read every page's report (the book as a whole).
WHOLE_BOOK = "tests/browser/ (the whole book)"
# A browser test's page: the first parameter that names a page of the book (``chapters/x.md``).
PAGE_PARAMETER = re.compile(r"\[([^\]]*?\.md)")
PAGE_TESTS = "tests/references/"
# Each of its cases runs one page in a kernel of its own: one work unit per case, not per file.
EVERY_CPU_TESTS = "tests/test_pages_on_every_cpu.py"
# The files whose tests take longest (CPU seconds measured with the suite under pytest-xdist),
# slowest first: handed out before every other work unit, so that no long file starts last
# while the other worker idles. A file not listed keeps pytest-xdist's order (most tests first).
SLOWEST_FIRST = (
    "tests/browser/test_browser_explorers.py",  # make test-portability's
    "tests/selfcheck/test_isolation.py",
    "tests/test_autograder.py",
    "tests/test_starters.py",
    "tests/selfcheck/test_runner.py",
    "tests/selfcheck/test_worker.py",
    "tests/selfcheck/test_positions.py",
    "tests/test_build_book.py",
    "tests/test_print_book.py",  # make test-portability's
    "tests/selfcheck/test_limits.py",
    "tests/selfcheck/test_replies.py",
    "tests/test_editions.py",
    "tests/selfcheck/test_transport.py",
    "tests/selfcheck/test_grading.py",
)

# What to do when page outputs cannot match the references here: one home, for the run's last line.
WHERE_PAGES_MATCH = (
    "What to do: the page tests compare numbers that depend on the CPU's kernels, so run them "
    "where the canonical mode holds, an x86-64 CPU with AVX2 (the book's CI does); to run every "
    "other test here, leave them out: "
    ".venv/bin/python -m pytest -n auto --dist loadfile --ignore=tests/references"
)


def without_numeric_mode_warning(outputs: list, problem: str | None) -> list:
    """``outputs`` less the package's warning that this CPU cannot reproduce the references
    (``problem``, this machine's; None: nothing to leave out). The warning's lines (Python's
    "file:line: RuntimeWarning: ..." and the source line under it) are cut from stderr, and a
    stderr output left empty is dropped. Everything else is kept."""
    if problem is None:
        return outputs
    warning = re.compile(
        rf"^.*RuntimeWarning: transformer_lab: {re.escape(problem)}\.\n(?:  .*\n)?",
        re.MULTILINE,
    )
    kept = []
    for output in outputs:
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            text = warning.sub("", output["text"])
            if not text:
                continue
            output = NotebookNode({**output, "text": text})
        kept.append(output)
    return kept


def compare_without_the_numeric_mode_warning(compare):
    """nbval's comparison, minus the numeric-mode warning: it is printed only where the canonical
    mode cannot hold, so a page whose every output matches is not reported as differing."""

    def compare_outputs(self, test, ref, skip_compare=None):
        kept = without_numeric_mode_warning(test, numeric_mode_problem())
        return compare(self, kept, ref, skip_compare)

    return compare_outputs


class WorkUnits(LoadFileScheduling):
    """``--dist loadfile``'s work units, one per file, except:

    - the browser tests that load a page through the shared ``visit`` (tests/browser/conftest.py)
      are grouped by that page, one unit per page, so both workers load pages and each page is
      loaded once (a page's report is shared through the run's temporary folder); those that read
      every page are one unit, handed out last, when most pages have been loaded;
    - every case of tests/test_pages_on_every_cpu.py is a work unit of its own.

    The units of ``SLOWEST_FIRST`` are handed out first, then the browser pages, then the rest.
    """

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.startswith(BROWSER_TESTS) and not nodeid.startswith(BROWSER_OWN_LOADS):
            page = PAGE_PARAMETER.search(nodeid)
            return f"{BROWSER_TESTS}{page.group(1)}" if page else WHOLE_BOOK
        if nodeid.startswith(EVERY_CPU_TESTS):
            return nodeid
        return super()._split_scope(nodeid)

    @staticmethod
    def rank(scope: str) -> int:
        """Where a unit goes in the queue: the slowest files first, the whole book last."""
        if scope in SLOWEST_FIRST:
            return SLOWEST_FIRST.index(scope)
        if scope == WHOLE_BOOK:
            return len(SLOWEST_FIRST) + 2
        if scope.startswith(BROWSER_TESTS) and scope != BROWSER_OWN_LOADS:
            return len(SLOWEST_FIRST)
        return len(SLOWEST_FIRST) + 1

    def _assign_work_unit(self, node) -> None:
        """The first time, order the queue by ``rank`` (a stable sort: ties keep their order)."""
        if not getattr(self, "_ranked", False):
            ordered = sorted(self.workqueue.items(), key=lambda unit: self.rank(unit[0]))
            self.workqueue.clear()
            self.workqueue.update(ordered)
            self._ranked = True
        super()._assign_work_unit(node)
