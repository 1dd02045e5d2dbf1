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
PAGE_TESTS = "tests/references/"
# Each of its cases runs one page in a kernel of its own: one work unit per case, not per file.
EVERY_CPU_TESTS = "tests/test_pages_on_every_cpu.py"

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


class BrowserTestsAsOneFile(LoadFileScheduling):
    """``--dist loadfile``, except that every test under tests/browser/ is in one work unit and
    every case of tests/test_pages_on_every_cpu.py is a work unit of its own."""

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.startswith(BROWSER_TESTS):
            return BROWSER_TESTS
        if nodeid.startswith(EVERY_CPU_TESTS):
            return nodeid
        return super()._split_scope(nodeid)
