"""Attacks by hostile submissions on the worker, and what defeats them (the level's isolation,
the kernel's limits, the grader's decoding). Each test plants an attack in a student's file and
checks that it earns nothing, harms no classmate and leaves nothing behind. Short time limits keep them fast."""

import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from classroom import submission
from selfcheck.processes import processes
from selfcheck.solutions import SOLUTION, STRETCH, with_body, write
from transformer_lab.selfcheck import FAILED, NOT_RUN, PASSED, TIMED_OUT, Limits, check_file
from transformer_lab.selfcheck.grading.cli import main
from transformer_lab.selfcheck.worker.isolation import BUBBLEWRAP, isolation

FAST = Limits(seconds=2.0)
needs_bubblewrap = pytest.mark.skipif(
    isolation().level != BUBBLEWRAP, reason="bubblewrap does not work on this machine"
)
ROOT = Path(__file__).resolve().parents[2]


def statuses(report):
    return {r.name: (r.status, r.code) for r in report.results}


def processes_mentioning(token: str) -> list[int]:
    return processes(token.encode())


def no_process_left(token: str, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while processes_mentioning(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def hostile_classmate(folder: Path, outside: Path, results: Path, token: str) -> str:
    """A submission that tries to harm everyone else, then passes where it can."""
    return (
        f"""
import os, signal, time

def _try(what, action):
    try:
        action()
        print("DID", what)
    except BaseException as error:
        print("refused", what, type(error).__name__)

_try("overwrite a classmate", lambda: open({str(folder / "alice.py")!r}, "w").write("x = 1"))
_try("read a classmate", lambda: exec(open({str(folder / "alice.py")!r}).read()))
_try("write outside", lambda: open({str(outside)!r}, "w").write("x"))
_try("forge results", lambda: open({str(results)!r}, "w").write("submission\\nforged"))
_try("signal the grader", lambda: os.kill({os.getpid()}, signal.SIGUSR1))
_try("list the submissions", lambda: print(os.listdir({str(folder)!r})))

if os.fork() == 0:  # a daemon in its own session, that outlives its parent
    os.setsid()
    if os.fork() == 0:
        while True:
            time.sleep(0.05)
    os._exit(0)
# {token}
"""
        + SOLUTION
    )


@needs_bubblewrap
def test_a_hostile_submission_touches_no_classmate_no_result_and_leaves_nothing(tmp_path):
    """In bubblewrap (the unprivileged user: tests/test_gradescope_rehearsal.py). The process
    level is a student's own check, which holds against mistakes, not attacks."""
    level = BUBBLEWRAP
    folder, token = tmp_path / "class", f"hostile{os.getpid()}{level}"
    folder.mkdir()
    outside, results = tmp_path / "outside.txt", tmp_path / "grades.csv"
    alice = write(folder, "alice.py", SOLUTION + STRETCH)
    write(folder, f"{token}.py", hostile_classmate(folder, outside, results, token))
    write(folder, "zoe.py", SOLUTION + STRETCH)
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: received.append(1))
    try:
        code = main(
            [
                "grade",
                str(folder),
                "--csv",
                str(results),
                "--jobs",
                "2",
                "--time-limit",
                "5",
            ]
        )
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert code == 0 and not received
    assert alice.read_text(encoding="utf-8") == SOLUTION + STRETCH
    assert not outside.exists()
    rows = list(csv.DictReader(results.open(encoding="utf-8")))
    by_file = {}
    for row in rows:
        by_file.setdefault(row["submission"], []).append(row["status"])
    assert by_file["alice.py"] == [PASSED] * 8 and by_file["zoe.py"] == [PASSED] * 8
    assert len(by_file[f"{token}.py"]) == 8
    assert no_process_left(token)


def test_hostile_text_from_a_worker_gives_complete_valid_results(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    nasty = "\\udcff \\x1b[2K\\r[passed] =cmd|' /C calc'!A0 " + "x" * 300_000
    write(
        folder,
        "=SUM(A1).py",
        with_body(SOLUTION, "accuracy", f"print({nasty!r}); raise ValueError({nasty!r})"),
    )
    (folder / os.fsdecode(b"caf\xe9.py")).write_bytes(
        b"def accuracy(l, y):\n    return 1.0\n"
    )
    out_csv, out_json = tmp_path / "grades.csv", tmp_path / "grades.json"
    assert (
        main(
            ["grade", str(folder), "--csv", str(out_csv), "--json", str(out_json)]
            + ["--only", "accuracy", "masked_mean", "--time-limit", "5"]
        )
        == 0
    )
    text = out_csv.read_bytes().decode("utf-8")  # strict: valid UTF-8
    assert "\x1b" not in text and "\r[passed]" not in text
    rows = list(csv.DictReader(text.splitlines()))
    assert len(rows) == 4
    assert {row["submission"] for row in rows} == {"'=SUM(A1).py", "caf\ufffd.py"}
    assert all(not row["message"].startswith(("=", "+", "-", "@")) for row in rows)
    data = json.loads(out_json.read_bytes().decode("utf-8"))
    assert len(data) == 2 and all(len(entry["checks"]) == 2 for entry in data)


class_tokenizers = """
from tokenizers import pre_tokenizers


class Stall:
    def pre_tokenize(self, pretok):
        while True:
            pass


def train_bpe_tokenizer(corpus, vocab_size):
    tokenizer = _train(corpus, vocab_size)
    tokenizer.pre_tokenizer = pre_tokenizers.PreTokenizer.custom(Stall())
    return tokenizer
"""


def test_a_returned_tokenizer_runs_in_the_worker_under_the_time_limit(tmp_path):
    source = SOLUTION.replace("def train_bpe_tokenizer(", "def _train(") + class_tokenizers
    path = write(tmp_path, "student.py", source)
    start = time.monotonic()
    report = check_file(path, only=["train_bpe_tokenizer"], limits=FAST)
    assert report.results[0].status in (TIMED_OUT, "raised an error"), report.results[0]
    assert time.monotonic() - start < 60


def test_the_source_is_read_as_python_reads_it(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    body = "def embedding_parameters(vocab_size, d):\n    return vocab_size * d  # café\n"
    (folder / "latin1.py").write_bytes(body.encode("latin-1"))
    (folder / "declared.py").write_bytes(
        b"# -*- coding: latin-1 -*-\n" + body.encode("latin-1")
    )
    (folder / "bom.py").write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    out = tmp_path / "grades.csv"
    main(["grade", str(folder), "--csv", str(out), "--only", "embedding_parameters"])
    rows = {r["submission"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert rows["declared.py"]["status"] == PASSED and rows["bom.py"]["status"] == PASSED
    assert rows["latin1.py"]["status"] == NOT_RUN
    assert "SyntaxError" in rows["latin1.py"]["message"]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "ten"])
def test_a_bad_time_limit_is_refused_before_any_work(tmp_path, capsys, value):
    write(tmp_path, "loop.py", "while True: pass\n")
    with pytest.raises(SystemExit) as stopped:
        main(
            [
                "grade",
                str(tmp_path),
                "--csv",
                str(tmp_path / "g.csv"),
                "--time-limit",
                value,
            ]
        )
    assert stopped.value.code == 2
    assert "--time-limit" in capsys.readouterr().err


def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys):
    write(tmp_path, "loop.py", "while True: pass\n")
    start = time.monotonic()
    with pytest.raises(SystemExit):
        main(["grade", str(tmp_path), "--csv", str(tmp_path / "missing" / "g.csv")])
    assert "does not exist" in capsys.readouterr().err
    assert time.monotonic() - start < 5


def test_a_missing_submission_still_gets_a_zero_score_results_file(tmp_path, capsys):
    results = tmp_path / "results.json"
    assert main([str(tmp_path / "starter.py"), "--gradescope", str(results)]) == 2
    data = json.loads(results.read_text(encoding="utf-8"))
    assert data["score"] == 0 and len(data["tests"]) == 8
    assert all("no such file" in test["output"] for test in data["tests"])


# The grader as a terminal starts it: SIGINT and SIGHUP at their defaults and unblocked. A test
# run started in the background by a non-interactive shell ignores SIGINT (and one under nohup
# SIGHUP); a child inherits that, and Python then installs no KeyboardInterrupt handler at all.
AS_FROM_A_TERMINAL = (
    "import os, signal, sys\n"
    "for s in (signal.SIGINT, signal.SIGHUP):\n"
    "    signal.signal(s, signal.SIG_DFL)\n"
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGHUP})\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
)
# What a signal may take to end the grader: it kills its workers, waits for them, writes the
# results and exits (about 0.1 s unloaded; 10 s was exceeded at load 10 on 2 cores). The subject
# is that it does not wait out the looping check's 600 s limit, so the bound is generous.
SIGNAL_SECONDS = 30


def start_grader(folder: Path, out: Path, *extra: str) -> subprocess.Popen:
    command = ["-m", "transformer_lab.selfcheck", "grade", ".", "--csv", str(out), *extra]
    return subprocess.Popen(
        [sys.executable, "-c", AS_FROM_A_TERMINAL, *command],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def signal_and_time(grader: subprocess.Popen, signum: int) -> tuple[float, str]:
    """Send ``signum``; the seconds until the grader ended, and what it printed meanwhile."""
    start = time.monotonic()
    grader.send_signal(signum)
    rest, _ = grader.communicate(timeout=6 * SIGNAL_SECONDS)
    return time.monotonic() - start, rest


@pytest.fixture
def grader_box():
    """Started graders, killed after the test whatever happened (none outlives a failure)."""
    started: list[subprocess.Popen] = []
    yield started
    for grader in started:
        if grader.poll() is None:
            grader.kill()
            grader.communicate()


def wait_for_worker(token: str, grader: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not processes_mentioning(token):
        assert grader.poll() is None and time.monotonic() < deadline, "no worker started"
        time.sleep(0.05)


def test_ctrl_c_writes_what_was_graded_and_exits_130_and_stdlib_names_are_not_shadowed(
    tmp_path, grader_box
):
    folder, out = tmp_path / "class", tmp_path / "grades.csv"
    folder.mkdir()
    write(folder, "alice.py", SOLUTION)
    write(folder, "inspect.py", "raise SystemExit('the grader imported inspect.py')\n")
    write(folder, "random.py", "raise SystemExit('the grader imported random.py')\n")
    token = f"loops{os.getpid()}"
    write(folder, f"{token}.py", with_body(SOLUTION, "accuracy", "while True: pass"))
    grader = start_grader(folder, out, "--jobs", "1", "--time-limit", "600")
    grader_box.append(grader)
    lines = []
    for line in grader.stdout:
        lines.append(line)
        if line.startswith("alice.py:"):
            break
    wait_for_worker(token, grader)
    seconds, rest = signal_and_time(grader, signal.SIGINT)
    assert grader.returncode == 130, "".join(lines) + rest
    assert seconds < SIGNAL_SECONDS, f"Ctrl-C took {seconds:.1f} s"
    graded = {row["submission"] for row in csv.DictReader(out.open(encoding="utf-8"))}
    assert graded == {"alice.py", "inspect.py"}
    assert no_process_left(token)


def printed(runs: Path, marker: str) -> bool:
    """Has a worker's output file under ``runs`` got ``marker``? (Another grader's folder may
    vanish while it is listed.)"""
    try:
        return any(
            marker in log.read_text(errors="replace")
            for log in runs.glob("selfcheck-runs-*/*.out")
        )
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("when", ["starting", "checking"])
def test_a_killed_grader_leaves_no_worker_behind(tmp_path, grader_box, when):
    """SIGHUP (a closed terminal) while a worker starts (loading torch) or runs student code."""
    folder, out = tmp_path / "class", tmp_path / "grades.csv"
    folder.mkdir()
    token = f"orphan{os.getpid()}{when}"
    marker = f"loaded-{token}"  # the worker prints it once the file loads
    source = f"print({marker!r}, flush=True)\n" + SOLUTION
    write(folder, f"{token}.py", with_body(source, "accuracy", "while True: pass"))
    grader = start_grader(folder, out, "--time-limit", "600")
    grader_box.append(grader)
    wait_for_worker(token, grader)
    if when == "checking":
        runs = Path(tempfile.gettempdir())
        deadline = time.monotonic() + 120
        while not printed(runs, marker):
            assert time.monotonic() < deadline, "the file did not load"
            time.sleep(0.05)
        time.sleep(0.5)  # into the checks: attention, masked_mean, then the loop
    seconds, _ = signal_and_time(grader, signal.SIGHUP)
    assert grader.returncode == -signal.SIGHUP
    assert seconds < SIGNAL_SECONDS, f"SIGHUP took {seconds:.1f} s"
    # While checking, the worker dies with the grader (its parent-death signal). While starting, a
    # hang-up can land before bubblewrap has set its own (0.8 does not look at its parent again):
    # then bubblewrap and the worker outlive the grader until the worker finds the grader's end
    # of its socket closed (before importing torch, or once it is loaded) and ends without
    # loading the file.
    assert no_process_left(token, seconds=5 if when == "checking" else SIGNAL_SECONDS)
    assert when == "checking" or not printed(Path(tempfile.gettempdir()), marker)
    assert not out.exists()


def test_a_mixed_class_grades_the_same_with_one_job_or_two_and_nothing_else_is_touched(
    tmp_path,
):
    folder = tmp_path / "class"
    folder.mkdir()
    # One file of each kind of a class (right, wrong, unfinished, hostile: an endless loop), as
    # make bench's class has them. Two jobs grade them two at a time, and the rows must still come
    # back the same, in the same order. (Each file costs a fresh worker importing torch: 6 files
    # graded twice were 12 of them, for no kind of file more.)
    for index in (0, 2, 4, 5):
        write(folder, f"s{index:03d}.py", submission(index, 6))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    tables = []
    for jobs in ("1", "2"):
        out = tmp_path / f"grades{jobs}.csv"
        command = ["grade", str(folder), "--csv", str(out), "--jobs", jobs]
        assert main([*command, "--time-limit", "1"]) == 0
        rows = csv.DictReader(out.open(encoding="utf-8"))
        tables.append([{k: v for k, v in row.items() if k != "seconds"} for row in rows])
    assert tables[0] == tables[1] and len(tables[0]) == 4 * 8
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "class",
        "grades1.csv",
        "grades2.csv",
    ]


# A second attack pass: each submission below attacks one way; one grading of the whole class
# (the fixture) is read by the tests that follow. A correct classmate, alice, must still pass.
ONLY = [
    "attention",
    "masked_mean",
    "accuracy",
    "embedding_parameters",
    "multi_head_attention",
]
# Replies forged by replacing the worker's encoder: one 8 MB tensor named 100 times (800 MB
# if unpacked), and a list nested 20,000 deep.
FORGED = """
import sys
import transformer_lab.selfcheck.transport as transport

sys.setrecursionlimit(100_000)
_big = bytes(8 * 2**20)
_NODE = ("array", "tensor", "|u1", [len(_big)], _big)


def _forged(value, depth=0, keep=None):
    if KIND == "bomb":
        return ("list", [_NODE] * 100)
    deep = ("plain", 0)
    for _ in range(20_000):
        deep = ("list", [deep])
    return deep


transport.encode = _forged
"""
RETURNS = """
class Evil(torch.Tensor):
    def __reduce_ex__(self, protocol):
        return (exec, ("import os; os.kill(os.getpid(), 9)",))

    def __eq__(self, other):
        return True


class LooksLikeATensor:
    __class__ = property(lambda self: torch.Tensor)
    dtype, layout = torch.float32, torch.strided


def embedding_parameters(vocab_size, d):
    return Evil(torch.tensor(float(vocab_size * d + 1)))


def masked_mean(x, padding):
    return LooksLikeATensor()


def accuracy(logits, labels):
    deep = []
    for _ in range(100_000):
        deep = [deep]
    return deep
"""
PATCHES = """
import builtins, math
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.Tensor.__eq__ = lambda *a: True
math.isclose = lambda *a, **k: True
builtins.abs = lambda x: 0
"""
# A detached masked mean (computed in NumPy) with the worker's gradient report forged: every
# input "reached", with made-up gradients. The checking process computes the true ones.
FORGED_GRADIENT = """
import transformer_lab.selfcheck.execution as execution


def masked_mean(x, padding):
    keep = (~padding).numpy()[..., None]
    mean = (x.detach().numpy() * keep).sum(1) / keep.sum(1)
    return torch.tensor(mean, dtype=x.dtype).requires_grad_(x.requires_grad)


def _forged(function, args, names, pick, *rest, **options):
    report = execution.GradientReport(True, dict.fromkeys(names, "finite"))
    report.gradients = {
        n: torch.ones(torch.as_tensor(a).shape, dtype=torch.float64) for n, a in zip(names, args)
    }
    return report


execution.execute_gradient = _forged
"""


@pytest.fixture(scope="module")
def attack_class(tmp_path_factory):
    """The class, graded once: {file: {check: (status, code, message)}}, the CSV rows, alice."""
    root = tmp_path_factory.mktemp("attacks")
    folder = root / "class"
    folder.mkdir()
    alice = write(folder, "alice.py", SOLUTION + STRETCH)
    (root / "answer_key.py").write_text(SOLUTION + STRETCH, encoding="utf-8")
    for kind in ("bomb", "deep"):
        write(folder, f"forged_{kind}.py", SOLUTION + f"KIND = {kind!r}\n" + FORGED)
    write(folder, "returns.py", SOLUTION + RETURNS)
    wrong = SOLUTION.replace("return vocab_size * d", "return vocab_size + d")
    write(folder, "patches.py", wrong.replace("/ keep.sum(1)", "") + PATCHES)
    write(folder, "forged_gradient.py", SOLUTION + FORGED_GRADIENT)
    (folder / "link_to_alice.py").symlink_to(alice)
    (folder / "link_to_key.py").symlink_to(root / "answer_key.py")
    (folder / "a_folder.py").mkdir()
    os.mkfifo(folder / "a_fifo.py")
    write(folder, "new\nline.py", SOLUTION)
    out_csv, out_json = root / "grades.csv", root / "grades.json"
    command = ["grade", str(folder), "--csv", str(out_csv), "--json", str(out_json)]
    assert main([*command, "--time-limit", "3", "--jobs", "2", "--only", *ONLY]) == 0
    rows = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    results = {}
    for report in json.loads(out_json.read_text(encoding="utf-8")):
        results[report["file"]] = {
            c["check"]: (c["status"], c["code"], c["message"]) for c in report["checks"]
        }
    return results, rows, alice


def test_every_entry_gets_its_rows_and_a_classmate_still_passes(attack_class):
    results, rows, alice = attack_class
    assert len(rows) == 11 * len(ONLY) and len(results) == 11
    assert {row["submission"] for row in rows} >= {"new\\x0aline.py", "a_fifo.py"}
    assert all(status == PASSED for status, _, _ in results["alice.py"].values())
    assert alice.read_text(encoding="utf-8") == SOLUTION + STRETCH


def test_links_folders_and_fifos_are_refused_not_followed(attack_class):
    results, _, _ = attack_class
    for name, why in [
        ("link_to_alice.py", "symbolic link"),
        ("link_to_key.py", "symbolic link"),
        ("a_folder.py", "is a folder"),
        ("a_fifo.py", "not a regular file"),
    ]:
        assert all(
            status == NOT_RUN and why in message
            for status, _, message in results[name].values()
        ), (name, results[name])


def test_forged_replies_cannot_flood_the_grader(attack_class):
    results, _, _ = attack_class
    for name, text in [("forged_bomb.py", "too large"), ("forged_deep.py", "nested more")]:
        for check, (status, _, message) in results[name].items():
            if check != "multi_head_attention":  # not in the file: not attempted
                assert status == "raised an error" and text in message, (check, message)


def test_hostile_returns_and_patched_comparisons_earn_nothing(attack_class):
    results, _, _ = attack_class
    for check in ("embedding_parameters", "masked_mean", "accuracy"):
        assert results["returns.py"][check][0] != PASSED, results["returns.py"][check]
    for check in ("embedding_parameters", "masked_mean"):
        assert results["patches.py"][check][0] != PASSED, results["patches.py"][check]


def test_a_forged_gradient_report_does_not_pass_a_detached_function(attack_class):
    got = attack_class[0]["forged_gradient.py"]
    assert got["masked_mean"][:2] == (FAILED, "wrong_gradient"), got["masked_mean"]
    assert got["accuracy"][0] == PASSED, got  # a check without gradients is unaffected


@needs_bubblewrap
def test_no_route_signals_the_grader(tmp_path):
    """A pidfd, a fork: in a sandbox the grader's pid does not exist."""
    level = BUBBLEWRAP
    source = (
        SOLUTION
        + f"""
import os, signal


def embedding_parameters(vocab_size, d):
    for attempt in (
        lambda: signal.pidfd_send_signal(os.pidfd_open({os.getpid()}), signal.SIGUSR1),
        lambda: __import__("posix").pidfd_open({os.getpid()}),
        lambda: os.fork() or os._exit(0),
    ):
        try:
            attempt()
            print("DID")
        except BaseException:
            pass
    return vocab_size * d
"""
    )
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: received.append(1))
    try:
        path = write(tmp_path, "student.py", source)
        report = check_file(path, only=["embedding_parameters"], limits=FAST)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert report.isolation == level and not received
    assert report.results[0].status == PASSED
