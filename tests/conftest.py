"""Session-wide hooks: which numeric mode ran (header, failing page cells), and what to do where
the references cannot be reproduced; nbval's cell time limit; the work units of -n."""

import re

import pytest
from nbformat import NotebookNode
from xdist.scheduler import LoadFileScheduling

import transformer_lab  # noqa: F401  (pins the canonical numeric mode before any test runs)
from transformer_lab.reproducibility import numeric_mode_problem, numeric_mode_summary

BROWSER_TESTS = "tests/browser/"
PAGE_TESTS = "tests/references/"
# Each of its cases runs one page in a kernel of its own: one work unit per case, not per file.
EVERY_CPU_TESTS = "tests/test_pages_on_every_cpu.py"


def pytest_configure(config):
    """nbval's per-cell limit is the book's (``execute.timeout`` in _config.yml), not its 2000 s;
    where the numeric mode is not canonical (no AVX2, ARM, opted out) the pages still run and are
    compared, without the warning that says why their numbers may differ."""
    if hasattr(config.option, "nbval_cell_timeout"):
        from book_pages import CELL_TIMEOUT_SECONDS

        config.option.nbval_cell_timeout = CELL_TIMEOUT_SECONDS
    if numeric_mode_problem() is not None:
        from nbval.plugin import IPyNbCell

        IPyNbCell.compare_outputs = compare_without_the_numeric_mode_warning(
            IPyNbCell.compare_outputs
        )


def pytest_report_header(config):
    return numeric_mode_summary()


# What to do when page outputs cannot match the references here: one home, for the run's last line.
WHERE_PAGES_MATCH = (
    "What to do: the page tests compare numbers that depend on the CPU's kernels, so run them "
    "where the canonical mode holds, an x86-64 CPU with AVX2 (the book's CI does); to run every "
    "other test here, leave them out: "
    ".venv/bin/python -m pytest -n auto --dist loadfile --ignore=tests/references"
)


def without_numeric_mode_warning(outputs: list) -> list:
    """``outputs`` less the package's warning that this CPU cannot reproduce the references: the
    warning's lines (Python's "file:line: RuntimeWarning: ..." and the source line under it) are
    cut from stderr, and a stderr output left empty is dropped. Everything else is kept."""
    problem = numeric_mode_problem()
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
        return compare(self, without_numeric_mode_warning(test), ref, skip_compare)

    return compare_outputs


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """On a machine that cannot match the references, say in one line why page cells differ."""
    failed = terminalreporter.stats.get("failed", []) + terminalreporter.stats.get(
        "error", []
    )
    if not any("tests/references/" in report.nodeid for report in failed):
        return
    if numeric_mode_problem() is not None:
        terminalreporter.write_line(
            f"Why page outputs differ: {numeric_mode_summary()}", red=True, bold=True
        )
        terminalreporter.write_line(WHERE_PAGES_MATCH, red=True)
    else:
        terminalreporter.write_line(
            "Page outputs differ although this machine runs the canonical numeric mode: a page's "
            "code or the package changed without `make refresh`, or the change is a real regression.",
            red=True,
        )


class BrowserTestsAsOneFile(LoadFileScheduling):
    """``--dist loadfile``, except that every test under tests/browser/ is in one work unit and
    every case of tests/test_pages_on_every_cpu.py is a work unit of its own."""

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.startswith(BROWSER_TESTS):
            return BROWSER_TESTS
        if nodeid.startswith(EVERY_CPU_TESTS):
            return nodeid
        return super()._split_scope(nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With `pytest -n auto --dist loadfile` (`make test`), run the browser tests in one worker.

    They share a session-scoped cache that loads each page of the book once (``visit``, in
    tests/browser/conftest.py); split file by file over the workers, every worker that ran a
    browser file would load every page again. Every other file stays one work unit, as loadfile
    makes it: the cells of a reference notebook must run in order, in one kernel. The cases of
    tests/test_pages_on_every_cpu.py are independent (each starts its own kernel), and together
    they are the longest file of the suite, so each case is spread on its own. (Not
    ``--dist loadgroup`` with ``xdist_group`` marks: with pytest 9.2 and pytest-xdist 3.8 the
    groups are silently ignored: https://github.com/pytest-dev/pytest-xdist/issues/1386.)
    """
    if config.getvalue("dist") == "loadfile":
        return BrowserTestsAsOneFile(config, log)
    return None
