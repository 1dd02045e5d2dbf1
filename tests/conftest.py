"""Session-wide hooks: which numeric mode ran (header, failing page cells), and what to do where
the references cannot be reproduced; nbval's cell time limit; the work units of -n."""

import os

import pytest

import transformer_lab  # noqa: F401  (pins the canonical numeric mode before any test runs)
from session_rules import (
    PAGE_TESTS,
    WHERE_PAGES_MATCH,
    BrowserTestsAsOneFile,
    compare_without_the_numeric_mode_warning,
)
from transformer_lab.reproducibility import numeric_mode_problem, numeric_mode_summary


def pytest_configure(config):
    """nbval's per-cell limit is the book's (``execute.timeout`` in _config.yml), not its 2000 s;
    where the numeric mode is not canonical (no AVX2, ARM, opted out) the pages still run and are
    compared, without the warning that says why their numbers may differ."""
    grade_at_the_process_level_where_it_is_all_there_is()
    if hasattr(config.option, "nbval_cell_timeout"):
        from book_pages import CELL_TIMEOUT_SECONDS

        config.option.nbval_cell_timeout = CELL_TIMEOUT_SECONDS
    if numeric_mode_problem() is not None:
        from nbval.plugin import IPyNbCell

        IPyNbCell.compare_outputs = compare_without_the_numeric_mode_warning(
            IPyNbCell.compare_outputs
        )


def grade_at_the_process_level_where_it_is_all_there_is() -> None:
    """Where neither bubblewrap nor the unprivileged user works, ``grade`` and ``--hidden``
    refuse to grade unless the process level is chosen explicitly: the tests choose it
    (``SELFCHECK_ISOLATION=process``, inherited by the commands they start), so that they test
    this machine's grader; the refusal itself is tested with the variable removed
    (tests/test_gradescope_rehearsal.py)."""
    from transformer_lab.selfcheck.worker.isolation import PROCESS, isolation

    if isolation().level == PROCESS:
        os.environ["SELFCHECK_ISOLATION"] = PROCESS


def pytest_report_header(config):
    from transformer_lab.selfcheck.worker.isolation import isolation

    return [numeric_mode_summary(), isolation().line]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """On a machine that cannot match the references, say in one line why page cells differ."""
    failed = terminalreporter.stats.get("failed", []) + terminalreporter.stats.get(
        "error", []
    )
    if not any(PAGE_TESTS in report.nodeid for report in failed):
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
