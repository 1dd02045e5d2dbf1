"""A class of submissions for the self-check's grader: right, wrong, unfinished and hostile files.

    from classroom import SOLUTION, write_class
    write_class(folder, 100)  # 40 right, 30 wrong, 15 stubs, 15 hostile, named s000.py ...

``make bench`` (tools/bench.py) grades such a folder to measure submissions per minute, and the
self-check's tests use the same files (tests import tools, never the reverse). The right
answers themselves come from ``instructor/transformer_lab_instructor/solutions.py``. The hostile files
loop, exit, crash, flood their output, fork a ``setsid`` daemon and try to overwrite a classmate;
each gets one line and harms no one else.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The answers live in instructor/ (left out of the student edition), not here.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "instructor"))
from transformer_lab_instructor.solutions import SOLUTION, STRETCH  # noqa: E402

__all__ = ["SOLUTION", "STRETCH", "submission", "with_body", "write", "write_class"]


def with_body(source: str, function: str, line: str) -> str:
    """``source`` with ``line`` inserted as the first statement of ``function``."""
    header = f"def {function}("
    start = source.index(header)
    end = source.index(":\n", start) + 2
    return source[:end] + f"    {line}\n" + source[end:]


def write(folder, name: str, source: str):
    path = folder / name
    path.write_text(source, encoding="utf-8")
    return path


WRONG = [  # (name of the function, the line that breaks it)
    ("attention", "q = q * 2"),
    ("masked_mean", "padding = ~padding"),
    ("accuracy", "labels = 1 - labels"),
    ("embedding_parameters", "d = d + 1"),
    ("tokens_per_word", "words = words[:1]"),
]
HOSTILE = [
    ("masked_mean", "while True: pass"),
    ("accuracy", "import os; os._exit(3)"),
    ("attention", "import sys; sys.exit(0)"),
    ("accuracy", "while True: print('x' * 10000, flush=True)"),
    (
        "embedding_parameters",
        "import os, time\n    if os.fork() == 0:\n        os.setsid()\n"
        "        while True: time.sleep(0.05)",
    ),
]
STUB = """
def attention(q, k, v, padding):
    raise NotImplementedError("Exercise 3")


def masked_mean(x, padding):
    raise NotImplementedError("Exercise 2")
"""


def submission(index: int, total: int) -> str:
    """The source of submission ``index`` of ``total``: the first 40% right, then 30% wrong,
    15% unfinished and 15% hostile (each kind cycling through its variants)."""
    right, wrong, stubs = (round(total * share) for share in (0.4, 0.3, 0.15))
    if index < right:
        return SOLUTION + STRETCH
    if index < right + wrong:
        function, line = WRONG[(index - right) % len(WRONG)]
        return with_body(SOLUTION, function, line)
    if index < right + wrong + stubs:
        return STUB
    function, line = HOSTILE[(index - right - wrong - stubs) % len(HOSTILE)]
    return with_body(SOLUTION, function, line)


def write_class(folder: Path | str, total: int = 100) -> list[Path]:
    """Write ``total`` submissions ``s000.py``, ``s001.py``, ... into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return [write(folder, f"s{i:03d}.py", submission(i, total)) for i in range(total)]
