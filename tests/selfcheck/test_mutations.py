"""The mutation suite: every wrong implementation is rejected with its own mistake, every right one passes.

The catalogue lives in ``mutants.py`` (``python tests/selfcheck/mutants.py`` prints the numbers).
"""

import pytest

from selfcheck.mutants import (
    GENERIC_CODES,
    RAISED_PREFIX,
    RIGHT,
    WRONG,
    is_named,
    run,
    statistics,
    summary,
    week20_statistics,
)
from transformer_lab.selfcheck import PASSED, Report, format_report


@pytest.mark.parametrize("mutant", WRONG, ids=[m.label for m in WRONG])
def test_a_wrong_implementation_is_rejected_with_its_own_mistake(mutant):
    result = run(mutant)
    assert result.status != PASSED, f"{mutant.label} passed"
    if mutant.code.startswith(RAISED_PREFIX):
        assert is_named(mutant, result), result.summary
        return
    assert result.code == mutant.code, (
        f"expected {mutant.code}, got {result.code}: {result.finding or result.summary}"
    )
    finding = result.finding
    assert finding.expected and finding.received and finding.expected != finding.received
    assert not finding.mistake[:1].islower(), "a diagnosis is a sentence"
    report = format_report(Report("student.py", [result]))
    assert "Likely mistake:" in report and "expected:" in report and "received:" in report


@pytest.mark.parametrize("mutant", RIGHT, ids=[m.label for m in RIGHT])
def test_a_right_implementation_passes(mutant):
    result = run(mutant)
    assert result.status == PASSED, result.finding or result.summary


def test_the_suite_is_large_and_names_nearly_every_mistake(capsys):
    stats = statistics()
    with capsys.disabled():
        print("\n" + summary(stats))
    assert stats["wrong"] >= 40 and stats["functions"] == 14
    assert stats["rejected"] == stats["wrong"]
    assert stats["named"] >= 0.9 * stats["wrong"]
    assert not stats["misnamed"], "a message names another mistake than the one made"
    assert stats["right_passed"] == stats["right"]
    # every named variant's code is specific; the unnamed ones are few and declared as such
    assert all(m.code in GENERIC_CODES for m, _ in stats["unnamed"])


def test_the_week20_pass_is_all_rejected_and_nine_in_ten_named(capsys):
    stats = week20_statistics()
    with capsys.disabled():
        print("\n" + summary(stats))
    assert stats["wrong"] >= 15 and stats["right"] >= 6
    assert stats["rejected"] == stats["wrong"]
    assert stats["named"] >= 0.9 * stats["wrong"]
    assert not stats["misnamed"] and stats["right_passed"] == stats["right"]
