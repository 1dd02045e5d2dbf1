"""The machine a benchmark runs on: CPU model, vector instruction sets, PyTorch's kernels, cores.

Timings mean little without it: the same page takes twice as long on a 2-vCPU cloud runner as on
a recent laptop, and PyTorch picks its CPU kernels (AVX2, AVX-512 or generic) by what the
processor offers.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

from book_pages import ROOT


def cpu_info() -> dict[str, str]:
    """The machine as the budgets care about it: CPU model, vector instruction sets, cores."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())  # the first processor's values
    except OSError:  # not Linux: no model name, no flags
        pass
    model = fields.get("model name") or platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    isa = ", ".join(
        f"{name} {'yes' if name in flags else 'no'}" for name in ("avx2", "avx512f")
    )
    usable = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    )
    return {
        "model": model,
        "isa": isa if flags else "instruction sets unknown",
        "cores": f"{os.cpu_count()} cores ({usable} usable)",
    }


def torch_kernels() -> str:
    """PyTorch's CPU kernel level as the pages run it: after importing the package, in a fresh process."""
    code = (
        "import os, transformer_lab, torch; "
        "print(torch.backends.cpu.get_cpu_capability(), torch.__version__, "
        "torch.get_num_threads(), os.environ.get('ATEN_CPU_CAPABILITY', '-'))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True
    )
    if completed.returncode != 0 or not completed.stdout.strip():
        return "unknown (importing transformer_lab and torch failed)"
    capability, version, threads, forced = completed.stdout.strip().splitlines()[-1].split()
    note = f", set by ATEN_CPU_CAPABILITY={forced}" if forced != "-" else ""
    plural = "s" if threads != "1" else ""
    return f"{capability}{note} (torch {version}, {threads} thread{plural})"
