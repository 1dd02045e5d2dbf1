"""The clean-up after a worker never follows a symbolic link.

A student's folder is removed by the grader, with the grader's rights. A link in it that points
outside, in a folder the student made read-only, must be removed as a link: what it points to
keeps its mode. As root, removal never fails, so the grader runs as an unprivileged user here
when the tests run as root (``setpriv``), as it did in the attack."""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

CLEAN_UP = """
import os, sys
from transformer_lab.selfcheck.worker import Worker

worker = Worker(sys.argv[1], ["f"])
worker.workdir = sys.argv[2]  # the folder a worker leaves: what kill() removes
worker.kill()
"""


def as_unprivileged_user() -> list[str]:
    if os.getuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: removal would never fail")
    return [setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups"]


@pytest.fixture
def shared_folder():
    """A folder the unprivileged user can reach (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="selfcheck-cleanup-test-"))
    os.chmod(folder, 0o755)
    yield folder
    for path in folder.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o755)
    shutil.rmtree(folder)


def test_the_clean_up_never_changes_what_a_link_points_to(shared_folder):
    tmp_path = shared_folder
    outside = tmp_path / "outside.txt"
    outside.write_text("not the student's\n")
    folder = tmp_path / "run-left-behind"
    (folder / "locked").mkdir(parents=True)
    (folder / "locked" / "link").symlink_to(outside)
    (folder / "link-to-folder").symlink_to(tmp_path, target_is_directory=True)
    (folder / "student.py").write_text("def f(): pass\n")
    if os.getuid() == 0:
        for path in (tmp_path, outside, folder, *folder.rglob("*")):
            os.lchown(path, 65534, 65534)
    os.chmod(outside, 0o644)
    os.chmod(folder / "locked", 0o500)  # the link cannot be removed before a chmod
    done = subprocess.run(
        [*as_unprivileged_user(), sys.executable, "-c", CLEAN_UP]
        + [str(folder / "student.py"), str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755
    assert not os.path.lexists(folder)  # and the folder is gone
