"""Gradescope's path rehearsed without Docker, as Gradescope runs it: as root, with bubblewrap
failing as Docker's seccomp profile makes it fail (a ``bwrap`` on PATH that exits 1), with the
``/autograder`` paths overridden, and no flag. The student's code then runs as an unprivileged
user. A right file earns every point; none of the known attacks on the grader earns a point, reads a
hidden file, changes a file or outlives its check.

The worker's interpreter must be readable by that user: this machine's is under ``/root``, so
the rehearsal runs from a copy every user may read, made of hard links (no data is copied), as
``autograder_files/setup.sh`` installs one in ``/opt``. Slow: about two minutes in all.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from transformer_lab_instructor.solutions import SOLUTION, STRETCH

from classroom import with_body
from transformer_lab.selfcheck.worker.isolation import SPARE_UID

ROOT = Path(__file__).resolve().parents[1]
# Gradescope is another place the book runs, so the rehearsal runs with the portability tests
# (`make test-portability`, CI's job of its own on every push).
pytestmark = [
    pytest.mark.portability,
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or os.geteuid() != 0,
        reason="the rehearsal runs as root, as Gradescope does",
    ),
]
DOCKER_BWRAP = "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n"
_HELD = []  # the lock of this run's block of uids, held while the tests run


def rehearsal_uids(size: int = 16) -> range:
    """A block of worker uids that this test run alone uses: a second test run on the machine
    (`make test` beside `make test`) locks another block, so neither counts the other's workers
    as its own, nor kills them."""
    folder = Path(tempfile.gettempdir()) / "selfcheck-rehearsal-uid-blocks"
    folder.mkdir(mode=0o700, exist_ok=True)
    for block in itertools.count():
        # A bare descriptor, held until the run ends (a file object would be reported unclosed
        # at exit, in every pytest worker that collects this module).
        held = os.open(folder / str(block), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(held)
            continue
        _HELD.append(held)
        first = SPARE_UID + 1000 + size * block
        return range(first, first + size)
    raise AssertionError("unreachable")


WORKER_UIDS = rehearsal_uids()


def open_folder(name: str) -> Path:
    """A fresh folder in the system's temporary folder that other users may pass through
    (pytest's own is closed to them, and a concurrent pytest run closes it again)."""
    folder = Path(tempfile.mkdtemp(prefix=f"selfcheck-rehearsal-{name}-"))
    os.chmod(folder, 0o711)
    return folder


@pytest.fixture(scope="session")
def runtime() -> dict[str, str]:
    """A world-readable interpreter and packages (hard links to this one), and its environment."""
    root = open_folder("runtime")
    os.chmod(root, 0o755)
    base = root / "python"
    subprocess.run(["cp", "-al", sys.base_prefix, str(base)], check=True)
    venv = root / "venv"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / version).mkdir(parents=True)
    subprocess.run(
        ["cp", "-al", sysconfig.get_paths()["purelib"], str(venv / "lib" / version)],
        check=True,
    )
    (venv / "bin" / "python").symlink_to(base / "bin" / version)
    (venv / "pyvenv.cfg").write_text(
        f"home = {base / 'bin'}\ninclude-system-site-packages = false\n"
    )
    fake = root / "fake-bin"
    fake.mkdir()
    (fake / "bwrap").write_text(DOCKER_BWRAP)
    (fake / "bwrap").chmod(0o755)
    yield {
        "AUTOGRADER_PYTHON": str(venv / "bin" / "python"),
        "LD_LIBRARY_PATH": str(base / "lib"),
        "PATH": f"{fake}:{os.environ['PATH']}",
        "SELFCHECK_FIRST_UID": str(WORKER_UIDS.start),
    }
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def tmp_path():
    """This file's temporary folders are open to other users (see :func:`open_folder`)."""
    folder = open_folder("test")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def autograder(tmp_path) -> Path:
    """``/autograder`` in a temporary folder: source (package, instructor's package, scripts,
    a course secret), submission, results."""
    home = tmp_path / "autograder"
    source = home / "source"
    shutil.copytree(ROOT / "code" / "transformer_lab", source / "code" / "transformer_lab")
    instructor = ROOT / "instructor" / "transformer_lab_instructor"
    shutil.copytree(instructor, source / "instructor" / "transformer_lab_instructor")
    for name in ("run_autograder", "setup.sh"):
        shutil.copy(instructor / "autograder_files" / name, source / name)
    (source / "course_secret").write_text("rehearsal secret\n")
    (home / "submission").mkdir()
    return home


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


def worker_processes() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid in WORKER_UIDS:
                with open(f"/proc/{entry}/stat") as handle:
                    if handle.read().rsplit(")", 1)[1].split()[0] not in "ZX":
                        found.append(int(entry))
        except OSError:
            pass
    return found


def grade(autograder: Path, runtime: dict, text: str, page: str = "homework") -> dict:
    """Run ``run_autograder`` on ``text``; results.json, checked a moment later (a daemon
    would have rewritten it by then)."""
    (autograder / "submission" / "starter.py").write_text(text, encoding="utf-8")
    results = autograder / "results" / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SELFCHECK_")}
    env.update(
        runtime,
        AUTOGRADER_SOURCE=str(autograder / "source"),
        AUTOGRADER_SUBMISSION=str(autograder / "submission"),
        AUTOGRADER_RESULTS=str(results),
        AUTOGRADER_TIME_LIMIT="5",
        AUTOGRADER_PAGE=page,
    )
    done = subprocess.run(
        [str(autograder / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    written = results.read_text(encoding="utf-8")
    time.sleep(2)
    assert results.read_text(encoding="utf-8") == written, (
        "results.json changed after the run"
    )
    assert worker_processes() == [], "a process of the worker's user outlived the run"
    data = json.loads(written)
    data["stdout"] = done.stdout
    return data


def hidden(data: dict) -> dict[str, dict]:
    return {
        t["name"].removeprefix("Hidden check, "): t
        for t in data["tests"]
        if t["visibility"] == "after_due_date"
    }


def everything_wrong() -> str:
    """The homework with every function returning a wrong answer."""
    source = SOLUTION + STRETCH
    for name in (
        "accuracy",
        "masked_mean",
        "attention",
        "embedding_parameters",
        "train_bpe_tokenizer",
        "tokens_per_word",
        "causal_padding_mask",
        "multi_head_attention",
    ):
        source = with_body(source, name, "return None")
    return source


def test_a_right_file_earns_full_marks_as_an_unprivileged_user_with_no_flag(
    autograder, runtime
):
    data = grade(autograder, runtime, SOLUTION + STRETCH)
    assert data["extra_data"]["isolation"] == "unprivileged user", data["stdout"][-2000:]
    assert all(t["status"] == "passed" for t in data["tests"]), data["tests"]
    assert data["score"] == 8 and data["max_score"] == 6
    # the hidden inputs' seed comes from the course secret and the file: a regrade draws the same
    again = grade(autograder, runtime, SOLUTION + STRETCH)
    assert again["extra_data"]["hidden_seed"] == data["extra_data"]["hidden_seed"]
    assert os.stat(autograder / "source").st_mode & 0o077 == 0, "the source is root's alone"


def test_the_week20_repair_that_keeps_the_broken_class_import_of_pad_id_passes(
    autograder, runtime
):
    from transformer_lab_instructor.solutions import WEEK20

    repair = textwrap.dedent(
        """
        from transformer_lab.char_transformer import PAD_ID


        def repaired_forward(model, ids, padding):
            padding = ids == PAD_ID  # which characters are padding
            x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
            x = model.encoder(x.transpose(0, 1), src_key_padding_mask=padding).transpose(0, 1)
            return model.head(masked_mean(x, padding)).squeeze(-1)
        """
    )
    data = grade(autograder, runtime, WEEK20 + repair, page="week-20")
    assert (
        hidden(data)["Task 4: repaired_forward(model, ids, padding)"]["status"] == "passed"
    )


ATTACKS = {
    # an in-process guard disarmed through the garbage collector, then every function wrong
    "gc_disarm": "import gc\nfor o in gc.get_objects():\n"
    "    try:\n        o.armed = False\n    except Exception:\n        pass\n",
    # a daemon (double fork, setsid, execv) that rewrites results.json once it is written
    "daemon": textwrap.dedent(
        """
        import os, sys
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                loop = ("import time, json\\n"
                        "for _ in range(400):\\n"
                        "    try:\\n"
                        "        forged = {{'score': 6, 'max_score': 6, 'tests': []}}\\n"
                        "        open({results!r}, 'w').write(json.dumps(forged))\\n"
                        "    except OSError:\\n"
                        "        pass\\n"
                        "    time.sleep(0.05)\\n")
                os.execv(sys.executable, [sys.executable, "-c", loop])
            os._exit(0)
        """
    ),
    # forge 8/6, then kill the grader (and every process it can)
    "forge_and_kill": textwrap.dedent(
        """
        import os, signal
        try:
            open({results!r}, 'w').write('{{"score": 8, "max_score": 6, "tests": []}}')
        except OSError:
            pass
        for pid in os.listdir('/proc'):
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        """
    ),
    # read the instructor's references, write into the source tree
    "read_and_write": textwrap.dedent(
        """
        import glob
        STOLEN = {{}}
        for path in glob.glob({source!r} + '/**/*.py', recursive=True):
            try:
                STOLEN[path] = open(path).read()
            except OSError:
                pass
            try:
                open(path, 'a').write('# changed by a submission')
            except OSError:
                pass
        try:
            exec(open({references!r}).read(), globals())
        except OSError:
            pass
        """
    ),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_no_attack_earns_a_point_reads_a_hidden_file_changes_one_or_outlives_its_check(
    autograder, runtime, attack
):
    source = autograder / "source"
    before = tree_digest(source)
    references = source / "instructor" / "transformer_lab_instructor" / "references.py"
    results = autograder / "results" / "results.json"
    prelude = ATTACKS[attack].format(
        results=str(results), source=str(source), references=str(references)
    )
    text = everything_wrong() + "\n" + prelude + "\n"
    if (
        attack == "read_and_write"
    ):  # a hidden file read would show in a passing stretch check
        text += "\nif 'multi_head_attention' in globals() and STOLEN:\n    raise SystemExit('read')\n"
    data = grade(autograder, runtime, text)
    assert data["extra_data"]["isolation"] == "unprivileged user", data["stdout"][-3000:]
    assert sum(t["score"] for t in hidden(data).values()) == 0, hidden(data)
    assert data["score"] == 0, data["tests"]
    assert tree_digest(source) == before, "the submission changed the source"


def test_a_daemon_cannot_rewrite_the_csv_after_grade_exits(tmp_path, runtime):
    folder = tmp_path / "class"
    folder.mkdir()
    out = tmp_path / "out" / "grades.csv"
    out.parent.mkdir()
    daemon = ATTACKS["daemon"].replace("results", "csv").format(csv=str(out))
    (folder / "a_daemon.py").write_text(everything_wrong() + daemon, encoding="utf-8")
    (folder / "b_right.py").write_text(SOLUTION + STRETCH, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SELFCHECK_")}
    env.update(runtime, PYTHONPATH=str(ROOT / "code"))
    command = [runtime["AUTOGRADER_PYTHON"], "-m", "transformer_lab.selfcheck", "grade"]
    command += [str(folder), "--csv", str(out), "--jobs", "2", "--time-limit", "5"]
    # a folder other users can open is refused: a submission could read a classmate's file
    opened = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert opened.returncode == 2 and f"chmod 700 {folder}" in opened.stdout, opened.stdout
    folder.chmod(0o700)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "isolation: unprivileged user" in done.stdout
    written = out.read_text()
    time.sleep(2)
    assert out.read_text() == written and worker_processes() == []
    rows = [line.split(",") for line in written.splitlines()[1:]]
    assert all(r[3] != "passed" for r in rows if r[0] == "a_daemon.py")
    assert all(r[3] == "passed" for r in rows if r[0] == "b_right.py")


def test_without_root_or_bubblewrap_grading_says_what_to_install(tmp_path, runtime):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SELFCHECK_")}
    env.update(runtime, PYTHONPATH=str(ROOT / "code"))
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "a.py").write_text(SOLUTION)
    (tmp_path / "out").mkdir(mode=0o777)
    os.chmod(tmp_path / "out", 0o777)
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={SPARE_UID + 7}",
            f"--regid={SPARE_UID + 7}",
            "--clear-groups",
            runtime["AUTOGRADER_PYTHON"],
            "-m",
            "transformer_lab.selfcheck",
            "grade",
            str(tmp_path / "class"),
            "--csv",
            str(tmp_path / "out" / "grades.csv"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "apt-get install bubblewrap" in done.stdout and "root" in done.stdout
