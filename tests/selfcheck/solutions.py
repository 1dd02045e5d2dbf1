"""A finished homework file, and ways to break it, for the tests that check whole files.

The answers live in ``instructor/transformer_lab_instructor/solutions.py`` (on the tests' path,
``pyproject.toml``); ``tools/classroom.py`` breaks them, and ``make bench`` grades a class of them."""

from transformer_lab_instructor.solutions import SOLUTION, STRETCH, WEEK20

from classroom import with_body, write

__all__ = ["SOLUTION", "STRETCH", "WEEK20", "with_body", "write"]
