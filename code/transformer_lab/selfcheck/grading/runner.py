"""Checking a student's file: find it, run every selected check in a worker, collect a report."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path

from transformer_lab.selfcheck.checks.registry import HOMEWORK, PAGES, Check
from transformer_lab.selfcheck.core import (
    ENDED,
    FAILED,
    MISSING,
    NOT_ATTEMPTED,
    NOT_DONE,
    NOT_RUN,
    PASSED,
    CheckResult,
    Finding,
)
from transformer_lab.selfcheck.grading.report import Report
from transformer_lab.selfcheck.worker.parent import (
    STOPPING,
    Limits,
    LoadFailed,
    RemoteFunction,
    Worker,
)


def selected_checks(only: Sequence[str] = (), page: str = HOMEWORK) -> list[Check]:
    """The page's checks named in ``only`` (all of them when empty), in the order of the
    exercises."""
    if page not in PAGES:
        raise ValueError(f"unknown exercise page {page!r}; choose from {', '.join(PAGES)}")
    return [check for check in PAGES[page] if not only or check.name in only]


def _result(check: Check, status: str, summary: str, finding=None) -> CheckResult:
    return CheckResult(check.name, check.exercise, status, summary, finding)


def _blocked(check: Check, results: Sequence[CheckResult]) -> CheckResult | None:
    """'not run' when the check this one builds on (``check.requires``) did not pass: a wrong
    table must not be blamed on a forward that only adds it."""
    earlier = next((r for r in results if r.name == check.requires), None)
    if earlier is None or earlier.status == PASSED:
        return None
    uses = f"it uses your `{check.requires}`"
    if earlier.status == NOT_ATTEMPTED:
        return _result(
            check, NOT_ATTEMPTED, f"optional stretch exercise: {uses}, not attempted yet"
        )
    why = f"not checked yet: {uses}, which has not passed ({earlier.status}); fix that first, "
    return _result(check, NOT_RUN, why + "so that this check can judge its own code")


def _absent(check: Check, info: dict | None) -> CheckResult | None:
    """The result for a function that is missing, not callable or imported from the book."""
    if info is None or not info["callable"]:
        what = "no function" if info is None else "a name that is not a function"
        what = f"{what} `{check.name}` in the file"
        if check.optional:
            return _result(check, NOT_ATTEMPTED, f"optional stretch exercise: {what}")
        return _result(check, MISSING, f"{what}: define {check.signature}")
    if info["module"].split(".")[0] == "transformer_lab":
        return _imported(check, info["module"])
    return None


def _imported(check: Check, origin: str) -> CheckResult:
    """The book's own function under the check's name: it fails, named as imported."""
    finding = Finding(
        "imported_answer",
        f"`{check.name}` is the book's own function, imported from {origin}",
        f"your own {check.signature}",
        f"{origin}.{check.name}",
        "write the function yourself; the self-check compares it with the book's",
    )
    return _result(check, FAILED, finding.mistake, finding)


def _settle(check: Check, result: CheckResult) -> CheckResult:
    """A stretch exercise still raising ``NotImplementedError`` is 'not attempted', not 'not done'."""
    if check.optional and result.status == NOT_DONE:
        result.status = NOT_ATTEMPTED
        result.summary = f"optional stretch exercise: {result.summary}"
    return result


def _run_in_worker(path: Path, checks: list[Check], limits: Limits, report: Report) -> None:
    """Run ``checks`` on the file at ``path`` in one worker; fill ``report`` (Ctrl-C stops with
    the report so far, and ends the worker first)."""
    with Worker(path, [c.name for c in checks], limits) as worker:
        report.isolation = worker.isolation.level
        try:
            _load_and_check(worker, checks, limits, report)
        except KeyboardInterrupt:
            report.interrupted = True
    if report.interrupted or STOPPING.is_set():  # Ctrl-C here, or in another thread (grade)
        _interrupted(report, checks)


def _interrupted(report: Report, checks: list[Check]) -> None:
    """Mark ``report`` incomplete: the checks that did not run are 'not run'."""
    report.interrupted = True
    done = {result.name for result in report.results}
    report.results += [
        CheckResult(c.name, c.exercise, NOT_RUN, "interrupted (Ctrl-C)")
        for c in checks
        if c.name not in done
    ]


def _load_and_check(
    worker: Worker, checks: list[Check], limits: Limits, report: Report
) -> None:
    try:
        functions = worker.start()
    except LoadFailed as error:
        return _not_loaded(report, checks, str(error), worker.new_output())
    report.load_output = worker.new_output()
    for check in checks:
        if STOPPING.is_set():
            return
        start = time.perf_counter()
        result = (
            _absent(check, functions.get(check.name))
            or (check.requires and _blocked(check, report.results))
            or _run_remotely(worker, check, limits)
        )
        result.seconds = time.perf_counter() - start
        result.output = worker.new_output()
        report.results.append(result)


def _run_remotely(worker: Worker, check: Check, limits: Limits) -> CheckResult:
    """Run ``check`` on the function in the worker (restarted if the last check ended it)."""
    try:
        worker.begin_check(limits.seconds)
    except LoadFailed as error:
        return _result(check, ENDED, f"the file no longer loads: {error}")
    return _settle(check, check.run(RemoteFunction(worker, check.name, check)))


def _not_loaded(report: Report, checks: list[Check], error: str, output: str) -> None:
    report.load_error, report.load_output = error, output
    report.results = [
        CheckResult(c.name, c.exercise, NOT_RUN, f"the file did not load: {error}")
        for c in checks
    ]


MAX_FILE_BYTES = 5 * 2**20  # a homework file is a few kilobytes


def file_problem(path: Path, follow_links: bool = True) -> str | None:
    """Why ``path`` cannot be checked as a submission (None if it can): it must be a regular
    file of at most :data:`MAX_FILE_BYTES`. Without ``follow_links`` (grading), a symbolic link
    is refused too: it would submit whatever it points to (a classmate's file, an answer key)."""
    try:
        info = os.stat(path, follow_symlinks=follow_links)
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link, not a file (submit the file itself)"
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        return f"is {kind}, not a Python file"
    if info.st_size > MAX_FILE_BYTES:
        return f"is larger than {MAX_FILE_BYTES // 2**20} MB"
    return None


def unusable_report(display: str, checks: Sequence[Check], reason: str) -> Report:
    """The report of a submission that could not be checked at all: every check 'not run'."""
    results = [
        CheckResult(c.name, c.exercise, NOT_RUN, f"not checked: {reason}") for c in checks
    ]
    return Report(display, results, load_error=reason)


def check_file(
    path: str | Path,
    only: Sequence[str] = (),
    display: str | None = None,
    limits: Limits | None = None,
    page: str = HOMEWORK,
    follow_links: bool = True,
) -> Report:
    """Run the selected checks of ``page`` ("homework", "week-20") on the file at ``path`` in
    a worker with ``limits``; ``display`` names the file. Grading (``follow_links=False``)
    refuses a link. A file that ran here is checked afresh: ``week20_runs.check_in_subprocess``."""
    start = time.perf_counter()
    path = Path(path)
    report = Report(display or str(path))
    checks = selected_checks(only, page)
    problem = file_problem(path, follow_links)
    if problem is not None:
        return unusable_report(report.path, checks, f"the submission {problem}")
    _run_in_worker(path, checks, limits or Limits(), report)
    report.seconds = time.perf_counter() - start
    return report
