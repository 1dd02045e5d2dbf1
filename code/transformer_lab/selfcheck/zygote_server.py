"""The zygote's program (``python -I -c <this file's text> <control fd>``): see
:mod:`transformer_lab.selfcheck.zygote`. transformer_lab.selfcheck.zygote marks its command line.

It is never imported as part of the package: it runs as its own program's text, imports torch
and tokenizers and nothing of the book, forks ``C`` per request, and ``C`` forks the worker
``G`` into the sandbox. The grader (``zygote.Zygote``) talks to it in JSON over a unix socket,
the worker's descriptors passed alongside (``SCM_RIGHTS``).
"""

import ctypes
import fcntl
import gc
import json
import os
import select
import signal
import socket
import sys
import types

import torch  # noqa: F401 - what every worker imports first; no tensor operation here

try:
    import tokenizers  # noqa: F401
except ImportError:
    pass

LIBC = ctypes.CDLL(None, use_errno=True)
ZYGOTE = os.getpid()
CAP_LAST = int(open("/proc/sys/kernel/cap_last_cap").read())  # no /proc in a sandbox
OWN_USER_NAMESPACE = os.stat("/proc/self/ns/user").st_ino
CLONE_NEWUSER = 0x10000000
NAMESPACES = (
    ("mnt", 0x00020000),
    ("net", 0x40000000),
    ("ipc", 0x08000000),
    ("uts", 0x04000000),
    ("pid", 0x20000000),
)
NS_GET_USERNS = 0xB701
PR_SET_PDEATHSIG, PR_CAPBSET_READ, PR_CAPBSET_DROP = 1, 23, 24
PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 38, 39, 47
AMBIENT_IS_SET, AMBIENT_CLEAR_ALL = 1, 4
CAPABILITY_VERSION_3 = 0x20080522
UNSAFE_EXIT = 125  # G's exit when a capability survived the drop (it runs nothing)


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def checked(result, what):
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def setns(fd, kind, name):
    checked(LIBC.setns(fd, kind), f"setns {name}")


def start_time(pid):
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return int(handle.read().rsplit(b")", 1)[1].split()[19])


def enter(holder, started):
    """Join the namespaces of process ``holder``: bubblewrap's outer user namespace first (it
    owns the others), then mount, network, IPC, UTS and PID, then the holder's own user
    namespace (nested in the outer one: it maps the sandbox's uid). ``started``: when the
    holder started, checked once its namespaces are open (a process that took its pid since
    started later)."""
    fds = {
        name: os.open(f"/proc/{holder}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC)
        for name in ("user", "mnt", "net", "ipc", "uts", "pid")
    }
    if start_time(holder) != started:
        raise RuntimeError(f"process {holder} is not the sandbox's holder any more")
    current = OWN_USER_NAMESPACE
    try:
        owner = fcntl.ioctl(fds["mnt"], NS_GET_USERNS)
    except OSError:
        owner = None
    if owner is not None:
        if os.fstat(owner).st_ino != current:
            setns(owner, CLONE_NEWUSER, "user (the sandbox's owner)")
            current = os.fstat(owner).st_ino
        os.close(owner)
    for name, kind in NAMESPACES:
        setns(fds[name], kind, name)
    if os.fstat(fds["user"]).st_ino != current:
        setns(fds["user"], CLONE_NEWUSER, "user")
    for fd in fds.values():
        os.close(fd)


def drop_capabilities():
    for cap in range(CAP_LAST + 1):
        checked(LIBC.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop from the bounding set")
    checked(LIBC.prctl(PR_CAP_AMBIENT, AMBIENT_CLEAR_ALL, 0, 0, 0), "clear the ambient set")
    header, data = CapHeader(CAPABILITY_VERSION_3, 0), (CapData * 2)()
    checked(LIBC.capset(ctypes.byref(header), data), "capset")
    checked(LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")


def no_capability_left():
    header, data = CapHeader(CAPABILITY_VERSION_3, 0), (CapData * 2)()
    if LIBC.capget(ctypes.byref(header), data) != 0:
        return False
    if any(d.effective or d.permitted or d.inheritable for d in data):
        return False
    for cap in range(CAP_LAST + 1):
        if LIBC.prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 0:
            return False
        if LIBC.prctl(PR_CAP_AMBIENT, AMBIENT_IS_SET, cap, 0, 0) != 0:
            return False
    return LIBC.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1


def become_worker(conn, alarm, output, report):
    """G, inside the sandbox: its own session, descriptors 0-4 only, no capability."""
    os.setsid()
    devnull = os.open("/dev/null", os.O_RDWR)
    layout = (devnull, output, output, conn, alarm, report)
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for fd in layout]
    for number, fd in enumerate(moved):
        os.dup2(fd, number, inheritable=number < 5)
    os.closerange(len(layout), os.sysconf("SC_OPEN_MAX"))
    drop_capabilities()
    if not no_capability_left():
        os.write(5, b"unsafe: a capability is left after the drop\n")
        os._exit(UNSAFE_EXIT)
    os.write(5, b"safe\n")
    os.close(5)


def fork_worker(request, fds, report):
    """C: into the worker's cgroups and the holder's namespaces, then fork G and wait for it.
    Returns (in G only) what G runs."""
    conn, alarm, output, status = fds
    checked(LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
    if os.getppid() != ZYGOTE:
        os._exit(1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for procs in request["cgroups"]:
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))
    enter(int(request["holder"]), int(request["holder_started"]))
    os.chdir(request["workdir"])
    worker = os.fork()
    if worker == 0:
        os.close(status)  # only C writes the status: the holder sees EOF when C dies
        become_worker(conn, alarm, output, report)
        return {key: request[key] for key in ("start", "argv", "env")}
    for fd in (conn, alarm, output):
        os.close(fd)
    os.write(report, f"pid {worker}\n".encode())
    os.close(report)
    code = os.waitstatus_to_exitcode(os.waitpid(worker, 0)[1])
    try:
        os.write(status, str(code).encode())
    except OSError:
        pass
    os._exit(0)


def handle(control, message, fds):
    """One request: fork C, and answer G's host pid once G says it is safe (or why not)."""
    try:
        request = json.loads(message)
        if len(fds) != 4:
            raise ValueError(f"{len(fds)} descriptors instead of 4")
        if len(os.listdir("/proc/self/task")) != 1:
            raise RuntimeError("the zygote has more than one thread: no fork")
        if any(name.split(".")[0] == "transformer_lab" for name in sys.modules):
            raise RuntimeError("the zygote holds the book's modules: no fork")
        report_read, report_write = os.pipe()
        child = os.fork()
    except Exception as error:  # noqa: BLE001
        for fd in fds:
            os.close(fd)
        control.send(json.dumps({"error": repr(error)[:500]}).encode())
        return None
    if child == 0:
        try:
            control.close()
            os.close(report_read)
            return fork_worker(request, fds, report_write)
        except BaseException as error:  # noqa: BLE001 - C or G before student code
            try:
                os.write(report_write, f"error: {error!r}"[:500].encode() + b"\n")
            except OSError:
                pass
            os._exit(1)
    os.close(report_write)
    for fd in fds:
        os.close(fd)
    told = b""
    while select.select([report_read], [], [], 20)[0]:  # C and G say, then close it
        chunk = os.read(report_read, 4096)
        if not chunk or len(told) > 4096:
            break
        told += chunk
    os.close(report_read)
    lines = told.decode("utf-8", "replace").splitlines()
    pids = [line.split()[1] for line in lines if line.startswith("pid ")]
    if pids and "safe" in lines:
        control.send(json.dumps({"pid": int(pids[0])}).encode())
    else:
        control.send(json.dumps({"error": " / ".join(lines)[:500] or "no answer"}).encode())
    return None


def serve(control):
    """Answer requests until the grader closes the socket; return (in G only) what G runs."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # C is reaped by the kernel
    control.send(json.dumps({"ready": True}).encode())
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 20, 8)
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)
        job = handle(control, message, fds)
        if job is not None:
            return job


def run(job):
    """G: the worker's start, as ``python -I -c START ARGS...`` runs it in a fresh sandbox."""
    import atexit
    import random
    import tempfile
    import threading
    import traceback

    os.environ.clear()
    os.environ.update(job["env"])
    sys.argv = ["-c", *job["argv"]]
    sys.orig_argv = [sys.executable, "-I", "-c", job["start"], *job["argv"]]
    random.seed()  # each worker its own random state, as a fresh interpreter's
    sys.modules["torch"].seed()
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()
    tempfile.tempdir = None
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    code = compile(job["start"], "<string>", "exec")
    del job
    gc.collect()
    status = 0
    try:
        exec(code, main.__dict__)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            status = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            status = 1
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        status = 1
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except BaseException:  # noqa: BLE001
        pass
    os._exit(status & 0xFF)


if __name__ == "__main__":
    run(serve(socket.socket(fileno=int(sys.argv[1]))))
