"""The vocabulary every check shares: statuses, results, the mistake table and its one matcher.

A wrong answer is looked up in a table of :class:`Mistake` entries, each computing what one
typical mistake returns on the same input; the first that reproduces it names the mistake.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from transformer_lab.selfcheck.errors import summarise_exception

PASSED = "passed"
FAILED = "FAILED"
RAISED = "raised an error"
NOT_DONE = "not done yet"
MISSING = "missing"
TIMED_OUT = "timed out"
ENDED = "ended the process"
NOT_ATTEMPTED = "not attempted"
NOT_RUN = "not run"

# Order of the summary line; NOT_ATTEMPTED (optional checks left alone) is reported apart.
STATUSES = (PASSED, FAILED, RAISED, TIMED_OUT, ENDED, NOT_DONE, MISSING, NOT_RUN)


@dataclass(frozen=True)
class Finding:
    """One diagnosed mistake: a stable ``code`` (tests and graders use it), what it is, the evidence."""

    code: str
    mistake: str
    expected: str
    received: str
    advice: str = ""


@dataclass
class CheckResult:
    """The outcome of one check: a status, a one-line summary and (when it failed) a finding."""

    name: str
    exercise: str
    status: str
    summary: str = ""
    finding: Finding | None = None
    seconds: float = 0.0
    output: str = ""  # what the student's code printed during the check (worker runs only)

    @property
    def code(self) -> str | None:
        return None if self.finding is None else self.finding.code


@dataclass(frozen=True)
class Mistake:
    """One typical mistake: its code, a sentence naming it, advice, and what it would return.

    ``variant(*probe)`` computes the wrong answer this mistake gives on the probe the check used
    (``None`` when the mistake is recognised some other way, e.g. by a shape or a type).
    """

    code: str
    message: str
    advice: str
    variant: Callable[..., object] | None = None


def combine(*mistakes: Mistake, variant: Callable[..., object] | None = None) -> Mistake:
    """Several mistakes made at once, named together ("A; and b"), with their joint ``variant``."""
    message = "; and ".join(m.message for m in mistakes)
    return Mistake(
        "+".join(m.code for m in mistakes),
        message,
        "; ".join(m.advice for m in mistakes),
        variant,
    )


def first_match(
    received: object,
    mistakes: Iterable[Mistake],
    probe: Sequence[object],
    same: Callable[[object, object], bool],
) -> Mistake | None:
    """The first mistake whose ``variant(*probe)`` is ``same`` as ``received`` (``None`` if
    none); list simple mistakes before combinations, so the simplest explanation wins."""
    for mistake in mistakes:
        if mistake.variant is None:
            continue
        try:
            wrong = mistake.variant(*probe)
        except (ArithmeticError, LookupError, RuntimeError, TypeError, ValueError):
            continue
        if same(received, wrong):
            return mistake
    return None


class Failed(Exception):
    """Raised inside a check to stop at the first diagnosed mistake."""

    def __init__(self, finding: Finding):
        super().__init__(finding.mistake)
        self.finding = finding


class StudentNotDone(Exception):
    """The student's function still raises ``NotImplementedError`` (as a worker reports it)."""


class StudentRaised(Exception):
    """The student's function raised something other than ``NotImplementedError``."""

    def __init__(self, line: str):
        super().__init__(line)
        self.line = line


class StudentStopped(Exception):
    """The student's code timed out or ended the process that ran it (``status`` says which)."""

    def __init__(self, status: str, line: str):
        super().__init__(line)
        self.status = status
        self.line = line


def capitalise(text: str) -> str:
    """Upper-case the first letter, unless the sentence starts with code (``vocab_size``, ``d``)."""
    first = text.split(" ", 1)[0]
    if any(c in first for c in "_.()`"):
        return text
    return text[:1].upper() + text[1:]


RECEIVED_CHARACTERS = 2000  # of a finding's received value: no reply costs more


def fail(
    code: str, mistake: str, expected: object, received: object, advice: str = ""
) -> None:
    """Stop the current check with a diagnosed mistake. ``received`` (the student's value, of
    any size) is shown from bounded pieces (:data:`RECEIVED_CHARACTERS`)."""
    from transformer_lab.selfcheck.transport import bounded_repr

    shown = (
        received[:RECEIVED_CHARACTERS]
        if isinstance(received, str)
        else bounded_repr(received, RECEIVED_CHARACTERS)
    )
    raise Failed(Finding(code, capitalise(mistake), str(expected), shown, advice))


NO_RETURN = "the function returned None: it has no `return`"


def fail_if_none(
    result: object, expected: object, advice: str, mistake: str = NO_RETURN
) -> None:
    """Stop the current check if the function returned None."""
    if result is None:
        fail("returned_none", mistake, expected, "None", advice)


def fail_with(mistake: Mistake, expected: object, received: object, note: str = "") -> None:
    """Stop the current check with a mistake from a table (``note`` is appended to its message)."""
    fail(mistake.code, mistake.message + note, expected, received, mistake.advice)


def diagnose(
    received: object,
    mistakes: Iterable[Mistake],
    probe: Sequence[object],
    same: Callable[[object, object], bool],
    expected: object,
    shown: object,
    note: str = "",
) -> None:
    """Fail with the first mistake of ``mistakes`` that reproduces ``received``; else return."""
    match = first_match(received, mistakes, probe, same)
    if match is not None:
        fail_with(match, expected, shown, note)


def article(noun: str) -> str:
    """'an int', 'a str': the indefinite article for a type name."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def run_check(name: str, exercise: str, body: Callable[[], None]) -> CheckResult:
    """Run one check body and turn its outcome into a :class:`CheckResult`."""
    try:
        body()
    except (NotImplementedError, StudentNotDone) as error:
        message = str(error).strip() or "raises NotImplementedError"
        return CheckResult(name, exercise, NOT_DONE, f"NotImplementedError: {message}")
    except Failed as failure:
        return CheckResult(name, exercise, FAILED, failure.finding.mistake, failure.finding)
    except StudentRaised as raised:
        return CheckResult(name, exercise, RAISED, raised.line)
    except StudentStopped as stopped:
        return CheckResult(name, exercise, stopped.status, stopped.line)
    except Exception as error:  # noqa: BLE001 - an unusable result is reported, never a traceback
        line = "the result could not be checked: " + summarise_exception(error)
        return CheckResult(name, exercise, RAISED, line)
    return CheckResult(name, exercise, PASSED, "all checks passed")
