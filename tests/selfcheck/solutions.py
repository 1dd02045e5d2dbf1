"""A finished homework file, and ways to break it, for the tests that check whole files.

One home: ``tools/classroom.py``, which ``make bench`` uses to grade a class of such files."""

from classroom import SOLUTION, STRETCH, with_body, write

__all__ = ["SOLUTION", "STRETCH", "with_body", "write"]
