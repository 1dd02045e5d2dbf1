"""Where a worker runs: three levels, chosen by the machine, never by a flag (MAINTAINING.md).

``bubblewrap`` (user namespaces work): a view of the system, the interpreter, a package copy and
the submission, with its own user, PIDs and network. ``unprivileged user`` (root, bubblewrap
fails, as in Gradescope's Docker): a uid of its own, every process of which is killed when the
worker ends. ``process`` (neither): a plain child, which grading refuses (:func:`grading_problem`).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import os
import pwd
import queue
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import transformer_lab

BUBBLEWRAP, USER, PROCESS = "bubblewrap", "unprivileged user", "process"
PACKAGE = Path(transformer_lab.__file__).resolve().parent
START = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from transformer_lab.selfcheck.worker.serve import main; main()"
)
WORKER_MARK = "transformer_lab.selfcheck.worker.serve"  # in every worker's command line
SANDBOX_CODE, SANDBOX_WORKDIR = "/tmp/selfcheck-code", "/tmp/submission"
USER_NAME = "selfcheck"  # the worker's user, made by autograder_files/setup.sh
SPARE_UID = 64_100  # the first spare uid (SELFCHECK_FIRST_UID overrides it)
# Each worker uid a grader uses is leased for the grader's lifetime: an exclusive lock on a file in
# this root-only folder. Graders side by side on one machine then never share a uid, so one never
# kills, nor counts, the other's workers.
UID_LEASES = Path(tempfile.gettempdir()) / "transformer-lab-selfcheck-uids"
TMPFS_MB = 64


@dataclass(frozen=True)
class Isolation:
    level: str
    line: str  # one line for the grader's output and the results
    why_not: str = ""  # at the process level: why neither safe level works here


def _others_can(path: str | Path, bit: int = stat.S_IROTH) -> bool:
    """Can any user read ``path`` (with ``S_IXOTH``: enter it): every folder above searchable?"""
    real = Path(os.path.realpath(path))
    try:
        searchable = all(os.stat(f).st_mode & stat.S_IXOTH for f in real.parents)
        return searchable and bool(os.stat(real).st_mode & bit)
    except OSError:
        return False


def worker_python() -> str:
    """The interpreter the worker runs: ``SELFCHECK_WORKER_PYTHON``, else this one."""
    return os.environ.get("SELFCHECK_WORKER_PYTHON") or sys.executable


@functools.cache
def _unreadable_runtime() -> str:
    """Why an unprivileged user cannot run the worker's interpreter ("" when it can)."""
    import torch

    python = worker_python()
    needed = [python, os.path.join(os.path.dirname(os.__file__), "os.py")]
    if python == sys.executable:
        needed.append(torch.__file__)
    for path in needed:
        if not _others_can(path):
            return (
                f"an unprivileged user cannot read {os.path.realpath(path)} (a folder above "
                "it is closed to other users): install the interpreter and its packages where "
                "every user may read them (autograder_files/setup.sh does), or name such an "
                "interpreter in SELFCHECK_WORKER_PYTHON"
            )
    return ""


@functools.cache
def _bubblewrap_works() -> bool:
    if not shutil.which("bwrap"):
        return False
    probe = bubblewrap_command(tempfile.gettempdir(), "", [])
    try:
        done = subprocess.run(
            [*probe, worker_python(), "-I", "-S", "-c", "pass"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def isolation() -> Isolation:
    """The level this machine offers (see the module docstring). ``SELFCHECK_ISOLATION``
    (``process`` or ``user``) picks a weaker one for tests; results record the level used."""
    forced = os.environ.get("SELFCHECK_ISOLATION", "")
    if forced == "process":
        return _process_level("SELFCHECK_ISOLATION=process")
    if forced != "user" and _bubblewrap_works():
        return Isolation(
            BUBBLEWRAP,
            "isolation: bubblewrap (a view of the interpreter and the submission only; own "
            "user, PID namespace and network)",
        )
    return _without_bubblewrap()


def _process_level(why_not: str) -> Isolation:
    return Isolation(
        PROCESS, f"isolation: process only ({why_not.split('. ')[0]})", why_not
    )


def _without_bubblewrap() -> Isolation:
    """The unprivileged-user level as root (when other users can run the interpreter), else
    the process level with what to install."""
    if os.geteuid() != 0:
        return _process_level(
            "bubblewrap does not work here, and the grader is not root. Install bubblewrap "
            "(apt-get install bubblewrap) with unprivileged user namespaces allowed, or grade "
            "as root (each submission then runs as an unprivileged user)"
        )
    why_not = _unreadable_runtime()
    if why_not:
        return _process_level(why_not)
    return Isolation(
        USER,
        "isolation: unprivileged user (a uid per worker; bubblewrap does not "
        "work here; the sources and results are root's only)",
    )


def grading_problem(submissions: Path | None = None) -> str | None:
    """Why this machine cannot grade safely (``grade``, hidden checks), or None. An explicit
    ``SELFCHECK_ISOLATION=process`` (the tests on a machine with neither safe level) grades,
    and every output and results file names the level. At the unprivileged-user level the
    ``submissions`` folder must be closed to other users (a worker could read a classmate's
    file there)."""
    level = isolation()
    if level.level == USER and submissions is not None:
        folder = Path(os.path.realpath(submissions))
        if _others_can(folder, stat.S_IXOTH):
            return (
                f"other users can open the files in {folder}, and each submission runs as "
                f"another user here (no bubblewrap): close it first (chmod 700 {folder})"
            )
    if level.level != PROCESS or os.environ.get("SELFCHECK_ISOLATION") == "process":
        return None
    return f"refusing to grade at the process level: {level.why_not}"


# --------------------------------------------------------------------------- the worker's uids


def _lease(uid: int) -> bool:
    """Lock ``uid`` for this grader's lifetime (the lock ends with the process); False when
    another grader on this machine holds it."""
    UID_LEASES.mkdir(mode=0o700, exist_ok=True)
    folder = os.lstat(UID_LEASES)
    if not stat.S_ISDIR(folder.st_mode) or folder.st_uid != 0 or folder.st_mode & 0o077:
        raise RuntimeError(f"{UID_LEASES} must be a folder of root's alone: remove it")
    fd = os.open(UID_LEASES / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    return True


def _candidate_uids():
    """The ``selfcheck`` user's uid, then spare uids that belong to no account on this
    machine (an account's processes would be killed with the worker's)."""
    try:
        yield pwd.getpwnam(USER_NAME).pw_uid
    except KeyError:
        pass
    uid = int(os.environ.get("SELFCHECK_FIRST_UID", SPARE_UID))
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            yield uid
        uid += 1


_FREE: queue.Queue = queue.Queue()
_LEASED: list[int] = []  # every uid this grader holds, in the order it took them


def take_uid() -> int:
    """A worker uid no running worker uses, on this machine (returned with
    :func:`give_back_uid`)."""
    try:
        return _FREE.get_nowait()
    except queue.Empty:
        pass
    for uid in _candidate_uids():
        if uid not in _LEASED and _lease(uid):
            _LEASED.append(uid)
            return uid
    raise AssertionError("unreachable")


def give_back_uid(uid: int) -> None:
    _FREE.put(uid)


def _stat(pid: int | str) -> list[bytes]:
    """The fields of ``/proc/PID/stat`` after the command name (state, parent, ...; [] when
    the process is gone or off Linux)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _processes_of(uid: int) -> list[int]:
    """The live processes of ``uid`` (a zombie is gone already; its parent reaps it)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{entry}").st_uid == uid:
                if _stat(entry)[:1] not in ([], [b"Z"], [b"X"]):
                    found.append(int(entry))
    return found


def kill_user(uid: int, rounds: int = 100) -> bool:
    """SIGKILL every process of ``uid`` (daemons, double forks, ``setsid`` included), until
    none is left: a child takes that uid and calls ``kill(-1, SIGKILL)``, which reaches every
    process of the uid but itself. True when none is left."""
    if os.geteuid() != 0 or uid == 0:
        return False
    for _ in range(rounds):
        if not _processes_of(uid):
            return True
        pid = os.fork()
        if pid == 0:  # only system calls here: this process may hold threads
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
    return not _processes_of(uid)


def remove_files_of(uid: int) -> None:
    """Remove what ``uid`` left in the shared temporary folders (``/tmp``, ``/dev/shm``)."""
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        with contextlib.suppress(OSError):
            for entry in list(os.scandir(folder)):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_uid != uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)


# --------------------------------------------------------------------------- folders


def _temporary_folder(kind: str, mode: int) -> Path:
    root = Path(tempfile.mkdtemp(prefix=f"selfcheck-{kind}-"))
    os.chmod(root, mode)
    atexit.register(shutil.rmtree, root, True)
    return root


@functools.cache
def code_copy() -> str:
    """A copy of the public package every user may read (the worker imports it from there: the
    checkout around the package, the instructor's folder included, stays out of its reach)."""
    root = _temporary_folder("code", 0o755)
    shutil.copytree(
        PACKAGE, root / "transformer_lab", ignore=shutil.ignore_patterns("__pycache__")
    )
    for path in root.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return str(root)


@functools.cache
def runs_folder() -> str:
    """The folder of every worker's own folder and output file: others may pass through it to
    their own folder, but not list it."""
    return str(_temporary_folder("runs", 0o711))


# --------------------------------------------------------------------------- commands

SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/sys/devices/system/cpu", "/proc/cpuinfo")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _interpreter_folders() -> list[str]:
    import site

    python = os.path.realpath(worker_python())
    paths = [sys.prefix, sys.base_prefix, *site.getsitepackages()]
    paths.append(os.path.dirname(os.path.dirname(python)))
    real = [os.path.realpath(p) for p in paths if os.path.isdir(p)]
    return [p for p in real if not any(q != p and _inside(p, q) for q in real)]


@functools.cache
def _no_user_namespaces() -> list[str]:
    """``--disable-userns`` where this bubblewrap has it: no user namespace inside the sandbox."""
    try:
        done = subprocess.run(
            ["bwrap", "--help"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return ["--disable-userns"] if "--disable-userns" in done.stdout else []


def bubblewrap_command(workdir: str, file_name: str, visible: list[str]) -> list[str]:
    """bwrap's arguments, deny by default: the system and interpreter folders read-only, the
    package copy, the submission (read-only) in a RAM ``/tmp`` of its own, no ``/proc``."""
    command = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user"]
    command += ["--die-with-parent"]
    command += _no_user_namespaces()
    command += ["--new-session", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"]
    command += ["--size", str(TMPFS_MB * 2**20), "--tmpfs", "/tmp"]
    shown: list[str] = []
    for path in SYSTEM_FOLDERS:
        if os.path.islink(path):
            command += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            command += ["--ro-bind", path, path]
            shown.append(path)
    for path in _interpreter_folders():
        if not any(_inside(path, q) for q in shown):
            command += ["--ro-bind", path, path]
    command += [a for p in SYSTEM_FILES if os.path.exists(p) for a in ("--ro-bind", p, p)]
    command += ["--dev", "/dev", "--size", str(TMPFS_MB * 2**20), "--tmpfs", "/dev/shm"]
    for path in visible:
        command += ["--ro-bind", path, SANDBOX_CODE]
    command += ["--dir", SANDBOX_WORKDIR, "--chdir", SANDBOX_WORKDIR]
    if file_name:
        inside = f"{SANDBOX_WORKDIR}/{file_name}"
        command += ["--ro-bind", os.path.join(workdir, file_name), inside]
    command += ["--setenv", "TMPDIR", SANDBOX_WORKDIR, "--setenv", "HOME", SANDBOX_WORKDIR]
    return command + ["--setenv", "PATH", "/usr/bin:/bin"]


SETPRIV = ["--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]


def worker_command(level: str, workdir: str, file_name: str, uid: int | None):
    """(command, the working folder and the package copy as the worker sees them)."""
    python = [worker_python(), "-I", "-u", "-c", START]
    if level == BUBBLEWRAP:
        prefix = bubblewrap_command(workdir, file_name, [code_copy()])
        return [*prefix, *python], SANDBOX_WORKDIR, SANDBOX_CODE
    if level == USER and uid is not None and (setpriv := shutil.which("setpriv")):
        # As uid with no groups, capabilities or new privileges (Popen's user and group do
        # the same where setpriv is missing).
        python = [setpriv, f"--reuid={uid}", f"--regid={uid}", *SETPRIV, *python]
    return python, workdir, code_copy()


def process_cpu(pid: int) -> float | None:
    """CPU seconds process ``pid`` (all its threads) has used, or None off Linux."""
    fields = _stat(pid)
    return (
        (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else None
    )


def find_worker(root: int, timeout: float = 0.0) -> int | None:
    """The worker interpreter among process ``root`` and its descendants (bubblewrap starts it
    a few levels down)."""
    end = time.monotonic() + timeout
    while True:
        children: dict[int, list[int]] = {}
        for entry in filter(str.isdigit, os.listdir("/proc")):
            if fields := _stat(entry):
                children.setdefault(int(fields[1]), []).append(int(entry))
        todo = [root]
        while todo:
            pid = todo.pop()
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    argv = handle.read().split(b"\0")
                if argv[1:4] == [b"-I", b"-u", b"-c"] and WORKER_MARK.encode() in argv[4]:
                    return pid
            except OSError:
                pass
            todo += children.get(pid, [])
        if time.monotonic() >= end:
            return None
        time.sleep(0.02)


def end_worker_users() -> None:
    """Kill every process of every worker uid this grader has used (before results are
    written, and again after)."""
    if isolation().level == USER:
        for uid in _LEASED:
            kill_user(uid)
