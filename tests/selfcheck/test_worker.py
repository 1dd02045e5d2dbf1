"""transformer_lab.selfcheck.worker: student code runs in a worker process, so it cannot hang the
self-check, end it, flood it, or make wrong code pass by changing the references."""

import pytest

from selfcheck.solutions import SOLUTION, STRETCH, with_body, write
from transformer_lab.selfcheck import ENDED, PASSED, RAISED, TIMED_OUT, Limits, check_file

# The time limit a looping student function waits out. A right check's requests take at most
# about 20 ms here, so half a second leaves room for a machine several times slower.
FAST = Limits(seconds=1.0)


def statuses(report):
    return {result.name: result.status for result in report.results}


def test_a_function_that_never_returns_is_stopped_and_the_others_still_run(tmp_path):
    source = with_body(SOLUTION + STRETCH, "masked_mean", "while True: pass")
    source = with_body(source, "accuracy", "import time; time.sleep(60)")
    report = check_file(write(tmp_path, "student.py", source), limits=FAST)
    for name in ("masked_mean", "accuracy"):  # a loop, a sleep
        result = next(r for r in report.results if r.name == name)
        assert result.status == TIMED_OUT
        assert result.summary.startswith(
            ("kept computing past its time limit", "gave no answer within")
        )
    stopped = {r.name for r in report.results if r.status != PASSED}
    assert stopped == {"masked_mean", "accuracy"}


# One way to stop per function of one file: each ends only its own check.
STOPS = {
    "attention": ("import sys; sys.exit(0)", RAISED, "SystemExit at student.py:"),
    "masked_mean": ("import sys; sys.exit('bye')", RAISED, "SystemExit at student.py:"),
    "accuracy": ("raise KeyboardInterrupt", RAISED, "KeyboardInterrupt at student.py:"),
    "embedding_parameters": (
        "import os; os._exit(0)",
        ENDED,
        "ended the process that ran it (exit status 0)",
    ),
    "tokens_per_word": ("input('your name? ')", RAISED, "input() waits for the keyboard"),
}


def test_exits_interrupts_and_crashes_end_only_that_check(tmp_path):
    source = SOLUTION
    for function, (line, _, _) in STOPS.items():
        source = with_body(source, function, line)
    report = check_file(write(tmp_path, "student.py", source), limits=FAST)
    got = {r.name: r for r in report.results}
    for function, (_, status, text) in STOPS.items():
        assert got[function].status == status, (function, got[function])
        assert text in got[function].summary, (function, got[function].summary)
    assert got["train_bpe_tokenizer"].status == PASSED and not report.all_passed


def test_a_crash_in_native_code_ends_only_that_check(tmp_path, level):
    """The crash ends the worker, at every level; the next check gets a fresh one."""
    line = "import ctypes; ctypes.string_at(0)"
    path = write(tmp_path, "student.py", with_body(SOLUTION, "accuracy", line))
    report = check_file(path, only=["accuracy", "embedding_parameters"], limits=FAST)
    assert report.isolation == level
    crashed, other = report.results
    assert crashed.status == ENDED and "killed by SIGSEGV" in crashed.summary
    assert other.status == PASSED


def test_a_flood_of_output_is_cut_off_and_kept_out_of_the_report(tmp_path):
    path = write(
        tmp_path,
        "student.py",
        with_body(SOLUTION, "accuracy", "while True: print('x' * 1000)"),
    )
    report = check_file(path, limits=Limits(seconds=20, output_bytes=200_000))
    result = next(r for r in report.results if r.name == "accuracy")
    assert result.status == RAISED and "printed too much" in result.summary
    assert len(result.output) < 5000
    assert statuses(report)["tokens_per_word"] == PASSED


def test_printed_lines_are_shown_with_their_check(tmp_path):
    path = write(
        tmp_path,
        "student.py",
        with_body(SOLUTION, "embedding_parameters", "print('debug', vocab_size)"),
    )
    report = check_file(path, only=["embedding_parameters"], limits=FAST)
    assert report.results[0].status == PASSED
    assert report.results[0].output.splitlines() == ["debug 80", "debug 50000", "debug 7"]


def test_too_much_memory_is_an_error_not_a_swapping_machine(tmp_path):
    path = write(
        tmp_path,
        "student.py",
        with_body(SOLUTION, "accuracy", "big = [torch.ones(10**8) for _ in range(20)]"),
    )
    report = check_file(path, only=["accuracy"], limits=Limits(seconds=20, memory_mb=200))
    assert report.results[0].status in (RAISED, ENDED)
    assert "memory" in report.results[0].summary


def test_changing_the_book_references_does_not_make_wrong_code_pass(tmp_path):
    unscaled = SOLUTION.replace(
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
        "scores = q @ k.transpose(-2, -1)",
    )
    patched = unscaled + (
        "\nimport transformer_lab.attention as book\n"
        "book.attention = lambda q, k, v, padding=None, causal=False: attention(q, k, v, padding)\n"
        "import transformer_lab.selfcheck.core as core\n"
        "core.PASSED = 'FAILED'\n"
    )
    report = check_file(
        write(tmp_path, "student.py", patched), only=["attention"], limits=FAST
    )
    assert report.results[0].code == "no_scaling"


@pytest.mark.parametrize(
    "top, text",
    [
        ("import sys\nsys.exit(0)\n", "SystemExit at student.py:3 in <module>"),
        (
            "while True:\n    pass\n",
            f"past its time limit ({FAST.seconds:g} s of CPU time)",
        ),
        ("import os\nos._exit(3)\n", "exit status 3"),
    ],
    ids=["exit", "loop", "os-exit"],
)
def test_a_file_that_stops_while_loading_is_one_line(tmp_path, top, text):
    path = write(tmp_path, "student.py", "import math\n" + top + SOLUTION)
    report = check_file(path, limits=FAST)
    assert report.load_error is not None and text in report.load_error
    assert "\n" not in report.load_error


def test_a_worker_that_cannot_import_the_book_blames_the_set_up_not_the_student(
    tmp_path, monkeypatch
):
    # A Python whose packages the worker cannot reach (a .pth outside sys.prefix, a --user
    # install) ends before any line of the student's runs: the message says so and what to do.
    from transformer_lab.selfcheck.worker import isolation

    monkeypatch.setenv("SELFCHECK_ISOLATION", "process")  # the worker must see our start
    monkeypatch.setattr(isolation, "START", "import no_such_package_for_the_self_check")
    report = check_file(write(tmp_path, "student.py", SOLUTION), limits=FAST)
    assert "not your code" in report.load_error and ".venv/bin/python" in report.load_error
    assert "your code ended" not in report.load_error
    assert "No module named 'no_such_package_for_the_self_check'" in report.load_output
