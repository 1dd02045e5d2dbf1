"""Session-wide hooks: which numeric mode ran (header, failing page cells), page tests that fail
at once where the references cannot be reproduced; the work units of -n."""

import pytest
from xdist.scheduler import LoadFileScheduling

import transformer_lab  # noqa: F401  (pins the canonical numeric mode before any test runs)
from transformer_lab.reproducibility import numeric_mode_problem, numeric_mode_summary

BROWSER_TESTS = "tests/browser/"
PAGE_TESTS = "tests/references/"
# Each of its cases runs one page in a kernel of its own: one work unit per case, not per file.
EVERY_CPU_TESTS = "tests/test_pages_on_every_cpu.py"


def pytest_report_header(config):
    return numeric_mode_summary()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Where the numeric mode is not canonical (no AVX2, ARM, opted out), fail each page at once
    with the reason, before nbval starts the page's kernel: its first cell fails with that line,
    its other cells are skipped.

    Its outputs after training would differ from the references anyway; running the pages would
    only add their time (or, on a CPU that crashes, a wait for every cell's timeout) to the
    verdict. Every other test runs as everywhere.
    """
    if PAGE_TESTS not in item.nodeid or numeric_mode_problem() is None:
        return
    page = item.nodeid.split("::")[0]
    if page in _PAGES_NOT_COMPARED:
        pytest.skip(f"{page} is not compared on this machine (see its first cell)")
    _PAGES_NOT_COMPARED.add(page)
    pytest.fail(f"{page} not compared: {numeric_mode_summary()}", pytrace=False)


_PAGES_NOT_COMPARED: set[str] = set()


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
