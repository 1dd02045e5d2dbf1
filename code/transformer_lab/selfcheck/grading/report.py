"""The report of one file: as text for the student, as JSON for tools, as an autograder's results."""

from __future__ import annotations

import json
import os
import re
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from transformer_lab.selfcheck.core import (
    NOT_ATTEMPTED,
    PASSED,
    STATUSES,
    CheckResult,
)
from transformer_lab.timing import format_wall_time

OUTPUT_LINES = 5  # lines of a check's printed output shown in the text report
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads these as a formula
# Characters that reorder or break the text around them where it is shown (bidi controls, line
# and paragraph separators): written as visible escapes in every report, CSV and JSON.
INVISIBLE = "\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u0085\ufeff"
_ESCAPES = {ord(c): f"\\u{ord(c):04x}" for c in INVISIBLE}
CONTROLS = {c: f"\\x{c:02x}" for c in (*range(32), *range(127, 160))}


def valid_text(text: object) -> str:
    """``text`` as a string that encodes to UTF-8: lone surrogates (a file name in Latin-1, a
    student's ``"\\udcff"``) become U+FFFD, and :data:`INVISIBLE` characters visible escapes."""
    text = text if isinstance(text, str) else str(text)
    try:  # a byte smuggled into a str (U+DC80..U+DCFF) is one U+FFFD, as in the file name
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")
    return data.decode("utf-8", "replace").translate(_ESCAPES)


def printable(text: object, keep: str = "\n\t") -> str:
    """``text`` with control characters (ANSI escapes, carriage returns, ...) written as
    ``\\x1b``-style escapes, so that student output cannot redraw the terminal; ``keep`` lists
    the ones left alone."""
    table = {c: e for c, e in CONTROLS.items() if chr(c) not in keep}
    return valid_text(text).translate(table)


def spreadsheet_cell(text: object) -> str:
    """A CSV cell a spreadsheet shows as text: valid UTF-8, control characters escaped, and a
    leading ``=``, ``+``, ``-`` or ``@`` (a formula) escaped with a quote."""
    cell = printable(text, keep="")
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def valid_data(value: object) -> object:
    """A JSON-ready structure with every string made :func:`valid_text`."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_text(k): valid_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [valid_data(v) for v in value]
    return value


@dataclass
class Report:
    path: str
    results: list[CheckResult] = field(default_factory=list)
    load_error: str | None = None
    seconds: float = 0.0
    load_output: str = ""
    interrupted: bool = False
    isolation: str = ""  # how the worker was confined (isolation.BUBBLEWRAP or PROCESS)

    @property
    def all_passed(self) -> bool:
        """Every check passed (a stretch exercise left alone does not count against it)."""
        return (
            self.load_error is None
            and not self.interrupted
            and all(r.status in (PASSED, NOT_ATTEMPTED) for r in self.results)
        )


def _signatures() -> dict[str, str]:
    from transformer_lab.selfcheck.checks.registry import EVERY_CHECK

    return {check.name: check.signature for check in EVERY_CHECK}


def _printed(text: str, label: str) -> list[str]:
    lines = text.rstrip("\n").splitlines()
    if not lines:
        return []
    shown = [f"      {line[:150]}" for line in lines[:OUTPUT_LINES]]
    if len(lines) > OUTPUT_LINES:
        label += f" (first {OUTPUT_LINES} of {len(lines)} lines)"
    return [f"    {label}:"] + shown


def format_report(report: Report, width: int | None = None) -> str:
    """The text the command prints; with ``width``, long lines wrap under their own indent."""
    text = printable(_report_text(report))
    if width is None:
        return text
    return "\n".join(_wrap(line, width) for line in text.splitlines())


def _wrap(line: str, width: int) -> str:
    """``line`` wrapped to ``width`` columns, continuation lines indented 4 more than the first."""
    indent = line[: len(line) - len(line.lstrip())]
    # A timing ("0.12 s (wall)") stays on one line, where the page tests' sanitizer finds it.
    line = re.sub(r"(\d) s \(wall\)", "\\1\0s\0(wall)", line)
    wrapped = textwrap.wrap(
        line,
        width,
        subsequent_indent=indent + "    ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    return "\n".join(wrapped).replace("\0", " ") or line.replace("\0", " ")


def _report_text(report: Report) -> str:
    """The report, one line per fact (see ``format_report``)."""
    lines = [f"Self-check of {report.path}", ""]
    if report.load_error is not None:
        lines += [
            f"Could not load the file: {report.load_error}",
            "Fix this first; no check ran.",
        ]
    lines += _printed(report.load_output, "Your file printed while loading")
    if report.load_error is not None:
        return "\n".join(lines)
    signature = _signatures()
    for result in report.results:
        lines.append(
            f"[{result.status}] {result.exercise}: {signature.get(result.name, result.name)}"
        )
        if result.status != PASSED:
            likely = "Likely mistake: " if result.finding else ""
            lines += [f"    {line}" for line in (likely + _result_text(result)).split("\n")]
        lines += _printed(result.output, "Your code printed")
    return "\n".join([*lines, "", summary_line(report)])


def summary_line(report: Report) -> str:
    """The last line: how many checks ended how, and the time taken."""
    counted = [r for r in report.results if r.status != NOT_ATTEMPTED]
    counts = {status: sum(r.status == status for r in counted) for status in STATUSES}
    parts = [f"{n} {status.lower()}" for status, n in counts.items() if n]
    checks = f"{len(counted)} check{'s' if len(counted) != 1 else ''}"
    skipped = len(report.results) - len(counted)
    stretch = f", {skipped} stretch exercise{'s' if skipped != 1 else ''} not attempted"
    stretch = stretch if skipped else ""
    summary = f"{', '.join(parts) or 'nothing checked'} (of {checks}){stretch}"
    if report.interrupted:
        summary = "Interrupted: " + summary
    return f"{summary}, in {format_wall_time(report.seconds)}."


def result_record(result: CheckResult) -> dict:
    """One check as a flat dict: check, exercise, status, code, message, evidence, seconds, output."""
    finding = result.finding
    return {
        "check": result.name,
        "exercise": result.exercise,
        "status": result.status,
        "code": result.code,
        "message": finding.mistake if finding else result.summary,
        "expected": finding.expected if finding else None,
        "received": finding.received if finding else None,
        "advice": finding.advice if finding else None,
        "seconds": round(result.seconds, 4),
        "output": result.output,
    }


def report_to_dict(report: Report) -> dict:
    return {
        "file": report.path,
        "passed": report.all_passed,
        "load_error": report.load_error,
        "load_output": report.load_output,
        "interrupted": report.interrupted,
        "isolation": report.isolation,
        "seconds": round(report.seconds, 4),
        "checks": [result_record(r) for r in report.results],
    }


def report_to_json(report: Report) -> str:
    """The machine-readable report (``--json``)."""
    return json.dumps(valid_data(report_to_dict(report)), indent=2, ensure_ascii=False)


def _result_text(result: CheckResult) -> str:
    if result.finding is None:
        return result.summary
    finding = result.finding
    text = f"{finding.mistake}\nexpected: {finding.expected}\nreceived: {finding.received}"
    return text + (f"\nTry: {finding.advice}" if finding.advice else "")


# Two of Gradescope's test visibilities.
VISIBLE, AFTER_DUE_DATE = "visible", "after_due_date"


def _gradescope_tests(
    report: Report, visibility: str, scored: bool, prefix: str = ""
) -> list[dict]:
    """One Gradescope test per check; ``scored`` False: feedback only (``max_score`` 0)."""
    from transformer_lab.selfcheck.checks.registry import BY_NAME

    tests = []
    for result in report.results:
        check = BY_NAME.get(result.name)
        optional = bool(check and check.optional)
        passed = result.status == PASSED
        tests.append(
            {
                "name": f"{prefix}{result.exercise}: "
                f"{_signatures().get(result.name, result.name)}",
                "score": 1 if passed and scored else 0,
                "max_score": 0 if optional or not scored else 1,
                "status": "passed" if passed else "failed",
                "visibility": visibility,
                "output": f"[{result.status}] {_result_text(result)}".strip(),
            }
        )
    return tests


def gradescope_results(
    report: Report, hidden: Report | None = None, extra: dict | None = None
) -> dict:
    """The report as a Gradescope ``results.json``: one test per check, 1 point if it passed.

    Stretch checks are extra credit (``max_score`` 0: a pass adds a point, leaving them costs
    nothing). A file that does not load scores 0 on every check, with the error as its output.
    With the report of the ``hidden`` checks (fresh inputs, the instructor's autograder), the
    points come from those, shown only after the due date (``after_due_date``); the public
    checks stay visible from the first submission, as feedback worth no points. ``extra``
    (the isolation used, the hidden inputs' seed) is kept as ``extra_data``."""
    tests = _gradescope_tests(
        report, VISIBLE, hidden is None, "" if hidden is None else "Public check, "
    )
    if hidden is not None:
        tests += _gradescope_tests(hidden, AFTER_DUE_DATE, True, "Hidden check, ")
    output = (
        summary_line(report)
        if report.load_error is None
        else f"Could not load the file: {report.load_error}"
    )
    if hidden is not None:
        output += (
            "\nThe grade comes from the hidden checks (new inputs on every run); their "
            "results appear after the due date."
        )
    results = {
        "score": sum(t["score"] for t in tests),
        "max_score": sum(t["max_score"] for t in tests),
        "output": output,
        "visibility": VISIBLE,
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": dict(extra or {}),
    }
    return valid_data(results)


def write_atomically(path: Path | str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all: a temporary file, then a rename."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(valid_text(text))
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
