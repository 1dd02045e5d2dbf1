"""transformer_lab.selfcheck.grading.report: the text, the JSON and the autograder results."""

import json

from transformer_lab.selfcheck import (
    FAILED,
    NOT_ATTEMPTED,
    PASSED,
    TIMED_OUT,
    CheckResult,
    Finding,
    Report,
)
from transformer_lab.selfcheck.grading.report import (
    _wrap,
    format_report,
    gradescope_results,
    report_to_dict,
    report_to_json,
)

FINDING = Finding(
    "percentage", "A percentage came back", "0.7500", "75.0000", "drop the * 100"
)
REPORT = Report(
    "student.py",
    [
        CheckResult("attention", "Exercise 1", PASSED, "all checks passed", seconds=0.01),
        CheckResult(
            "accuracy",
            "Exercise 4",
            FAILED,
            FINDING.mistake,
            FINDING,
            0.002,
            "debug 1\ndebug 2\n",
        ),
        CheckResult(
            "masked_mean",
            "Exercise 3",
            TIMED_OUT,
            "took longer than 10 s and was stopped",
            seconds=10.0,
        ),
        CheckResult(
            "causal_padding_mask",
            "Exercise 10",
            NOT_ATTEMPTED,
            "optional stretch exercise: no function",
        ),
    ],
    seconds=10.2,
)


def test_the_text_report_lists_each_check_and_a_summary():
    text = format_report(REPORT)
    assert (
        "[FAILED] Exercise 4: accuracy(logits, labels)\n    Likely mistake: A percentage came back"
        in text
    )
    assert "    Your code printed:\n      debug 1\n      debug 2" in text
    assert (
        "[timed out] Exercise 3: masked_mean(x, padding)\n    took longer than 10 s" in text
    )
    assert text.endswith(
        "1 passed, 1 failed, 1 timed out (of 3 checks), 1 stretch exercise not attempted, "
        "in 10.20 s (wall)."
    )


def test_long_output_is_cut_to_a_few_lines():
    result = CheckResult(
        "attention", "Exercise 1", PASSED, output="\n".join(f"line {i}" for i in range(50))
    )
    text = format_report(Report("s.py", [result]))
    assert "Your code printed (first 5 of 50 lines):" in text and "line 5" not in text


def test_the_json_report_holds_every_check():
    data = report_to_dict(REPORT)
    assert [c["status"] for c in data["checks"]] == [
        PASSED,
        FAILED,
        TIMED_OUT,
        NOT_ATTEMPTED,
    ]
    assert data["checks"][1]["code"] == "percentage" and data["passed"] is False
    assert json.loads(report_to_json(REPORT)) == data


def test_gradescope_results_give_a_point_per_passed_check_and_stretch_as_extra_credit():
    results = gradescope_results(REPORT)
    assert results["score"] == 1
    tests = {t["name"]: t for t in results["tests"]}
    assert tests["Exercise 1: attention(q, k, v, padding)"]["score"] == 1
    assert tests["Exercise 4: accuracy(logits, labels)"]["status"] == "failed"
    assert (
        "A percentage came back" in tests["Exercise 4: accuracy(logits, labels)"]["output"]
    )
    assert tests["Exercise 10: causal_padding_mask(padding)"]["max_score"] == 0
    assert sum(t["max_score"] for t in results["tests"]) == 3


def test_a_width_wraps_long_lines_under_their_own_indent():
    long_advice = Finding(
        "percentage", "A percentage came back " * 3, "0.75", "75.0", "drop it " * 9
    )
    report = Report(
        "student.py",
        [
            CheckResult(
                "accuracy", "Exercise 1", FAILED, long_advice.mistake, long_advice, 0.01
            )
        ],
    )
    wide = format_report(report)
    narrow = format_report(report, width=40)
    assert max(len(line) for line in wide.splitlines()) > 40
    assert all(len(line) <= 40 or " " not in line.strip() for line in narrow.splitlines())
    assert " ".join(narrow.split()) == " ".join(
        wide.split()
    )  # the same words, only wrapped
    assert (
        "\n        " in narrow
    )  # a wrapped finding continues 4 columns deeper than it began


def test_a_wrapped_timing_stays_on_one_line_for_the_page_sanitizer():
    line = (
        "6 not done yet (of 6 checks), 2 stretch exercises not attempted, in 0.12 s (wall)."
    )
    for width in range(20, 90, 7):
        assert "0.12 s (wall)" in _wrap(line, width)


def test_bidi_and_line_separators_are_escaped_in_the_csv_and_the_json(tmp_path):
    from transformer_lab.selfcheck.core import FAILED, CheckResult
    from transformer_lab.selfcheck.grading.folder import write_csv, write_json

    tricky = "evil\u202egnp.py \u2028 next\u2029 \u2066x\u2069"
    report = Report(tricky, [CheckResult("accuracy", "Exercise 1", FAILED, tricky)])
    write_csv([report], tmp_path / "g.csv")
    write_json([report], tmp_path / "g.json")
    for name in ("g.csv", "g.json"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert not {"\u202e", "\u2028", "\u2029", "\u2066", "\u2069"} & set(text), name
        assert "\\u202e" in text, name
