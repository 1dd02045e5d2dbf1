"""tools/check_python.py (`make setup`'s first step): Python 3.11 is named, and a .venv made with
another Python is removed so that the set-up rebuilds it."""

import subprocess
import sys
from pathlib import Path

from check_python import REQUIRED, check

TOOL = Path(__file__).resolve().parents[1] / "tools" / "check_python.py"


def fake_venv(folder: Path, version: str) -> Path:
    """A .venv whose bin/python answers like a Python of ``version`` ("3.10")."""
    python = folder / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\necho {version.replace('.', ' ')}\n")
    python.chmod(0o755)
    return folder / ".venv"


def test_a_venv_on_another_python_is_removed_and_named(tmp_path):
    venv = fake_venv(tmp_path, "3.10")
    message = check(venv, running=REQUIRED)
    assert message == (
        f"{venv} held Python 3.10, not 3.11: removed it, the set-up now rebuilds it with "
        "Python 3.11"
    )
    assert not venv.exists()


def test_a_venv_on_python_3_11_and_a_fresh_clone_pass(tmp_path):
    venv = fake_venv(tmp_path, "3.11")
    assert check(venv, running=REQUIRED) is None and venv.exists()
    assert check(tmp_path / "absent", running=REQUIRED) is None


def test_a_venv_whose_python_does_not_run_is_rebuilt(tmp_path):
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("not a program")
    assert "held no working Python" in check(venv, running=REQUIRED)
    assert not venv.exists()


def test_the_wrong_python_to_build_with_is_named_and_fails(tmp_path):
    venv = fake_venv(tmp_path, "3.11")
    message = check(venv, running=(3, 10))
    assert message.startswith(
        "Python 3.11 is required, this is 3.10 (set PYTHON=python3.11"
    )
    assert venv.exists()  # nothing is removed when the set-up cannot go on anyway


def test_the_makefile_runs_it_before_making_the_venv(tmp_path):
    venv = fake_venv(tmp_path, "3.9")
    completed = subprocess.run(
        [sys.executable, str(TOOL), str(venv)], capture_output=True, text=True
    )
    assert completed.returncode == 0 and "held Python 3.9" in completed.stderr
    makefile = (TOOL.parents[1] / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("$(STAMP): requirements.txt pyproject.toml\n", 1)[1]
    assert recipe.splitlines()[0].strip() == "@$(PYTHON) tools/check_python.py $(VENV)"
