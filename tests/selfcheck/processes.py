"""The machine's other processes, read from /proc: the self-check's tests look for workers left behind."""

import os
from pathlib import Path


def processes(command_has: bytes, environment_has: bytes | None = None) -> list[int]:
    """Process ids (not this process) whose command line contains ``command_has`` and, if given,
    whose environment holds the entry ``environment_has`` (e.g. ``b"NAME=value"``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environment = (entry / "environ").read_bytes() if environment_has else b""
        except OSError:
            continue
        if command_has in command and (
            environment_has is None or environment_has in environment.split(b"\0")
        ):
            found.append(int(entry.name))
    return found
