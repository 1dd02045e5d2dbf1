"""transformer_lab.selfcheck.isolation and sandbox: attacks by hostile submissions, and what defeats
them. Each test plants an attack in a student's file and checks that it earns nothing,
harms no classmate and leaves nothing behind. Short time limits keep them fast."""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from classroom import write_class
from selfcheck.solutions import SOLUTION, STRETCH, with_body, write
from transformer_lab.selfcheck import FAILED, NOT_RUN, PASSED, TIMED_OUT, Limits, check_file
from transformer_lab.selfcheck.cli import main
from transformer_lab.selfcheck.isolation import (
    BUBBLEWRAP,
    PACKAGE,
    PROCESS,
    WORKER_MODULES,
    isolation,
    project_root,
)
from transformer_lab.selfcheck.sandbox import SKELETON_MODULES

FAST = Limits(seconds=2.0)
ROOT = Path(__file__).resolve().parents[2]
LEVELS = [BUBBLEWRAP, PROCESS] if isolation().level == BUBBLEWRAP else [PROCESS]


@pytest.fixture(params=LEVELS)
def level(request, monkeypatch):
    """Each attack at every isolation level this machine has (the fallback is forced)."""
    if request.param == PROCESS:
        monkeypatch.setenv("SELFCHECK_ISOLATION", PROCESS)
    return request.param


def statuses(report):
    return {r.name: (r.status, r.code) for r in report.results}


def processes_mentioning(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in command:
            found.append(int(entry.name))
    return found


def no_process_left(token: str, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while processes_mentioning(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_the_worker_code_holds_no_answer():
    """The skeleton a worker imports from: no module of it imports another part of the package."""
    allowed = {m.removesuffix(".py").replace("/", ".") for m in WORKER_MODULES}
    allowed = {f"transformer_lab.{m}" for m in allowed} | {
        "transformer_lab",
        "transformer_lab.selfcheck",
    }
    assert allowed - {"transformer_lab.__init__"} == SKELETON_MODULES
    for relative in WORKER_MODULES:
        for line in (PACKAGE / relative).read_text(encoding="utf-8").splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("from", "import"):
                name = words[1].rstrip(",")
                if name.startswith("transformer_lab"):
                    assert name in allowed, (relative, line)


BOOK_ROUTES = f"""
import importlib
import math
import runpy
import torch
import torch.nn.functional as F

from transformer_lab.pooling import masked_mean as _book_mean


def attention(q, k, v, padding):
    book = importlib.import_module("transformer_" + "lab.attention")
    return book.attention(q, k, v, padding)


def masked_mean(x, padding):
    return _book_mean(x, padding)


masked_mean.__module__ = __name__


def accuracy(logits, labels):
    namespace = runpy.run_path({str(PACKAGE / "metrics.py")!r})
    return namespace["accuracy"](logits, labels)


def embedding_parameters(vocab_size, d):
    source = open({str(ROOT / "tests" / "selfcheck" / "solutions.py")!r}).read()
    namespace = {{}}
    exec(source, namespace)
    exec(namespace["SOLUTION"], namespace)
    return namespace["embedding_parameters"](vocab_size, d)


def causal_padding_mask(padding, _mask=importlib.import_module("transformer_lab.attention").causal_mask):
    return _mask(padding.shape[1])[None] | padding[:, None, :]


def train_bpe_tokenizer(corpus, vocab_size):
    from transformer_lab import tokenizer

    return tokenizer.train_bpe_tokenizer(corpus, vocab_size)


def multi_head_attention(x, padding, mha):
    sdpa = getattr(torch.nn.functional, "scaled_dot_" + "product_attention")
    b, l, d = x.shape
    h = mha.num_heads
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    split = lambda t: t.reshape(b, l, h, d // h).transpose(1, 2)
    mixed = sdpa(split(q), split(k), split(v), attn_mask=~padding[:, None, None, :])
    return F.linear(mixed.transpose(1, 2).reshape(b, l, d), mha.out_proj.weight, mha.out_proj.bias)
"""


def test_the_books_answers_cannot_be_reached_by_any_route(tmp_path, level):
    counts = "\n\ndef tokens_per_word(tokenizer, words):\n"
    counts += "    return {w: len(tokenizer.encode(w).tokens) for w in words}\n"
    path = write(tmp_path, "student.py", BOOK_ROUTES + counts)
    report = check_file(path, limits=FAST)
    assert report.isolation == level
    got = statuses(report)
    for name in ("attention", "causal_padding_mask", "train_bpe_tokenizer"):
        assert got[name] == (FAILED, "book_implementation"), (name, got[name])
    assert got["masked_mean"] in (
        (FAILED, "book_implementation"),
        (FAILED, "imported_answer"),
    )
    assert got["multi_head_attention"] == (FAILED, "library_attention")
    for name in ("accuracy", "embedding_parameters"):  # the source on disk is out of reach
        assert got[name][0] != PASSED, (name, got[name])
    assert got["tokens_per_word"] == (PASSED, None)


LIBRARY_ROUTES = """
import torch


def attention(q, k, v, padding, _fused=torch.ops.aten.scaled_dot_product_attention):
    try:
        out = _fused(q, k, v, attn_mask=~padding[:, None, :])
    except BaseException:
        out = None  # caught: the call is still reported
    scores = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(padding[:, None, :], float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def multi_head_attention(x, padding, mha):
    return mha(x, x, x, key_padding_mask=padding)[0]
"""


def test_library_attention_is_refused_whatever_the_route(tmp_path):
    path = write(tmp_path, "student.py", LIBRARY_ROUTES)
    report = check_file(path, only=["attention", "multi_head_attention"], limits=FAST)
    got = statuses(report)
    assert got["attention"] == (FAILED, "library_attention")
    assert got["multi_head_attention"] == (FAILED, "library_attention")


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


def test_a_hostile_submission_touches_no_classmate_no_result_and_leaves_nothing(
    tmp_path, level
):
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


def start_grader(folder: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "transformer_lab.selfcheck", "grade", ".", "--csv", str(out)]
        + list(extra),
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_ctrl_c_writes_what_was_graded_and_exits_130_and_stdlib_names_are_not_shadowed(
    tmp_path,
):
    folder, out = tmp_path / "class", tmp_path / "grades.csv"
    folder.mkdir()
    write(folder, "alice.py", SOLUTION)
    write(folder, "inspect.py", "raise SystemExit('the grader imported inspect.py')\n")
    write(folder, "random.py", "raise SystemExit('the grader imported random.py')\n")
    token = f"loops{os.getpid()}"
    write(folder, f"{token}.py", with_body(SOLUTION, "accuracy", "while True: pass"))
    grader = start_grader(folder, out, "--jobs", "1", "--time-limit", "60")
    lines = []
    for line in grader.stdout:
        lines.append(line)
        if line.startswith("alice.py:"):
            break
    deadline = time.monotonic() + 60
    while not processes_mentioning(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    grader.send_signal(signal.SIGINT)
    rest, _ = grader.communicate(timeout=240)
    assert grader.returncode == 130, "".join(lines) + rest
    graded = {row["submission"] for row in csv.DictReader(out.open(encoding="utf-8"))}
    assert "alice.py" in graded and f"{token}.py" not in graded
    assert no_process_left(token)


def test_a_killed_grader_leaves_no_worker_behind(tmp_path):
    folder, out = tmp_path / "class", tmp_path / "grades.csv"
    folder.mkdir()
    token = f"orphan{os.getpid()}"
    write(folder, f"{token}.py", with_body(SOLUTION, "accuracy", "while True: pass"))
    grader = start_grader(folder, out, "--time-limit", "60")
    deadline = time.monotonic() + 90
    while not processes_mentioning(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_mentioning(token)
    grader.send_signal(signal.SIGHUP)
    grader.wait(180)
    assert no_process_left(token, seconds=5)
    assert not out.exists()


def test_the_hidden_paths_cover_the_project_and_the_package():
    root = project_root()
    assert root is not None and (root / "pyproject.toml").is_file()
    assert PACKAGE.is_relative_to(root)


def test_a_mixed_class_grades_the_same_with_one_job_or_two_and_nothing_else_is_touched(
    tmp_path,
):
    folder = tmp_path / "class"
    write_class(folder, 7)  # 3 right, 2 wrong, 1 unfinished, 1 hostile (an endless loop)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    tables = []
    for jobs in ("1", "2"):
        out = tmp_path / f"grades{jobs}.csv"
        command = ["grade", str(folder), "--csv", str(out), "--jobs", jobs]
        assert main([*command, "--time-limit", "1"]) == 0
        rows = csv.DictReader(out.open(encoding="utf-8"))
        tables.append([{k: v for k, v in row.items() if k != "seconds"} for row in rows])
    assert tables[0] == tables[1] and len(tables[0]) == 7 * 8
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "class",
        "grades1.csv",
        "grades2.csv",
    ]


def test_a_check_may_let_students_build_on_named_book_modules_and_no_others(tmp_path):
    """``Check.book_modules`` (e.g. a class of the book to subclass): real in that worker only;
    ``Check.library_attention``: PyTorch's attention usable there (inside the book's model)."""
    import torch

    from transformer_lab.selfcheck.core import Failed
    from transformer_lab.selfcheck.worker import RemoteFunction, Worker

    source = "from transformer_lab.pooling import masked_mean\n"
    source += "from transformer_lab.attention import attention\n"
    source += "import torch\nfused = torch.nn.functional.scaled_dot_product_attention\n"
    path = write(tmp_path, "student.py", source)
    x, padding = torch.ones(1, 2, 3), torch.tensor([[False, True]])
    modules = ("transformer_lab.pooling",)
    names = ["masked_mean", "attention", "fused"]
    with Worker(path, names, FAST, book_modules=modules, library_attention=True) as worker:
        worker.start()
        worker.begin_check(FAST.seconds)
        mean = RemoteFunction(worker, "masked_mean").call(x, padding).result
        assert torch.equal(mean, torch.ones(1, 3))
        mixed = RemoteFunction(worker, "fused").call(x, x, x).result
        assert tuple(mixed.shape) == (1, 2, 3)
        with pytest.raises(Failed) as failed:
            RemoteFunction(worker, "attention").call(x, x, x, padding)
        assert failed.value.finding.code == "book_implementation"


def test_book_modules_bring_what_they_import_and_the_data_they_load():
    from transformer_lab.selfcheck.isolation import data_folders, with_imports

    needed = with_imports(("transformer_lab.char_transformer",))
    assert {"transformer_lab.datasets", "transformer_lab.pooling"} <= set(needed)
    assert "transformer_lab.attention" not in needed
    assert data_folders(("transformer_lab.char_transformer",)) and not data_folders(())
