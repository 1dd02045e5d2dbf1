"""Wall-clock timing, printed in one format that the nbval sanitizer recognises.

Timings differ between runs and machines, so pages print them as ``"<n> s (wall)"`` (or, inside
a sentence, ``"<n> seconds of wall-clock time"``) and ``tests/nbval_sanitize.cfg`` masks exactly
those patterns — and nothing else on the line.
"""

import time
from collections.abc import Iterator
from contextlib import contextmanager

from transformer_lab.validation import require_number


def format_wall_time(seconds: float) -> str:
    """Format a duration for printed output, e.g. ``"1.23 s (wall)"``."""
    seconds = require_number("seconds", seconds, minimum=0)
    return f"{seconds:.2f} s (wall)"


def format_wall_time_prose(seconds: float) -> str:
    """Format a duration for a sentence (a glued value), e.g. ``"1.23 seconds of wall-clock time"``.

    The sanitizer masks this pattern too, so prose can quote a timing without a bracketed tag.
    """
    seconds = require_number("seconds", seconds, minimum=0)
    return f"{seconds:.2f} seconds of wall-clock time"


@contextmanager
def stopwatch() -> Iterator[dict[str, float]]:
    """Measure a block: ``with stopwatch() as t: ...`` then ``t["seconds"]``."""
    record = {"seconds": 0.0}
    start = time.perf_counter()
    try:
        yield record
    finally:
        record["seconds"] = time.perf_counter() - start
