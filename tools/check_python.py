"""`make setup`'s first step: the Python that builds .venv, and the one inside it, must be the
book's (``requires-python`` in pyproject.toml, today 3.11).

    python3 tools/check_python.py .venv

Run by the Python the Makefile was given (``PYTHON``, default ``python3``), so it must work on
whatever Python that is: nothing newer than Python 3.7. A fresh clone on another Python gets one line
saying which version is needed and how to choose it. An existing ``.venv`` made with another
Python (say 3.10, from an older set-up) would otherwise make pip fail with "ResolutionImpossible:
torch==2.13.0+cpu" and no hint; it is removed, with a line saying why, so that the set-up
rebuilds it with the right Python.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def required_python(pyproject=PYPROJECT):
    """``(major, minor)`` from pyproject.toml's ``requires-python = ">=X.Y,<X.Z"``: the one home
    of the book's Python version (read with a regular expression: tomllib is Python 3.11's)."""
    text = Path(pyproject).read_text(encoding="utf-8")
    found = re.search(r'^requires-python\s*=\s*">=(\d+)\.(\d+)', text, re.MULTILINE)
    if found is None:
        raise SystemExit(f'{pyproject}: no requires-python = ">=X.Y,..." line')
    return int(found.group(1)), int(found.group(2))


REQUIRED = required_python()


def venv_version(venv):
    """``(major, minor)`` of ``venv``'s Python, or ``None`` if it has none that runs."""
    python = Path(venv) / "bin" / "python"
    if not python.exists():
        return None
    try:
        completed = subprocess.run(
            [str(python), "-c", "import sys; print(*sys.version_info[:2])"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = completed.stdout.split()
    if completed.returncode != 0 or len(parts) != 2:
        return None
    return int(parts[0]), int(parts[1])


def check(venv, running=None):
    """The message to print (``None``: all is well); removes a ``.venv`` on another Python."""
    running = tuple(running or sys.version_info[:2])
    wanted = "{}.{}".format(*REQUIRED)
    if running != REQUIRED:
        return (
            f"Python {wanted} is required, this is {running[0]}.{running[1]} "
            f"(set PYTHON=python{wanted}, e.g. make book PYTHON=python{wanted})"
        )
    venv = Path(venv)
    if not venv.exists():
        return None
    found = venv_version(venv)
    if found == REQUIRED:
        return None
    what = "Python {}.{}".format(*found) if found else "no working Python"
    shutil.rmtree(str(venv))
    return f"{venv} held {what}, not {wanted}: removed it, the set-up now rebuilds it with Python {wanted}"


def main():
    venv = sys.argv[1] if len(sys.argv) > 1 else ".venv"
    message = check(venv)
    if message is None:
        return 0
    print(message, file=sys.stderr)
    return 1 if sys.version_info[:2] != REQUIRED else 0


if __name__ == "__main__":
    sys.exit(main())
