"""transformer_lab.selfcheck.grading.runner and .cli: checking whole files, from Python and from the command line."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from selfcheck.solutions import SOLUTION, STRETCH, with_body, write
from transformer_lab.selfcheck import (
    CHECKS,
    FAILED,
    NOT_ATTEMPTED,
    PASSED,
    RAISED,
    STRETCH_CHECKS,
    check_file,
    format_report,
)
from transformer_lab.selfcheck.grading.cli import _split_only, main
from transformer_lab.selfcheck.worker.isolation import BUBBLEWRAP, isolation

ROOT = Path(__file__).resolve().parents[2]


def run_command(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-m", "transformer_lab.selfcheck", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_untouched_starter_reports_not_done_for_every_task(level):
    completed = run_command()  # default path: exercises/homework/starter.py
    assert completed.returncode == 1, completed.stderr
    # stderr: nothing in a sandbox; at the process level, the one line that says so
    expected = "" if level == BUBBLEWRAP else isolation().line + "\n"
    assert completed.stderr == expected
    assert "Traceback" not in completed.stdout
    for check in CHECKS:
        assert f"[not done yet] {check.exercise}: {check.signature}" in completed.stdout
    for check in STRETCH_CHECKS:
        assert f"[not attempted] {check.exercise}: {check.signature}" in completed.stdout
    assert (
        f"{len(CHECKS)} not done yet (of {len(CHECKS)} checks), {len(STRETCH_CHECKS)} stretch exercises not "
        "attempted" in completed.stdout
    )


def test_a_finished_file_passes_every_check(tmp_path, capsys):
    path = write(tmp_path, "solution.py", SOLUTION + STRETCH)
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    total = len(CHECKS) + len(STRETCH_CHECKS)
    assert f"{total} passed (of {total} checks)" in out


def test_an_older_file_without_the_stretch_functions_still_passes(tmp_path, capsys):
    path = write(tmp_path, "solution.py", SOLUTION)
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        f"{len(CHECKS)} passed (of {len(CHECKS)} checks), 2 stretch exercises not attempted"
        in out
    )
    assert "optional stretch exercise: no function `causal_padding_mask` in the file" in out


def test_an_untouched_stretch_stub_is_not_attempted_either(tmp_path):
    stub = (
        "\n\ndef causal_padding_mask(padding):\n"
        "    raise NotImplementedError('Exercise 11 (causal_padding_mask): to do')\n"
    )
    report = check_file(
        write(tmp_path, "solution.py", SOLUTION + stub), only=["causal_padding_mask"]
    )
    assert report.results[0].status == NOT_ATTEMPTED and report.all_passed
    assert "Exercise 11 (causal_padding_mask): to do" in report.results[0].summary


def test_a_wrong_stretch_function_fails(tmp_path):
    wrong = STRETCH.replace("diagonal=1", "diagonal=0")
    report = check_file(
        write(tmp_path, "solution.py", SOLUTION + wrong), only=["causal_padding_mask"]
    )
    assert report.results[0].code == "blocked_diagonal" and not report.all_passed


def test_a_raising_function_is_summarised_in_one_line(tmp_path):
    source = SOLUTION.replace(
        "    return {word: len(tokenizer.encode(word).tokens) for word in words}",
        "    counts = {}\n    raise KeyError('oops: ' + words[0])\n",
    )
    report = check_file(write(tmp_path, "student.py", source))
    result = next(r for r in report.results if r.name == "tokens_per_word")
    assert result.status == RAISED
    line = 1 + source.splitlines().index("def tokens_per_word(tokenizer, words):") + 2
    assert (
        result.summary == f"KeyError at student.py:{line} in tokens_per_word: 'oops: cat'"
    )
    text = format_report(report)
    assert "Traceback" not in text
    assert (
        f"[raised an error] Exercise 9: tokens_per_word(tokenizer, words)\n    KeyError at student.py:{line}"
        in text
    )


def test_only_selects_checks_before_or_after_the_file_and_a_missing_function_is_reported(
    tmp_path, capsys
):
    path = str(
        write(tmp_path, "student.py", SOLUTION.split("def masked_mean")[0])
    )  # only attention
    # --only before the file reads the same as after it (the parser's part: no worker needed)
    parser = argparse.ArgumentParser()
    names = ["attention", "masked_mean"]
    assert _split_only(parser, [*names, path], None) == (names, path)
    assert main([path, "--only", *names]) == 1
    out = capsys.readouterr().out
    assert "[passed] Exercise 3: attention(q, k, v, padding)" in out
    assert "[missing] Exercise 2: masked_mean(x, padding)" in out
    assert "no function `masked_mean` in the file" in out
    assert "accuracy" not in out


def test_an_unknown_check_name_is_refused(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--only", "attentoin"])
    assert stopped.value.code == 2
    assert "unknown check 'attentoin'" in capsys.readouterr().err


def test_a_file_that_does_not_import_is_one_line(tmp_path, capsys):
    path = write(tmp_path, "broken.py", "def attention(q, k, v, padding)\n    return q\n")
    assert main([str(path)]) == 2
    out = capsys.readouterr().out
    assert "Could not load the file: SyntaxError" in out and "Traceback" not in out


def test_a_missing_file_is_explained(tmp_path, capsys):
    assert main([str(tmp_path / "nope.py")]) == 2
    assert "No such file" in capsys.readouterr().out


def test_importing_the_books_function_is_not_a_pass(tmp_path):
    source = SOLUTION.replace(
        "def masked_mean(x, padding):",
        "from transformer_lab.pooling import masked_mean\n\n\ndef _unused(x, padding):",
    )
    report = check_file(write(tmp_path, "student.py", source), only=["masked_mean"])
    assert (
        report.results[0].status == FAILED and report.results[0].code == "imported_answer"
    )


def test_the_json_report_has_every_check_with_status_code_message_and_time(
    tmp_path, capsys
):
    source = with_body(
        SOLUTION,
        "accuracy",
        "return 100 * ((logits > 0).float() == labels).float().mean().item()",
    )
    assert main([str(write(tmp_path, "student.py", source)), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is False and data["load_error"] is None
    by_name = {c["check"]: c for c in data["checks"]}
    assert (
        by_name["accuracy"]["status"] == FAILED
        and by_name["accuracy"]["code"] == "percentage"
    )
    assert by_name["accuracy"]["message"].startswith("A percentage came back")
    assert by_name["attention"]["status"] == PASSED and by_name["attention"]["code"] is None
    assert by_name["causal_padding_mask"]["status"] == NOT_ATTEMPTED
    assert all(isinstance(c["seconds"], float) for c in data["checks"])


def test_a_json_file_holds_the_report_while_the_text_is_printed(tmp_path, capsys):
    out = tmp_path / "report.json"
    path = write(tmp_path, "student.py", with_body(SOLUTION, "accuracy", "return 0.5"))
    assert main([str(path), "--only", "accuracy", "--json-file", str(out)]) == 1
    assert "[FAILED] Exercise 1" in capsys.readouterr().out
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [(c["check"], c["status"]) for c in data["checks"]] == [("accuracy", FAILED)]


def test_the_json_file_is_written_beside_a_gradescope_results_file(tmp_path):
    results, out = tmp_path / "results.json", tmp_path / "report.json"
    path = write(tmp_path, "student.py", with_body(SOLUTION, "accuracy", "return 0.5"))
    command = [str(path), "--only", "accuracy", "--gradescope", str(results)]
    assert main([*command, "--json-file", str(out)]) == 1
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [(c["check"], c["status"]) for c in data["checks"]] == [("accuracy", FAILED)]


def test_a_gradescope_results_file_is_written_next_to_the_report(tmp_path, capsys):
    results = tmp_path / "results.json"
    path = write(
        tmp_path,
        "student.py",
        SOLUTION.replace("return vocab_size * d", "return vocab_size + d"),
    )
    assert main([str(path), "--gradescope", str(results)]) == 1
    data = json.loads(results.read_text(encoding="utf-8"))
    assert data["score"] == len(CHECKS) - 1
    failed = [t for t in data["tests"] if t["status"] == "failed" and t["max_score"]]
    assert [t["name"] for t in failed] == [
        "Exercise 7: embedding_parameters(vocab_size, d)"
    ]
    assert "The sizes were added" in failed[0]["output"]
    assert "[FAILED] Exercise 7" in capsys.readouterr().out


def test_the_exit_status_is_not_zero_when_student_code_calls_sys_exit_0(tmp_path, capsys):
    # main() returns the exit status (`python -m` passes it to sys.exit, as the first test shows);
    # a sys.exit(0) escaping the worker would end main() here with SystemExit, failing the test
    path = write(
        tmp_path, "student.py", with_body(SOLUTION, "attention", "import sys; sys.exit(0)")
    )
    assert main([str(path), "--only", "attention", "masked_mean"]) == 1
    out = capsys.readouterr().out
    assert "[raised an error] Exercise 3" in out and "[passed] Exercise 2" in out
    assert "1 passed, 1 raised an error (of 2 checks)" in out


def test_a_file_checking_itself_after_changing_the_references_is_checked_afresh(tmp_path):
    """The starters' way: the command runs in a fresh interpreter, whose references are the book's."""
    unscaled = SOLUTION.replace(
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
        "scores = q @ k.transpose(-2, -1)",
    )
    source = unscaled + (
        "\nimport transformer_lab.attention as book\n"
        "book.attention = lambda q, k, v, padding=None, causal=False: attention(q, k, v, padding)\n"
        "\nif __name__ == '__main__':\n"
        "    from transformer_lab.week20_runs import check_in_subprocess\n"
        "    status, passed = check_in_subprocess(__file__, 'me.py', 'homework')\n"
        "    print(status, sorted(passed))\n"
    )
    path = write(tmp_path, "me.py", source)
    completed = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert "Self-check of me.py" in completed.stdout
    assert "Likely mistake: The scores were not divided by √d" in completed.stdout
    status, passed = completed.stdout.strip().splitlines()[-1].split(" ", 1)
    assert status == "1" and "'masked_mean'" in passed and "'attention'" not in passed


PAD_ID_REPAIR = """
import torch
from transformer_lab.char_transformer import PAD_ID
from transformer_lab.pooling import masked_mean


def repaired_forward(model, ids, padding):
    padding = ids == PAD_ID  # the broken class's own line, kept
    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    x = model.encoder(x.transpose(0, 1), src_key_padding_mask=padding).transpose(0, 1)
    return model.head(masked_mean(x, padding)).squeeze(-1)
"""


def test_a_repair_that_keeps_the_broken_class_import_of_pad_id_passes(tmp_path):
    """The book's constants are real in the worker: ``PAD_ID`` is the book's 0, not a stand-in."""
    path = write(tmp_path, "student.py", PAD_ID_REPAIR)
    report = check_file(path, only=["repaired_forward"], page="week-20")
    assert report.results[0].status == PASSED, report.results[0]
