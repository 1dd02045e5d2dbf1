"""How much a newcomer reads: the self-check's lines, and the lines one check runs through.

The self-check has two size targets. ``selfcheck/`` holds at most 7,000 lines (``wc -l`` over its
``*.py``). And following one check from the command line to its message takes under 1,000
lines. Neither is met yet (7,959 and 1,673 lines when these tests were written, from 8,858 and
1,829; then 7,820 and 1,289 once the rare modes and the tables left the common path; then 7,651
and 1,213 with a leaner worker, Ctrl-C left to the kernel and leaner tables), so the tests hold each figure
where it is, a ceiling that only comes down: a change that adds lines must take as many out.

The path is measured as the lines of every self-check function that runs, in the grading
process and in the worker, while ``python -m transformer_lab.selfcheck FILE --only
causal_padding_mask`` checks a right file to its message: each function counts whole, from
its ``def`` to its last line, once however often it runs (a trace hook records the
functions; the worker's hook writes its list to a file before each reply). Module-level
code and class bodies (imports, constants, the mistake tables) are not counted; a function
that runs while the package is imported is.
"""

import json
import sys
from pathlib import Path

import transformer_lab.selfcheck as selfcheck
from selfcheck.solutions import SOLUTION, STRETCH, write
from transformer_lab.selfcheck.grading.cli import main
from transformer_lab.selfcheck.worker import isolation

PACKAGE = Path(selfcheck.__file__).resolve().parent
# Ceilings (the targets: 7,000 and 1,000); lower them as the code shrinks.
LINES_BUDGET = 7_650
PATH_BUDGET = 1_213


def lines_of(paths) -> int:
    return sum(len(path.read_text(encoding="utf-8").splitlines()) for path in paths)


def test_the_self_check_stays_within_its_line_ceiling():
    total = lines_of(PACKAGE.rglob("*.py"))
    assert total <= LINES_BUDGET, f"selfcheck/ is {total} lines (budget {LINES_BUDGET})"


# The trace hook, run in both processes: it notes every function entered (first and last line).
NOTE = """
seen = set()
def note(frame, event, arg):
    code = frame.f_code
    if event == "call" and code.co_flags & 2:  # CO_NEWLOCALS: a function, not a module
        last = max((line for _, _, line in code.co_lines() if line), default=0)
        seen.add((code.co_filename, code.co_firstlineno, last))
"""
# The worker runs this instead of its usual start: the same main under the hook (the worker's
# profile hook is its own), its notes written out before every reply (the grader kills it).
TRACED_START = (
    "import sys, json\nsys.path.insert(0, sys.argv.pop(1))\n"
    + NOTE
    + """
sys.settrace(note)
from transformer_lab.selfcheck.worker import serve
reply = serve.Server.reply
def reply_and_note(self, message):
    with open(OUT, "w") as out:  # before the reply: the grader may kill us once it has it
        json.dump(sorted(seen), out)
    reply(self, message)
serve.Server.reply = reply_and_note
serve.main()
"""
)


def spans(records, package: Path) -> dict[str, set[int]]:
    """The lines of each package file that the recorded functions cover, by path under it."""
    lines: dict[str, set[int]] = {}
    for filename, first, last in records:
        parts = Path(filename).parts
        inside = [
            i + 2 for i in range(len(parts) - 2) if parts[i : i + 2] == package.parts[-2:]
        ]
        if not inside:
            continue
        relative = "/".join(parts[inside[-1] :])
        lines.setdefault(relative, set()).update(range(first, last + 1))
    return lines


def test_one_check_runs_through_no_more_lines_than_its_ceiling(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("SELFCHECK_ISOLATION", "process")  # the worker must see our start
    worker_record = tmp_path / "worker.json"
    traced = TRACED_START.replace("OUT", repr(str(worker_record)))
    monkeypatch.setattr(isolation, "START", traced)
    path = write(tmp_path, "student.py", SOLUTION + STRETCH)
    hook: dict = {}
    exec(NOTE, hook)  # the worker's hook, here
    seen, note = hook["seen"], hook["note"]
    sys.settrace(note)
    try:
        status = main([str(path), "--only", "causal_padding_mask"])
    finally:
        sys.settrace(None)
    out = capsys.readouterr().out
    assert status == 0 and "1 passed" in out, out
    records = [tuple(r) for r in json.loads(worker_record.read_text())]
    lines = spans(list(seen) + records, PACKAGE)
    total = sum(len(covered) for covered in lines.values())
    per_file = ", ".join(
        f"{name} {len(covered)}" for name, covered in sorted(lines.items())
    )
    print(f"one check runs through {total} lines: {per_file}")
    assert total < PATH_BUDGET, per_file
    path_files = [
        "grading/cli.py",
        "grading/runner.py",
        "worker/parent.py",
        "worker/serve.py",
    ]
    assert set(path_files) <= set(lines), sorted(lines)  # the path MAINTAINING.md names
