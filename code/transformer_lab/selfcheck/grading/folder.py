"""Grading a folder: every file in its own worker, ``jobs`` at a time, one CSV row per file and check.

Reports come back in the order of the file names, so the CSV is the same on every run but for
``seconds``. Every results file is written whole or not at all, after its workers ended.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from transformer_lab.selfcheck.checks.registry import HOMEWORK
from transformer_lab.selfcheck.grading.report import (
    Report,
    report_to_dict,
    spreadsheet_cell,
    valid_data,
    write_atomically,
)
from transformer_lab.selfcheck.grading.runner import check_file
from transformer_lab.selfcheck.worker.parent import STOPPING, Limits

CSV_COLUMNS = ("submission", "check", "exercise", "status", "code", "message", "seconds")


class GradingInterrupted(Exception):
    """Ctrl-C while grading: ``reports`` holds the submissions graded before it."""

    def __init__(self, reports: list[Report]):
        super().__init__("interrupted")
        self.reports = reports


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def submissions(folder: Path | str) -> list[Path]:
    """Everything named ``*.py`` directly in ``folder``, sorted by name: files, and also links,
    folders and FIFOs, which get a row saying why they were not checked."""
    return sorted(
        path
        for path in Path(folder).iterdir()
        if path.name.endswith(".py") and path.name != ".py"
    )


def grade_folder(
    folder: Path | str,
    only: Sequence[str] = (),
    limits: Limits | None = None,
    progress: Callable[[Report], None] | None = None,
    jobs: int = 1,
    page: str = HOMEWORK,
) -> list[Report]:
    """Check every submission of ``folder``, each in its own worker with ``limits``. Ctrl-C
    raises :class:`GradingInterrupted` at once with the reports finished so far; no worker
    starts after it, and the running ones end with this process (``python -m`` exits at once)."""
    paths = submissions(folder)
    STOPPING.clear()
    done: dict[Path, Report] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    options = dict(limits=limits, page=page, follow_links=False)  # a link is refused
    futures = {pool.submit(check_file, p, only, p.name, **options): p for p in paths}
    try:
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(finished, key=lambda f: futures[f]):
                done[futures[future]] = future.result()
                if progress is not None:
                    progress(done[futures[future]])
    except KeyboardInterrupt:
        STOPPING.set()
        pool.shutdown(wait=False, cancel_futures=True)
        for future, path in futures.items():  # also those finished as Ctrl-C came
            if future.done() and not future.cancelled() and future.exception() is None:
                if not future.result().interrupted:
                    done[path] = future.result()
        raise GradingInterrupted([done[p] for p in paths if p in done]) from None
    pool.shutdown(wait=True)
    return [done[path] for path in paths]


def csv_rows(reports: Sequence[Report]) -> list[dict]:
    """One row per submission and check (a file that did not load has a 'not run' row per
    check); every cell safe for a spreadsheet (see ``report.spreadsheet_cell``)."""
    rows = []
    for report in reports:
        for result in report_to_dict(report)["checks"]:
            cells = [report.path, *(result[k] for k in ("check", "exercise", "status"))]
            cells += [result["code"] or "", " ".join(str(result["message"]).split())]
            row = dict(zip(CSV_COLUMNS, map(spreadsheet_cell, cells)))
            rows.append(row | {"seconds": f"{float(result['seconds']):.3f}"})
    return rows


def write_csv(reports: Sequence[Report], path: Path | str) -> int:
    """Write the CSV; return the number of rows."""
    rows = csv_rows(reports)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    write_atomically(path, text.getvalue())
    return len(rows)


def write_json(reports: Sequence[Report], path: Path | str) -> None:
    """Every report in full, as a JSON list (one entry per submission)."""
    data = valid_data([report_to_dict(r) for r in reports])
    write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False))
