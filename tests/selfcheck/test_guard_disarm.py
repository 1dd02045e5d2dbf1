"""The ``gc`` disarm attack: a submission finds the audit hook's rules through the garbage
collector, switches them off, and copies a classmate's file.

What holds where:
- in bubblewrap the classmate's file is not in the worker's view at all, so switching the
  rules off gains nothing (the view, not the hook, is the boundary);
- at the process level (no bubblewrap) the hook's rules live in the student's interpreter and
  the attack works, so ``grade`` and ``--hidden`` refuse to grade there unless the grader
  chooses it explicitly (``--allow-process-isolation``, or ``SELFCHECK_ISOLATION=process``),
  and then every output says so. A student's own check (no stakes; a Mac has no bubblewrap)
  runs at the process level as before."""

import csv
import json
from pathlib import Path

import pytest

from selfcheck.solutions import write
from transformer_lab.selfcheck import PASSED
from transformer_lab.selfcheck import isolation as isolation_module
from transformer_lab.selfcheck.cli import ALLOW_PROCESS, EXIT_UNUSABLE, main
from transformer_lab.selfcheck.isolation import BUBBLEWRAP, PROCESS, isolation

CLASSMATE = "def embedding_parameters(vocab_size, d):\n    return vocab_size * d\n"

DISARM_AND_COPY = r'''
import gc
import json
import os
import sys


def _disarm():
    for thing in gc.get_objects():
        if type(thing).__name__ == "Guard":
            thing.armed = False
            thing.hidden = []


def _folders():
    """Where the classmates are: the folders named in the worker's arguments, then anywhere."""
    for argument in sys.argv:
        try:
            config = json.loads(argument)
        except ValueError:
            continue
        if isinstance(config, dict):
            yield from config.get("hidden", [])
    skip = ("/proc", "/sys", "/usr", "/dev", sys.prefix, sys.base_prefix)
    for top, folders, _ in os.walk("/", onerror=lambda error: None):
        folders[:] = [f for f in folders if os.path.join(top, f) not in skip]
        yield top


def _classmate():
    for folder in _folders():
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith("classmate") and name.endswith(".py"):
                namespace = {}
                with open(os.path.join(folder, name)) as handle:
                    exec(handle.read(), namespace)
                return namespace["embedding_parameters"]
    return None


def embedding_parameters(vocab_size, d):
    _disarm()
    copied = _classmate()
    if copied is None:
        raise NotImplementedError("no classmate's file in reach")
    return copied(vocab_size, d)
'''


def grade(tmp_path, *extra: str) -> tuple[int, dict]:
    """Grade a folder holding the attacker and a classmate; (exit status, status per file)."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    write(folder, "classmate.py", CLASSMATE)
    write(folder, "attacker.py", DISARM_AND_COPY)
    out = tmp_path / "grades.csv"
    command = ["grade", str(folder), "--csv", str(out), "--only", "embedding_parameters"]
    code = main([*command, "--time-limit", "60", *extra])
    if not out.exists():
        return code, {}
    with open(out, newline="", encoding="utf-8") as handle:
        return code, {row["submission"]: row["status"] for row in csv.DictReader(handle)}


@pytest.mark.skipif(isolation().level != BUBBLEWRAP, reason="bubblewrap does not work here")
def test_in_bubblewrap_disarming_the_guard_gains_nothing(tmp_path):
    code, status = grade(tmp_path)
    assert status["classmate.py"] == PASSED
    assert status["attacker.py"] != PASSED, status


@pytest.fixture
def no_bubblewrap(monkeypatch):
    """A machine where bubblewrap does not work (and nobody forced the process level)."""
    monkeypatch.delenv("SELFCHECK_ISOLATION", raising=False)
    monkeypatch.setattr(isolation_module, "_bwrap_works", lambda: False)
    assert isolation().level == PROCESS


def test_without_bubblewrap_grade_refuses(tmp_path, no_bubblewrap, capsys):
    code, status = grade(tmp_path)
    printed = capsys.readouterr().out
    # Before: it graded at the process level, and the attacker passed with the copy.
    assert code == EXIT_UNUSABLE and status == {}
    assert "refusing to grade without the sandbox" in printed and ALLOW_PROCESS in printed


def test_without_bubblewrap_the_autograder_refuses(tmp_path, no_bubblewrap, capsys):
    path = write(tmp_path, "attacker.py", DISARM_AND_COPY)
    results = tmp_path / "results.json"
    command = [str(path), "--hidden", "--gradescope", str(results)]
    code = main([*command, "--only", "embedding_parameters"])
    assert code == EXIT_UNUSABLE
    written = json.loads(results.read_text(encoding="utf-8"))
    assert written["score"] == 0
    assert "refusing to grade without the sandbox" in capsys.readouterr().out


def test_the_process_level_is_open_so_grading_there_is_said_loudly(
    tmp_path, no_bubblewrap, capsys
):
    """Why grade refuses: at the process level the attack works. Chosen explicitly, the
    first and the last line say the results are not safe."""
    code, status = grade(tmp_path, ALLOW_PROCESS)
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert status["attacker.py"] == PASSED  # the hole the refusal guards against
    assert "WITHOUT the sandbox" in lines[0] and "WITHOUT the sandbox" in lines[-1]


def test_the_autograder_passes_the_flag_only_when_asked(tmp_path, monkeypatch):
    """run_autograder's AUTOGRADER_ALLOW_PROCESS_ISOLATION=1 becomes the autograder's flag,
    which becomes the self-check's (the self-check is replaced here by a recorder)."""
    from transformer_lab_instructor import autograder

    from transformer_lab.selfcheck import cli

    seen = []
    monkeypatch.setattr(cli, "main", lambda argv: seen.append(argv) or 0)
    for allowed in (False, True):
        autograder.run(tmp_path, tmp_path / "results.json", "homework", 10.0, allowed)
    assert [ALLOW_PROCESS in argv for argv in seen] == [False, True]
    script = Path(autograder.__file__).parent / "autograder_files" / "run_autograder"
    assert "${AUTOGRADER_ALLOW_PROCESS_ISOLATION:+--allow-process-isolation}" in (
        script.read_text(encoding="utf-8")
    )
