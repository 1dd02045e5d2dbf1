"""Grading a folder of submitted files: every file in its own worker, one CSV row per file and check."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from transformer_lab.selfcheck.report import Report, report_to_dict
from transformer_lab.selfcheck.runner import check_file
from transformer_lab.selfcheck.worker import Limits

CSV_COLUMNS = ("submission", "check", "exercise", "status", "code", "message", "seconds")


def submissions(folder: Path | str) -> list[Path]:
    """The ``*.py`` files directly in ``folder``, sorted by name."""
    return sorted(path for path in Path(folder).glob("*.py") if path.is_file())


def grade_folder(
    folder: Path | str,
    only: Sequence[str] = (),
    limits: Limits | None = None,
    progress: Callable[[Report], None] | None = None,
    page: str = "homework",
) -> list[Report]:
    """Check every submission of ``folder``; each runs in its own worker process with ``limits``,
    so one that loops, crashes, exits or floods its output cannot affect the others. ``page`` picks
    the exercise page's checks ("homework" or "week-20")."""
    reports = []
    for path in submissions(folder):
        report = check_file(path, only, display=path.name, limits=limits, page=page)
        reports.append(report)
        if progress is not None:
            progress(report)
    return reports


def csv_rows(reports: Sequence[Report]) -> list[dict]:
    """One row per submission and check (a file that did not load has a 'not run' row per check)."""
    rows = []
    for report in reports:
        for result in report_to_dict(report)["checks"]:
            rows.append(
                {
                    "submission": report.path,
                    "check": result["check"],
                    "exercise": result["exercise"],
                    "status": result["status"],
                    "code": result["code"] or "",
                    "message": " ".join(str(result["message"]).split()),
                    "seconds": f"{result['seconds']:.3f}",
                }
            )
    return rows


def write_csv(reports: Sequence[Report], path: Path | str) -> int:
    """Write the CSV; return the number of rows."""
    rows = csv_rows(reports)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def write_json(reports: Sequence[Report], path: Path | str) -> None:
    """Every report in full, as a JSON list (one entry per submission)."""
    Path(path).write_text(
        json.dumps([report_to_dict(r) for r in reports], indent=2, ensure_ascii=False),
        encoding="utf-8",
    )
