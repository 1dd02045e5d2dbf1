"""The instructor's half of the course: every answer and every hidden check, in one place.

Never part of the student edition (``make student`` leaves ``instructor/`` out, and
``tests/test_editions.py`` proves that nothing of it is left in that edition):

- ``references``: the private references of the two stretch exercises;
- ``live``: the answers the public self-check reads as stored data (``transformer_lab.selfcheck
  .answers``), here as the code that computes them: the references and every known mistake;
- ``stored``: the generator of those stored outputs (``python -m transformer_lab_instructor.stored``);
- ``solutions``: the answers as a student would write them (the homework, Week 20);
- ``autograder``: Gradescope's ``run_autograder`` (public checks visible, hidden checks on fresh
  inputs ``after_due_date``), and ``autograder_files/`` the template of its zip (``make autograder``).

Importing this package passes the answers in to the self-check (``answers.provide``): the public
package never imports this one by name.
"""

import functools
import importlib

from transformer_lab.selfcheck.checks import answers as _answers


@functools.cache
def _live() -> dict:
    return importlib.import_module("transformer_lab_instructor.live").ANSWERS


_answers.provide(_live)
