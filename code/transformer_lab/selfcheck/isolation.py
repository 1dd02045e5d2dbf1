"""Where a worker runs: a sandbox that holds no answers, sees no other file and leaves nothing behind.

Every worker is a fresh Python interpreter (never a fork of the checking process, which holds the
book's reference implementations in memory; ``grade``'s zygote, below, holds none of them). It
imports its code from a *skeleton*: a temporary copy of the few modules a worker needs
(:data:`WORKER_MODULES`: statuses, error summaries, the call and transport code, the worker
loop), so ``transformer_lab.attention`` and the other answers are not importable from it under
any name. Its working folder is a fresh temporary folder holding a copy of the student's file
and nothing else.

Two levels, the strongest one available is used (:func:`isolation`):

- ``bubblewrap`` (Linux, Debian's ``bwrap``): deny by default. The worker's file system holds
  the system's folders and the interpreter's (read-only, :func:`system_view`), the book data its
  check reads, the skeleton and its submission, in a ``/tmp`` and ``/dev/shm`` of its own (RAM
  file systems of :data:`TMPFS_MB`); nothing else of the machine (no home, ``/root``, ``/etc``,
  other clones, the submissions folder or the results). It runs as uid :data:`SANDBOX_UID` in a
  user namespace of its own; it has its own PID namespace (``--unshare-pid``: it cannot see or signal the grader or
  another submission, and every process it starts, ``setsid`` daemons included, ends with it),
  no network, no capabilities, and it dies with the grader (its supervisor, :data:`SUPERVISOR`,
  ends the whole sandbox when the grader dies, however far it had got in starting).
- ``process`` (no working bubblewrap): a fresh interpreter in its own session, with an audit hook
  (:mod:`transformer_lab.selfcheck.sandbox`) that refuses to open the hidden paths, to write
  outside its folder, to fork or start programs, to load native code through ``ctypes`` or to
  signal other processes (pidfds included), and the grader ends the daemons a worker leaves (it
  adopts orphans). That stops
  mistakes and the usual attacks, not a determined one: the hook's rules live in the same
  interpreter as the student's code, which can rewrite them. The grader says so in one line.

At both levels the kernel enforces the limits: per process ``RLIMIT_AS``, ``RLIMIT_CPU`` and
``RLIMIT_FSIZE`` (``sandbox._caps``), and where this process may make one, a cgroup per worker
(:func:`worker_cgroup`: the memory of all its processes and RAM files together, and the number
of its processes).

``SELFCHECK_ISOLATION=process`` forces the second level (tests of the fallback use it; set for
a whole test run, it tests a machine without bubblewrap).

While ``grade`` runs at the bubblewrap level, the worker is not a fresh interpreter but a fork of
the zygote (:mod:`transformer_lab.selfcheck.zygote`), which imported torch once: bubblewrap
builds the same sandbox around :data:`HOLDER`, and the fork joins it. Nothing above changes.
"""

from __future__ import annotations

import ast
import atexit
import functools
import os
import shutil
import site
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import transformer_lab

BUBBLEWRAP, PROCESS = "bubblewrap", "process"
LEVEL_LINES = {
    BUBBLEWRAP: "isolation: bubblewrap (a file-system view of the interpreter and the "
    "submission only, own user, PID namespace and network)",
    PROCESS: "isolation: process only (bubblewrap is not available: a fresh interpreter with an "
    "audit hook, which a determined submission can get round; install bubblewrap, e.g. "
    "apt-get install bubblewrap, for real isolation)",
}

PACKAGE = Path(transformer_lab.__file__).resolve().parent
# The modules a worker imports (paths relative to the package). None of them holds an answer:
# tests/selfcheck/test_isolation.py checks that they import nothing else from the package.
WORKER_MODULES = (
    "__init__.py",
    "reproducibility.py",
    "validation.py",
    "selfcheck/core.py",
    "selfcheck/errors.py",
    "selfcheck/execution.py",
    "selfcheck/transport.py",
    "selfcheck/sandbox.py",
    "selfcheck/model_parts.py",
)
SKELETON_INIT = '"""The worker\'s part of the self-check (see isolation.py)."""\n'
# Inside a bubblewrap sandbox: where the skeleton and the working folder appear.
SANDBOX_SKELETON, SANDBOX_WORKDIR = "/tmp/selfcheck-worker", "/tmp/submission"


# What a worker runs (``python -I -c WORKER_START SKELETON ARGS...``; a zygote's fork runs the
# same, with the same arguments).
WORKER_START = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from transformer_lab.selfcheck.sandbox import main; main()"
)


@dataclass(frozen=True)
class Isolation:
    level: str
    line: str


def project_root() -> Path | None:
    """The checkout holding the package (a folder with ``pyproject.toml`` above it), if any."""
    for folder in PACKAGE.parents:
        if (folder / "pyproject.toml").is_file():
            return folder
    return None


def hidden_paths(extra: tuple[str, ...] = ()) -> list[str]:
    """What a worker must not see: the package, the project around it, and ``extra`` (the
    submissions folder, the results)."""
    paths = [PACKAGE, project_root(), Path(runs_folder()), *map(Path, extra)]
    seen = []
    for path in paths:
        if path is None:
            continue
        text = os.path.realpath(path)
        if text not in seen and text != "/":
            seen.append(text)
    return seen


def module_file(name: str) -> Path | None:
    """The source file of package module ``name`` (``transformer_lab.x.y``), if there is one."""
    parts = name.split(".")[1:]
    for candidate in (
        PACKAGE.joinpath(*parts).with_suffix(".py"),
        PACKAGE.joinpath(*parts, "__init__.py"),
    ):
        if parts and candidate.is_file():
            return candidate
    return None


def with_imports(names: tuple[str, ...]) -> list[str]:
    """``names`` and every package module they import (directly or not), parents included."""
    found: list[str] = []
    todo = list(names)
    while todo:
        name = todo.pop()
        path = module_file(name)
        if name in found or path is None:
            continue
        found.append(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(2, len(parts))]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                todo.append(node.module)
                todo += [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names]
    return sorted(n for n in found if n.startswith("transformer_lab."))


def data_folders(book_modules: tuple[str, ...]) -> list[str]:
    """The book's data folder, when one of ``book_modules`` loads it (``datasets``)."""
    if "transformer_lab.datasets" not in with_imports(book_modules):
        return []
    from transformer_lab.datasets import find_data_dir

    try:
        return [os.path.realpath(find_data_dir())]
    except (FileNotFoundError, OSError):
        return []


def book_files(book_modules: tuple[str, ...]) -> list[str]:
    """Paths (relative to the package) of ``book_modules`` and what they import."""
    return [
        module_file(name).relative_to(PACKAGE).as_posix()
        for name in with_imports(book_modules)
    ]


# A folder of this process's is left behind only when the process was killed (SIGKILL, the OOM
# killer): atexit never ran. A later process removes such a folder once its process is gone and
# it has not changed for ABANDONED_SECONDS (a process id is only this machine's, or this
# container's, so a folder shared across containers is never judged by the id alone).
ABANDONED_SECONDS = 3600


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def remove_abandoned(kind: str, now: float | None = None) -> None:
    """Remove the ``selfcheck-KIND-PID-…`` folders in the temporary folder whose process has
    ended and which have not changed for :data:`ABANDONED_SECONDS`; only this user's folders."""
    now = time.time() if now is None else now
    prefix = f"selfcheck-{kind}-"
    for folder in Path(tempfile.gettempdir()).glob(prefix + "*"):
        pid = folder.name[len(prefix) :].split("-")[0]
        try:
            info = folder.lstat()
        except OSError:
            continue
        if (
            not pid.isdigit()
            or int(pid) == os.getpid()
            or not stat.S_ISDIR(info.st_mode)
            or info.st_uid != os.getuid()
            or now - info.st_mtime < ABANDONED_SECONDS
            or _alive(int(pid))
        ):
            continue
        remove_folder(folder)  # a skeleton is read-only by design


def _process_folder(kind: str) -> Path:
    """A fresh ``selfcheck-KIND-PID-…`` temporary folder, removed when this process ends (after
    the abandoned ones of ended processes, :func:`remove_abandoned`)."""
    remove_abandoned(kind)
    root = Path(tempfile.mkdtemp(prefix=f"selfcheck-{kind}-{os.getpid()}-"))
    atexit.register(remove_folder, root)
    return root


@functools.cache
def skeleton(book_modules: tuple[str, ...] = ()) -> str:
    """A temporary folder holding ``transformer_lab`` with only :data:`WORKER_MODULES`, plus the
    ``book_modules`` a check lets students import (and what they import), removed when this
    process ends."""
    root = _process_folder("skeleton")
    for relative in dict.fromkeys([*WORKER_MODULES, *book_files(book_modules)]):
        target = root / "transformer_lab" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE / relative, target)
    (root / "transformer_lab" / "selfcheck" / "__init__.py").write_text(
        SKELETON_INIT, encoding="utf-8"
    )
    for folder in (root, *root.rglob("*")):
        os.chmod(folder, 0o555 if folder.is_dir() else 0o444)
    return str(root)


@functools.cache
def runs_folder() -> str:
    """The folder that holds every worker's folder and output file of this process: hidden from
    each worker (which sees only its own folder), removed when this process ends."""
    return str(_process_folder("runs"))


_FOLDER_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _writable(root: Path | str) -> None:
    """Give every folder of ``root`` mode 0755, so that it can be removed, never following a
    link: each folder is opened by name relative to its parent's descriptor, without following
    a link (``O_NOFOLLOW``), and changed through that descriptor. Files keep their modes (their
    folder's mode is what removing them needs)."""
    try:
        fd = _open_folder(str(root), None)
    except OSError:
        return
    _writable_at(fd, 0)


def _open_folder(name: str, parent: int | None) -> int:
    """A descriptor of folder ``name`` (relative to ``parent``), made 0755 first; ``OSError``
    when it is a link or not a folder."""
    if hasattr(os, "O_PATH") and Path("/proc/self/fd").is_dir():
        # O_PATH needs no permission on the folder itself; its /proc link names the folder
        # that was opened, so chmod through it changes that folder and nothing it points to.
        handle = os.open(name, os.O_PATH | _FOLDER_FLAGS, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o755)
            return os.open(".", os.O_RDONLY | _FOLDER_FLAGS, dir_fd=handle)
        finally:
            os.close(handle)
    fd = os.open(name, os.O_RDONLY | _FOLDER_FLAGS, dir_fd=parent)
    os.fchmod(fd, 0o755)
    return fd


def _writable_at(fd: int, depth: int) -> None:
    try:
        if depth > 100:
            return
        with os.scandir(fd) as entries:
            names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        for name in names:
            try:
                child = _open_folder(name, fd)
            except OSError:
                continue  # a link put in its place meanwhile, or gone
            _writable_at(child, depth + 1)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_folder(folder: Path | str) -> None:
    """Remove ``folder`` and what it holds, as far as this process may, following no link:
    folders are made writable by :func:`_writable`, links are removed as links (``rmtree``
    does not follow them)."""
    _writable(folder)
    shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Limits the kernel enforces
# ---------------------------------------------------------------------------------------------

TMPFS_MB = (
    64  # each of the sandbox's RAM file systems: /tmp (the working folder) and /dev/shm
)
PIDS_MAX = 64  # processes and threads of one worker (a cgroup's pids.max)
# A worker's own memory (interpreter, torch, the checks' code) besides what Limits.memory_mb
# gives the student: the cgroup's cap is their sum, files in its RAM file systems included.
BASE_MB = 512
CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Cgroup:
    """The cgroup folders (one per controller, cgroup v1) that hold one worker."""

    folders: tuple[Path, ...]

    def remove(self) -> None:
        """Remove the folders once their processes have ended (a few tries: the kernel ends
        the processes of a PID namespace a moment after its first process)."""
        for folder in self.folders:
            for _ in range(100):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)

    def charged(self) -> int:
        """The anonymous memory charged to the cgroup (v1 ``memory.stat``'s rss), 0 without a
        memory controller; ``OSError`` if unreadable."""
        for folder in self.folders:
            path = folder / "memory.stat"
            if path.exists():
                for line in path.read_text().splitlines():
                    if line.startswith("rss "):
                        return int(line.split()[1])
        return 0

    def lower_memory(self, amount: int) -> None:
        """Lower the memory cap by ``amount`` bytes (``OSError`` if it cannot): what a worker
        the zygote forked holds but the zygote's cgroup is charged for."""
        for folder in self.folders:
            for name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
                path = folder / name  # the cap first: the swap cap may not go below it
                if path.exists():
                    path.write_text(str(max(2**20, int(path.read_text()) - amount)))

    def events(self) -> dict[str, int]:
        """How often each limit was hit: ``memory`` (v1 failcnt) and ``pids`` (refused forks)."""
        found = {}
        for folder in self.folders:
            for name, key in (("memory.failcnt", "memory"), ("pids.events", "pids")):
                try:
                    text = (folder / name).read_text().split()
                except OSError:
                    continue
                found[key] = int(text[-1]) if text and text[-1].isdigit() else 0
        return found


def _own_cgroups() -> dict[str, Path]:
    """This process's cgroup folder for the ``memory`` and ``pids`` controllers (cgroup v1)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(","):
            if controller in ("memory", "pids"):
                found[controller] = CGROUP_ROOT / controller / parts[2].lstrip("/")
    return found


_CGROUP_COUNT = [0]


def worker_cgroup(memory_mb: int | None) -> Cgroup | None:
    """A fresh cgroup for one worker, where this process may make one (root, or a delegated
    cgroup v1 tree): at most :data:`PIDS_MAX` processes and ``memory_mb`` + :data:`BASE_MB` of
    memory, everything counted (every process, and the files of its RAM file systems). None
    where it may not (cgroup v2 only, as under systemd, needs ``systemd-run --scope``, which
    this module does not use; there the per-process limits of ``sandbox._caps`` hold)."""
    if not sys.platform.startswith("linux"):
        return None
    if _CGROUP_COUNT[0] == 0:
        remove_abandoned_cgroups()
    _CGROUP_COUNT[0] += 1
    name = f"selfcheck-{os.getpid()}-{_CGROUP_COUNT[0]}"
    settings = {"pids": [("pids.max", str(PIDS_MAX))], "memory": []}
    if memory_mb is not None:
        cap = str((memory_mb + BASE_MB) * 2**20)
        settings["memory"] = [
            ("memory.limit_in_bytes", cap),
            ("memory.memsw.limit_in_bytes", cap),
        ]
    made = []
    for controller, parent in _own_cgroups().items():
        if not settings[controller] or not (parent / "cgroup.procs").exists():
            continue
        folder = parent / name
        try:
            folder.mkdir()
        except OSError:
            continue
        made.append(folder)
        for file, value in settings[controller]:
            try:
                (folder / file).write_text(value)
            except OSError:
                if file != "memory.memsw.limit_in_bytes":  # no swap accounting: fine
                    Cgroup(tuple(made)).remove()
                    return None
    return Cgroup(tuple(made)) if made else None


def remove_abandoned_cgroups() -> None:
    """Remove the empty cgroups of graders that were killed (their process has ended)."""
    for parent in _own_cgroups().values():
        for folder in parent.glob("selfcheck-*-*"):
            pid = folder.name.split("-")[1]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                try:
                    folder.rmdir()
                except OSError:
                    pass


def _bwrap_base() -> list[str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return []
    command = [
        bwrap,
        "--unshare-user",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
    ]
    command += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    # No --new-session: the supervisor already runs in a session of its own, with no terminal,
    # and the sandbox stays in its process group, so that one killpg ends all of it at once.
    command += ["--die-with-parent", "--cap-drop", "ALL"]
    return command + _no_user_namespaces(tuple(command))


@functools.cache
def _no_user_namespaces(base: tuple[str, ...]) -> list[str]:
    """``--disable-userns`` where this bubblewrap and kernel support it: a worker cannot make
    a user namespace of its own (in which it would hold every capability, and could mount
    file systems and unshare namespaces). Older bubblewraps lack it; the sandbox then holds
    without it (no capability in the worker's own namespace)."""
    option = ["--disable-userns"]
    try:
        done = subprocess.run(
            [*base, *option, "--tmpfs", "/tmp", *system_view()]
            + [sys.executable, "-I", "-S", "-c", "pass"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return option if done.returncode == 0 else []


# The system folders a Python interpreter needs (merged-/usr links are made as links), and
# single files of /etc the dynamic loader reads; /sys only for the CPU layout torch reads.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /proc/cpuinfo alone, not a /proc: the package reads it to pick ATen's kernels, and a whole
# /proc would show the host's paths (every bind mount's source, in /proc/self/mountinfo).
SYSTEM_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/sys/devices/system/cpu",
    "/proc/cpuinfo",
)
# Inside a bubblewrap sandbox: where the book's data appears (its host path stays unnamed), and
# the programs' search path (the grader's PATH would name the host's folders).
SANDBOX_DATA = "/book-data"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_UID = 65534  # the worker's uid and gid in its user namespace ("nobody")


def _interpreter_folders() -> list[str]:
    """The interpreter's own folders (its prefix, a virtual environment, its packages)."""
    paths = [sys.prefix, sys.base_prefix, *site.getsitepackages()]
    paths.append(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    real = [os.path.realpath(p) for p in paths if os.path.isdir(p)]
    return _outermost(list(dict.fromkeys(real)))


def system_view(hidden: list[str] = ()) -> list[str]:
    """bwrap arguments that build the worker's whole file system, deny by default: the system
    folders and the interpreter's (read-only), an empty ``/dev`` with the usual devices, the
    CPU's description, and nothing else of the machine (no ``/etc`` beyond the loader's cache,
    no home, no ``/root``, no other clone, and no ``/proc``: its ``mountinfo`` names the host
    path of every folder bound in). A ``hidden`` path inside one of those folders (the book's
    package installed beside the interpreter's packages) is covered by an empty folder."""
    view: list[str] = []
    for path in SYSTEM_FOLDERS:
        if os.path.islink(path):
            view += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            view += ["--ro-bind", path, path]
    shown = [p for p in SYSTEM_FOLDERS if os.path.isdir(p) and not os.path.islink(p)]
    for path in _interpreter_folders():
        if not any(_inside(path, q) for q in shown):
            view += ["--ro-bind", path, path]
            shown.append(path)
    view += [
        arg
        for path in SYSTEM_FILES
        if os.path.exists(path)
        for arg in ("--ro-bind", path, path)
    ]
    for path in _outermost([os.path.realpath(h) for h in hidden]):
        if any(_inside(path, q) for q in shown):
            view += (
                ["--tmpfs", path]
                if os.path.isdir(path)
                else ["--ro-bind", "/dev/null", path]
            )
    return [*view, "--dev", "/dev", "--remount-ro", "/dev"]


@functools.cache
def _bwrap_works() -> bool:
    base = _bwrap_base()
    if not base:
        return False
    try:
        done = subprocess.run(
            [*base, "--tmpfs", "/tmp", *system_view(), sys.executable, "-I", "-c", "pass"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def seen_paths(level: str, visible: list[str]) -> list[str]:
    """Where a worker at ``level`` finds the ``visible`` folders (the book's data): in
    bubblewrap at :data:`SANDBOX_DATA` (and numbered after it), not at their host paths."""
    if level != BUBBLEWRAP:
        return list(visible)
    return [SANDBOX_DATA + (f"-{i}" if i else "") for i in range(len(visible))]


def isolation() -> Isolation:
    """The strongest isolation this machine offers (see the module docstring)."""
    if os.environ.get("SELFCHECK_ISOLATION", "") == PROCESS:
        return Isolation(PROCESS, "isolation: process only (SELFCHECK_ISOLATION=process)")
    level = BUBBLEWRAP if _bwrap_works() else PROCESS
    return Isolation(level, LEVEL_LINES[level])


def worker_command(
    level: str,
    workdir: str,
    hidden: list[str],
    arguments: list[str],
    book_modules: tuple[str, ...] = (),
    visible: tuple[str, ...] = (),
    cgroup: Cgroup | None = None,
    file_name: str = "",
    holder: tuple[int, int] | None = None,
) -> tuple[list[str], str]:
    """The command that starts a worker, and the working folder as the worker sees it.

    ``arguments`` follow ``python -I -c <start>``; the student's file ``file_name`` is in
    ``workdir``; ``visible``: folders inside the hidden ones the worker may read (the book's
    data); ``cgroup``: the worker's (:func:`worker_cgroup`). In bubblewrap, the working folder
    is a folder of the sandbox's own ``/tmp``, a RAM file system of :data:`TMPFS_MB` (as is
    ``/dev/shm``), and the student's file is bound into it read-only: what the worker writes
    never reaches the machine's disk. ``holder`` (bubblewrap only: the ready pipe's write end
    and the status pipe's read end): the sandbox runs :data:`HOLDER` instead of the worker, and
    the zygote (:mod:`transformer_lab.selfcheck.zygote`) forks the worker into it."""
    root = skeleton(book_modules)
    prefix = supervisor(cgroup)
    python = [os.path.abspath(sys.executable), "-I", "-c", WORKER_START]
    if level != BUBBLEWRAP:
        return [*prefix, *python, root, *arguments], workdir
    size = str(TMPFS_MB * 2**20)
    # The private /tmp first, so that an interpreter installed under /tmp (a clone there) is
    # bound back into it by the system view; /dev/shm after the view's fresh /dev.
    command = [*prefix, *_bwrap_base(), "--size", size, "--tmpfs", "/tmp"]
    command += [*system_view(hidden), "--size", size, "--tmpfs", "/dev/shm"]
    for path, seen in zip(visible, seen_paths(level, list(visible))):
        command += ["--ro-bind", path, seen]
    command += ["--ro-bind", root, SANDBOX_SKELETON, "--dir", SANDBOX_WORKDIR]
    if file_name:
        inside = f"{SANDBOX_WORKDIR}/{file_name}"
        command += ["--ro-bind", os.path.join(workdir, file_name), inside]
    command += ["--remount-ro", "/", "--chdir", SANDBOX_WORKDIR]
    for name, value in SANDBOX_ENVIRONMENT.items():
        command += ["--setenv", name, value]
    if holder is not None:
        python = [os.path.abspath(sys.executable), "-I", "-S", "-c", HOLDER]
        return [*command, *python, *map(str, holder)], SANDBOX_WORKDIR
    return [*command, *python, SANDBOX_SKELETON, *arguments], SANDBOX_WORKDIR


# What bubblewrap sets in a worker's environment (over the grader's clean one): the grader's
# TMPDIR, HOME and PATH would name the host's folders; PWD is what its --chdir sets.
SANDBOX_ENVIRONMENT = {
    "TMPDIR": SANDBOX_WORKDIR,
    "HOME": SANDBOX_WORKDIR,
    "PATH": SANDBOX_PATH,
    "PWD": SANDBOX_WORKDIR,
}

# Linux, bubblewrap, a worker forked by the zygote: what the sandbox runs in the worker's place
# (argv[1]: the ready pipe, argv[2]: the status pipe). It says it runs (bubblewrap has built
# the whole view by then), then waits for the worker's status, which the zygote's child that
# waits for the worker writes, and ends the same way (an exit status, or the same signal), so
# that the sandbox, its supervisor and the grader's Popen end as a fresh worker would. The
# sandbox ends with it, and the kernel then ends every process in its PID namespace, the forked
# worker included. No status (that child was killed): HOLDER_LOST.
HOLDER_LOST = 113
HOLDER = f"""
import os, resource, signal, sys
os.write(int(sys.argv[1]), b"r")
os.close(int(sys.argv[1]))
data = b""
while len(data) < 64:
    chunk = os.read(int(sys.argv[2]), 64)
    if not chunk:
        break
    data += chunk
text = data.decode("ascii", "replace").strip()
code = int(text) if text.lstrip("-").isdigit() else {HOLDER_LOST}
if code < 0:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        signal.signal(-code, signal.SIG_DFL)
    except (OSError, ValueError):  # SIGKILL, SIGSTOP: not catchable anyway
        pass
    os.kill(os.getpid(), -code)
    code = 128 - code
os._exit(code if 0 <= code < 256 else {HOLDER_LOST})
"""


# Linux: the launcher asks for SIGKILL when the grader dies (prctl PR_SET_PDEATHSIG), then
# becomes the worker (or bubblewrap), so that killing the grader (kill -9, SIGHUP) ends it too.
LAUNCHER = (
    "import ctypes, os, sys; ctypes.CDLL(None).prctl(1, 9); "
    "os.getppid() == int(sys.argv[1]) or os._exit(1); os.execv(sys.argv[2], sys.argv[2:])"
)


def launcher() -> list[str]:
    if not sys.platform.startswith("linux"):
        return []
    return [os.path.abspath(sys.executable), "-I", "-S", "-c", LAUNCHER, str(os.getpid())]


# Linux: a worker's supervisor leads its process group (the worker, bubblewrap and everything
# in the sandbox). When the grader dies (kill -9, SIGHUP), the kernel sends it SIGTERM (prctl
# PR_SET_PDEATHSIG) and it SIGKILLs the whole group, however far the sandbox had got in
# starting: bubblewrap's own --die-with-parent is set by its child only after it has started,
# too late for a grader killed in between. It exits as the worker did (status or signal).
# Before it starts the worker, it moves itself into the worker's cgroups (argv[2]: their
# cgroup.procs files, one a line), so that everything the worker starts is counted there.
SUPERVISOR = """
import ctypes, os, signal, sys
def end(*_):
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGTERM, end)
ctypes.CDLL(None).prctl(1, signal.SIGTERM)
if os.getppid() != int(sys.argv[1]) or os.getpgid(0) != os.getpid():
    end()
for procs in filter(None, sys.argv[2].split(chr(10))):
    with open(procs, "w") as handle:
        handle.write(str(os.getpid()))
child = os.posix_spawn(sys.argv[3], sys.argv[3:], os.environ)
code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
os._exit(code)
"""


def supervisor(cgroup: Cgroup | None = None) -> list[str]:
    """The command prefix that starts a worker under a supervisor (Linux; see SUPERVISOR), in
    ``cgroup`` when there is one."""
    if not sys.platform.startswith("linux"):
        return []
    procs = "\n".join(str(f / "cgroup.procs") for f in cgroup.folders) if cgroup else ""
    python = os.path.abspath(sys.executable)
    return [python, "-I", "-S", "-c", SUPERVISOR, str(os.getpid()), procs]


def _outermost(paths: list[str]) -> list[str]:
    """``paths`` without those inside another of them."""
    return [p for p in paths if not any(q != p and _inside(p, q) for q in paths)]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
