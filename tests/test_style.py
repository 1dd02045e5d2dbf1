"""The code follows one style: `ruff check` (a small rule set) and `ruff format --check` are clean.

The rules and the line length are in pyproject.toml (`[tool.ruff]`). To fix what this test
reports, run from the repository root:

    .venv/bin/ruff format code tests tools exercises
    .venv/bin/ruff check --fix code tests tools exercises
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Everything written in Python: the package, the tests, the tools and the exercise starters.
PATHS = ["code", "tests", "tools", "exercises"]


def ruff() -> str:
    """The ruff installed next to this Python (the venv's), else the one on the PATH."""
    beside = Path(sys.executable).with_name("ruff")
    found = str(beside) if beside.exists() else shutil.which("ruff")
    assert found, (
        "ruff is not installed: run `make setup` (it is pinned in requirements.txt)"
    )
    return found


@pytest.mark.parametrize(
    "command",
    [["check", "--no-fix", "--output-format", "concise"], ["format", "--check"]],
    ids=["check", "format"],
)
def test_ruff_is_clean(command):
    completed = subprocess.run(
        [ruff(), *command, *PATHS], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, (
        f"`ruff {' '.join(command)}` found problems (fix them with `ruff format` and "
        f"`ruff check --fix`, see this test's docstring):\n{completed.stdout}{completed.stderr}"
    )
