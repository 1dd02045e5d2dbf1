"""transformer_lab.selfcheck.checks.answers: the hidden inputs' seeds, and the answers passed in."""

import transformer_lab_instructor  # noqa: F401 - passes the instructor's answers in

from transformer_lab.selfcheck.checks import answers


def test_a_regrade_with_the_recorded_seed_draws_the_same_hidden_inputs():
    with answers.using(answers.HIDDEN, seed=1234):
        first = [answers.fresh_seed(p) for p in (0, 5, 20)]
    with answers.using(answers.HIDDEN, seed=1234):
        again = [answers.fresh_seed(p) for p in (0, 5, 20)]
    with answers.using(answers.HIDDEN, seed=1235):
        other = [answers.fresh_seed(p) for p in (0, 5, 20)]
    assert first == again and first != other and len(set(first)) == 3
    assert answers.fresh_seed(5) == 5  # public mode: the public input


def test_the_seed_comes_from_the_course_secret_and_the_submission():
    seed = answers.submission_seed(b"def f(): pass\n", "secret")
    assert seed == answers.submission_seed(b"def f(): pass\n", "secret")
    assert seed != answers.submission_seed(b"def f(): pass\n", "another secret")
    assert seed != answers.submission_seed(b"def f():  pass\n", "secret")
    assert 0 <= seed < 2**31


def test_the_public_package_never_imports_the_instructors():
    import re
    from pathlib import Path

    package = Path(answers.__file__).resolve().parents[1]
    importing = re.compile(r"^\s*(from|import)\s+transformer_lab_instructor", re.MULTILINE)
    for path in package.rglob("*.py"):
        assert not importing.search(path.read_text(encoding="utf-8")), path
