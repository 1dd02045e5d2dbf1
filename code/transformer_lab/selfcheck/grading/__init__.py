"""Grading: :mod:`.cli` (the commands), :mod:`.runner` (one file's checks in its worker),
:mod:`.folder` (a class, ``jobs`` at a time, to CSV and JSON), :mod:`.report` (text, JSON and
Gradescope's ``results.json``)."""
