"""transformer_lab.selfcheck.core and .errors: the mistake table, its matcher, statuses, one-line errors."""

import pytest

from transformer_lab.selfcheck.core import (
    ENDED,
    FAILED,
    NOT_DONE,
    PASSED,
    RAISED,
    TIMED_OUT,
    Failed,
    Mistake,
    StudentRaised,
    StudentStopped,
    article,
    capitalise,
    combine,
    diagnose,
    fail,
    first_match,
    run_check,
)
from transformer_lab.selfcheck.errors import summarise_exception

TABLE = [
    Mistake("twice", "doubled", "halve it", lambda x: 2 * x),
    Mistake("shape_only", "recognised by its shape", "", None),
    Mistake("broken", "cannot be computed here", "", lambda x: 1 / 0),
    Mistake("plus_one", "one too many", "subtract one", lambda x: x + 1),
    Mistake("also_twice", "doubled again", "", lambda x: x + x),
]


def test_first_match_returns_the_first_reproducing_entry_and_skips_the_rest():
    assert (
        first_match(6, TABLE, (3,), lambda a, b: a == b).code == "twice"
    )  # not also_twice
    assert (
        first_match(4, TABLE, (3,), lambda a, b: a == b).code == "plus_one"
    )  # past None and 1/0
    assert first_match(5, TABLE, (3,), lambda a, b: a == b) is None


def test_diagnose_fails_with_the_match_and_returns_without_one():
    with pytest.raises(Failed) as raised:
        diagnose(4, TABLE, (3,), lambda a, b: a == b, "3", "4")
    finding = raised.value.finding
    assert (
        finding.code,
        finding.mistake,
        finding.expected,
        finding.received,
        finding.advice,
    ) == ("plus_one", "One too many", "3", "4", "subtract one")
    assert diagnose(5, TABLE, (3,), lambda a, b: a == b, "3", "5") is None


def test_combine_names_every_mistake_in_order():
    both = combine(TABLE[0], TABLE[3], variant=lambda x: 2 * x + 1)
    assert both.code == "twice+plus_one"
    assert both.message == "doubled; and one too many"
    assert both.advice == "halve it; subtract one"
    assert both.variant(3) == 7


@pytest.mark.parametrize(
    "noun, expected",
    [
        ("int", "an int"),
        ("str", "a str"),
        ("numpy.ndarray", "a numpy.ndarray"),
        ("object", "an object"),
    ],
)
def test_article(noun, expected):
    assert article(noun) == expected


def test_capitalise_leaves_code_alone():
    assert capitalise("the scores") == "The scores"
    assert capitalise("a sigmoid") == "A sigmoid"
    assert capitalise("vocab_size × d") == "vocab_size × d"
    assert (
        capitalise("tokenizer.token_to_id(word) was stored")
        == "tokenizer.token_to_id(word) was stored"
    )


def _raise(error):
    def body():
        raise error

    return body


@pytest.mark.parametrize(
    "body, status",
    [
        (lambda: None, PASSED),
        (_raise(NotImplementedError("Exercise 1 (attention): to do")), NOT_DONE),
        (lambda: fail("code", "a mistake", "1", "2"), FAILED),
        (_raise(StudentRaised("ValueError at x.py:3 in f: bad")), RAISED),
        (_raise(StudentStopped(TIMED_OUT, "took longer than 1 s")), TIMED_OUT),
        (_raise(StudentStopped(ENDED, "ended the process")), ENDED),
        (_raise(KeyError("the check itself could not read the result")), RAISED),
    ],
)
def test_run_check_turns_every_outcome_into_a_status(body, status):
    result = run_check("name", "Exercise 1", body)
    assert result.status == status
    assert "\n" not in result.summary


def test_an_unusable_result_is_reported_not_raised():
    result = run_check("name", "Exercise 1", _raise(KeyError("x")))
    assert result.summary.startswith("the result could not be checked: KeyError")


def test_summarise_exception_is_one_line_with_the_student_line_and_a_hint():
    def student():
        import sys

        sys.exit("stop")

    try:
        student()
    except SystemExit as error:
        line = summarise_exception(error, __file__)
    assert line.startswith("SystemExit at test_core.py:")
    assert "in student: stop" in line
    assert "sys.exit() or exit() ends the whole program" in line
    assert "\n" not in summarise_exception(ValueError("a\nb\nc"))
    assert summarise_exception(ValueError("x" * 500)).endswith("...")
