"""Deny by default: a worker sees the interpreter, its packages, the book data its check reads
and the one submission, nothing else of the machine, and it does not run as root.
The hostile file lists everything it can open."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from selfcheck.solutions import write
from transformer_lab.selfcheck import Limits
from transformer_lab.selfcheck.isolation import (
    BUBBLEWRAP,
    PACKAGE,
    SANDBOX_SKELETON,
    isolation,
    project_root,
)
from transformer_lab.selfcheck.worker import RemoteFunction, Worker

pytestmark = pytest.mark.skipif(
    isolation().level != BUBBLEWRAP,
    reason="bubblewrap does not work here (the process level hides, it cannot deny)",
)

LIST_EVERYTHING = """
import os
import sys

# The kernel's views, the system's programs and the interpreter's own folders (listed whole,
# they would not fit in a reply).
SKIP = ("/proc", "/sys", "/dev", "/usr", sys.prefix, sys.base_prefix)


def look():
    readable, folders = [], []
    for top, dirs, files in os.walk("/", onerror=lambda error: None):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in SKIP]
        folders.append(top)
        for name in files:
            path = os.path.join(top, name)
            try:
                with open(path, "rb") as handle:
                    handle.read(1)
                readable.append(path)
            except OSError:
                pass
    told, tables = [], []  # what else names paths: mount tables, arguments, environment
    for name in ("/proc/self/mountinfo", "/proc/self/mounts", "/proc/1/mountinfo"):
        try:
            with open(name) as handle:
                told.append(handle.read())
            tables.append(name)
        except OSError:
            pass
    told += sys.argv + [f"{k}={v}" for k, v in os.environ.items()] + sys.path
    return {"uid": os.getuid(), "folders": folders, "readable": readable, "told": told,
            "tables": tables}
"""


@pytest.fixture
def second_book():
    """A copy of the book's package somewhere else on the machine (a backup, another clone)."""
    folder = Path(tempfile.mkdtemp(prefix="selfcheck-second-book-", dir="/var/tmp"))
    shutil.copytree(PACKAGE, folder / "transformer_lab")
    (folder / "answer_key.txt").write_text("the answers\n")
    yield folder
    shutil.rmtree(folder)


def test_a_worker_sees_only_the_interpreter_and_its_submission(tmp_path, second_book):
    (tmp_path / "classmate.py").write_text("def secret(): pass\n")
    path = write(tmp_path, "student.py", LIST_EVERYTHING)
    with Worker(path, ["look"], Limits(seconds=120)) as worker:
        worker.start()
        worker.begin_check(120)
        seen = RemoteFunction(worker, "look").call().result
    assert isinstance(seen, dict), seen
    assert seen["uid"] != 0
    folders, readable = seen["folders"], seen["readable"]
    everything = folders + readable
    # Nothing of the machine beyond the interpreter: no /etc (but the loader's cache), no
    # home, no /root but the interpreter's folder, no second book, no classmate, no project.
    for path in everything:
        assert not path.startswith(str(second_book)), path
        assert not path.startswith(("/home/", "/var/", "/opt/", "/srv/", "/mnt/")), path
        assert not path.startswith("/etc/") or path.startswith("/etc/ld.so"), path
        assert "classmate.py" not in path and "answer_key" not in path, path
        if "transformer_lab" in path:
            assert path.startswith(SANDBOX_SKELETON), path
    top = {p.strip("/").split("/")[0] for p in everything if p != "/"}
    assert "root" not in top or str(Path(os.path.realpath(os.sys.base_prefix))).startswith(
        "/root/"
    )
    assert top <= {"tmp", "dev", "proc", "sys", "usr", "bin", "sbin", "lib", "lib64"} | {
        p.strip("/").split("/")[0]
        for p in (os.sys.prefix, os.sys.base_prefix, os.path.realpath(os.sys.executable))
    } | {"etc"}
    root = project_root()
    if root is not None:
        inside = [p for p in readable if p.startswith(str(root) + "/")]
        venv = os.path.realpath(os.sys.prefix)
        assert all(p.startswith(venv + "/") for p in inside), inside[:5]
    assert any(p.endswith("/student.py") for p in readable)


def test_a_worker_is_told_no_host_path(tmp_path):
    """No mount table (its sources are host paths), and arguments, environment and import path
    that name no folder of the host's but the interpreter's own. Before: /proc/self/mountinfo
    named the skeleton's, the submission's and the data's host folders, and the arguments the
    hidden folders."""
    from transformer_lab.datasets import find_data_dir
    from transformer_lab.selfcheck.isolation import runs_folder, skeleton

    path = write(tmp_path, "student.py", LIST_EVERYTHING)
    book = ("transformer_lab.datasets",)  # a check that reads the book's data
    with Worker(path, ["look"], Limits(seconds=120), book_modules=book) as worker:
        worker.start()
        worker.begin_check(120)
        seen = RemoteFunction(worker, "look").call().result
    assert isinstance(seen, dict), seen
    assert seen["tables"] == []
    interpreter = {os.path.realpath(p) for p in (os.sys.prefix, os.sys.base_prefix)}
    host = [str(tmp_path), runs_folder(), skeleton(book), str(find_data_dir())]
    host += [str(project_root())] if project_root() else []
    for text in seen["told"]:
        for folder in interpreter:  # the interpreter's own path is the one it runs from
            text = text.replace(folder, "<interpreter>")
        for path in host:
            assert os.path.realpath(path) not in text, (path, text[:300])
