"""Running a student's code: :mod:`.isolation` picks where (bubblewrap, an unprivileged user, or
a plain process), :mod:`.parent` starts, times and ends the worker, :mod:`.serve` is the worker."""

from transformer_lab.selfcheck.worker.parent import (
    DEFAULT_MEMORY_MB,
    DEFAULT_SECONDS,
    Limits,
    LoadFailed,
    RemoteFunction,
    Worker,
    allow_workers,
    kill_all_workers,
    stopping,
)


def load_module(path, name: str = "student_submission"):
    """Import a Python file by path, in this process: for trusted code only."""
    from transformer_lab.selfcheck.execution import load_source

    return load_source(path, name)


__all__ = [
    "DEFAULT_MEMORY_MB",
    "DEFAULT_SECONDS",
    "Limits",
    "LoadFailed",
    "RemoteFunction",
    "Worker",
    "allow_workers",
    "kill_all_workers",
    "load_module",
    "stopping",
]
