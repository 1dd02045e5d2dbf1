"""Session-wide hooks: which numeric mode ran (header, failing page cells), and what to do where
the references cannot be reproduced; the page tests (the build's executed pages against the
references, tests/built_pages.py); the portability tests, left to `make test-portability`;
the work units of -n."""

import os

import pytest

import transformer_lab  # noqa: F401  (pins the canonical numeric mode before any test runs)
from session_rules import (
    PAGE_TESTS,
    WHERE_PAGES_MATCH,
    WorkUnits,
    compare_without_the_numeric_mode_warning,
)
from transformer_lab.reproducibility import numeric_mode_problem, numeric_mode_summary

# The tests of other places the book must work: pages or the package off the canonical numeric
# mode (every CPU), the built HTML in chromium (tests/browser/, the print edition), the student
# edition built in its own clone, and the rehearsals of Gradescope and of CI's publication of the
# student edition. Slow, so `make test` leaves them out and `make test-portability` (CI's job of
# its own) runs them alone.
PORTABILITY = "portability"
PORTABILITY_OPTION = "--portability"
# The tests marked `browser` (chromium) are portability tests too.
PORTABILITY_MARKS = (PORTABILITY, "browser")


def is_portability(item) -> bool:
    return any(item.get_closest_marker(mark) for mark in PORTABILITY_MARKS)


def pytest_addoption(parser):
    parser.addoption(
        PORTABILITY_OPTION,
        action="store_true",
        help="run only the portability tests (marked `portability`), which are otherwise left out",
    )


def pytest_collect_file(file_path, parent):
    """Each reference notebook under tests/references/ is a page test: its cells are compared
    with the build's executed page (tests/built_pages.py), under nbval's strict rules."""
    from built_pages import collect_page_test

    return collect_page_test(file_path, parent)


def pytest_collection_modifyitems(config, items):
    """Without ``--portability`` the portability tests (marked `portability` or `browser`) are
    left out (deselected: pytest's last line counts them); with it, only they run."""
    wanted = config.getoption(PORTABILITY_OPTION)
    kept, left_out = [], []
    for item in items:
        (kept if is_portability(item) == wanted else left_out).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


def pytest_configure(config):
    """Where the numeric mode is not canonical (no AVX2, ARM, opted out) the pages are still
    compared, without the warning that says why their numbers may differ."""
    grade_at_the_process_level_where_it_is_all_there_is()
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
    """Say which tests were left to `make test-portability`; on a machine that cannot match the
    references, say in one line why page cells differ."""
    if not config.getoption(PORTABILITY_OPTION):
        left = [
            item
            for item in terminalreporter.stats.get("deselected", [])
            if is_portability(item)
        ]
        if left:
            terminalreporter.write_line(
                f"{len(left)} portability tests (pages and the package off the canonical "
                "numeric mode, the HTML in chromium, rehearsals of other places the book runs) "
                "were left out: `make test-portability` runs them."
            )
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
    """With `pytest -n auto --dist loadfile` (`make test`), hand out work as ``WorkUnits``
    (tests/session_rules.py) does: one unit per file, except the browser tests, one unit per
    page (the page's report is shared by the workers: each page is loaded once per run), and the
    cases of tests/test_pages_on_every_cpu.py, each its own (they start their own kernels); the
    slowest files first, so that neither worker idles at the end. (Not ``--dist loadgroup`` with
    ``xdist_group`` marks: with pytest 9.2 and pytest-xdist 3.8 the groups are silently ignored:
    https://github.com/pytest-dev/pytest-xdist/issues/1386.)
    """
    if config.getvalue("dist") == "loadfile":
        return WorkUnits(config, log)
    return None
