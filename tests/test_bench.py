"""tools/bench.py (`make bench`): the report names the machine and every budget that failed."""

from datetime import UTC, datetime

from bench import (
    CHECKS_NOT_PASSED,
    PAGE_BUDGET_S,
    STARTER_BUDGET_S,
    STARTER_CRASHED,
    TEST_BUDGET_S,
    TOTAL_BUDGET_S,
    report,
    starter_failed,
)
from book_pages import ROOT, has_code, toc_pages
from machine import cpu_info

PAGES = [page.relative_to(ROOT).as_posix() for page in toc_pages() if has_code(page)]
STARTED = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
LOAD = (0.1, 0.2, 0.3)


def fake_report(
    page_seconds: float,
    build_seconds: float,
    starter_seconds: float,
    tests: tuple[int, float, float, str] | None = None,
) -> str:
    executed = dict.fromkeys(PAGES, page_seconds)
    cpu = dict.fromkeys(PAGES, page_seconds - 0.5)
    starters = {
        "exercises/week-20/starter.py": (0, starter_seconds, starter_seconds),
        "exercises/homework/starter.py": (0, 1.0, 0.9),
    }
    return report(
        STARTED,
        LOAD,
        0,
        build_seconds,
        executed,
        cpu,
        2**30,
        2**19,
        starters,
        "AVX2",
        tests,
        None,
        build_seconds * 1.5,
    )


def test_a_run_within_every_budget_says_so():
    text = fake_report(PAGE_BUDGET_S - 1, TOTAL_BUDGET_S - 1, STARTER_BUDGET_S - 1)
    assert "**Every budget is met.**" in text and "**over" not in text
    assert (
        f"| `{PAGES[0]}` | {PAGE_BUDGET_S - 1:.1f} | {PAGE_BUDGET_S - 1.5:.1f} "
        f"| ok (≤ {PAGE_BUDGET_S:.0f} s) |" in text
    )
    # The whole build's CPU (Sphinx, workers and kernels) beside its wall time.
    assert f"| **whole clean build** | **{TOTAL_BUDGET_S - 1:.1f}** | " in text
    assert f"{(TOTAL_BUDGET_S - 1) * 1.5:.1f} | ok" in text
    assert "PyTorch CPU kernels AVX2" in text and cpu_info()["cores"] in text


def test_every_overrun_is_marked_and_named_at_the_end():
    text = fake_report(PAGE_BUDGET_S + 1, TOTAL_BUDGET_S + 1, STARTER_BUDGET_S + 1)
    verdict = text.split("**Over budget or failed:** ", 1)[1]
    for page in PAGES:
        assert f"{page}: {PAGE_BUDGET_S + 1:.1f} s > {PAGE_BUDGET_S:.0f} s" in verdict
    assert (
        f"whole clean build: {TOTAL_BUDGET_S + 1:.1f} s > {TOTAL_BUDGET_S:.0f} s" in verdict
    )
    assert "python exercises/week-20/starter.py: 16.0 s > 15 s" in verdict
    assert "exercises/homework/starter.py" not in verdict
    assert text.count("**over") == len(PAGES) + 2


def test_the_make_test_budget_is_the_build_plus_the_test_suite():
    within = fake_report(
        1.0, 30.0, 1.0, (0, TEST_BUDGET_S - 31.0, 150.0, "900 passed in 300.0s")
    )
    assert "**Every budget is met.**" in within
    assert f"| {TEST_BUDGET_S - 1.0:.1f} | {45.0 + 150.0:.1f} | ok" in within
    assert (
        f"| test suite alone (900 passed in 300.0s) | {TEST_BUDGET_S - 31.0:.1f} | 150.0 | |"
        in within
    )
    over = fake_report(1.0, 30.0, 1.0, (0, TEST_BUDGET_S, 100.0, "900 passed"))
    assert (
        f"make test (build + tests): {TEST_BUDGET_S + 30.0:.1f} s > {TEST_BUDGET_S:.0f} s"
        in over
    )
    failed = fake_report(1.0, 30.0, 1.0, (1, 100.0, 90.0, "2 failed, 898 passed"))
    assert "The test suite failed: 2 failed, 898 passed." in failed
    assert "**Every budget is met.**" not in failed
    assert (
        "**Over budget or failed:** the test suite failed (2 failed, 898 passed)." in failed
    )


def test_an_untouched_starter_exits_1_and_only_a_crash_fails():
    def starter_line(status: int) -> tuple[str, str]:
        starters = {"exercises/week-20/starter.py": (status, 5.0, 4.0)}
        executed = dict.fromkeys(PAGES, 1.0)
        text = report(
            STARTED, LOAD, 0, 30.0, executed, {}, 2**30, 2**19, starters, "AVX2", None
        )
        line = next(row for row in text.splitlines() if "week-20/starter.py" in row)
        return line, text

    line, text = starter_line(CHECKS_NOT_PASSED)
    assert "ok (≤ 15 s) (exit 1: its checks are not passed yet" in line
    assert "**Every budget is met.**" in text
    line, text = starter_line(STARTER_CRASHED)
    assert "**failed (exit status -1)**" in line
    assert "python exercises/week-20/starter.py: exit status -1" in text


def test_only_a_crashed_or_failed_starter_fails_make_bench():
    def run(status: int) -> dict[str, tuple[int, float, float]]:
        return {"exercises/week-20/starter.py": (status, 5.0, 4.0)}

    assert not starter_failed(run(0)) and not starter_failed(run(CHECKS_NOT_PASSED))
    assert starter_failed(run(STARTER_CRASHED)) and starter_failed(run(2))
