"""One line for an exception in a student's code: its type, the line of the student's file, a hint."""

from __future__ import annotations

import os
import re
import traceback
from collections.abc import Iterable
from pathlib import Path

# (pattern in "Type: message", hint) pairs: the errors students meet most, with a pointer.
COMMON_ERROR_HINTS: list[tuple[str, str]] = [
    (
        r"bool tensor is not supported|Subtraction, the `-` operator",
        "padding is a boolean tensor: use ~padding (not 1 - padding) to flip it",
    ),
    (
        r"numpy\(\) on Tensor that requires grad",
        "stay in torch: .numpy() cuts the gradient; use torch operations throughout",
    ),
    (
        r"could not infer output dtype|mean\(\): .*Bool",
        "a boolean tensor has no mean: convert with .float() first",
    ),
    (
        r"mat1 and mat2 shapes cannot be multiplied|Expected size for first two dimensions of batch2",
        "check the matrix product: q @ k.transpose(-2, -1) turns (B, Lk, D) into (B, D, Lk)",
    ),
    (
        r"size of tensor a .* must match the size of tensor b|The size of tensor a",
        "two tensors do not broadcast: print both shapes and line them up from the right; "
        "either an axis is missing (add it with [:, None] or unsqueeze) or one of them was "
        "made for another size",
    ),
    (
        r"masked_fill.* expected .*bool|expected BoolTensor|mask.*must be.*bool",
        "masked_fill needs a boolean mask (True = fill)",
    ),
    (
        r"object is not callable|has no attribute",
        "a name is used wrongly: check the spelling and that you call functions with ()",
    ),
    (
        r"^SystemExit",
        "sys.exit() or exit() ends the whole program; return the result instead",
    ),
    (
        r"^KeyboardInterrupt",
        "your code raised KeyboardInterrupt; remove the raise (or the input() that waits for a key)",
    ),
    (
        r"^(OSError|IOError).*(File too large|\[Errno 27\])",
        "your code printed too much: the self-check keeps at most a few megabytes of output",
    ),
    (
        r"^MemoryError|can't allocate memory|not enough memory|DefaultCPUAllocator",
        "your code asked for more memory than the self-check allows: look for a tensor that grows with "
        "every loop, or one with a size you did not mean",
    ),
    (
        r"^EOFError.*(input|reading a line)",
        "input() waits for the keyboard: the functions must not ask for input",
    ),
]


def student_location(error: BaseException, filename: str | None) -> str:
    """' at starter.py:42 in attention' for the deepest frame of the student's file, if any."""
    frames = traceback.extract_tb(error.__traceback__)
    target = filename and os.path.realpath(filename)
    mine = [f for f in frames if target and os.path.realpath(f.filename) == target]
    frame = mine[-1] if mine else (frames[-1] if frames else None)
    if frame is None:
        return ""
    return f" at {Path(frame.filename).name}:{frame.lineno} in {frame.name}"


def summarise_exception(
    error: BaseException, filename: str | None = None, hints: Iterable[tuple[str, str]] = ()
) -> str:
    """One line: the exception type, where in the student's file it came from, its first line,
    and a hint when the message matches a common mistake."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else "(no message)"
    if len(text) > 160:
        text = text[:157] + "..."
    line = f"{type(error).__name__}{student_location(error, filename)}: {text}"
    searched = f"{type(error).__name__}: {error}"
    for pattern, hint in list(hints) + COMMON_ERROR_HINTS:
        if re.search(pattern, searched, flags=re.IGNORECASE | re.DOTALL | re.MULTILINE):
            return f"{line} (hint: {hint})"
    return line
