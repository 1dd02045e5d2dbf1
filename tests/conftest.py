"""Session-wide hooks: say in the header (and after failing page cells) which numeric mode ran."""


def _numeric_mode_line() -> str:
    import transformer_lab  # noqa: F401  (pins the canonical numeric mode)
    from transformer_lab.reproducibility import numeric_mode_summary

    return numeric_mode_summary()


def pytest_report_header(config):
    return _numeric_mode_line()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """On a machine that cannot match the references, say in one line why page cells differ."""
    failed = terminalreporter.stats.get("failed", [])
    if not any("tests/references/" in report.nodeid for report in failed):
        return
    line = _numeric_mode_line()
    if "NOT canonical" in line:  # see reproducibility.numeric_mode_summary
        terminalreporter.write_line(f"Why page outputs differ: {line}", red=True, bold=True)
    else:
        terminalreporter.write_line(
            "Page outputs differ although this machine runs the canonical numeric mode: a page's code or "
            "the package changed without `make refresh`, or the change is a real regression.",
            red=True,
        )
