"""Session-wide hooks: say in the header (and after failing page cells) which numeric mode ran."""

import transformer_lab  # noqa: F401  (pins the canonical numeric mode before any test runs)
from transformer_lab.reproducibility import numeric_mode_problem, numeric_mode_summary


def pytest_report_header(config):
    return numeric_mode_summary()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """On a machine that cannot match the references, say in one line why page cells differ."""
    failed = terminalreporter.stats.get("failed", [])
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
