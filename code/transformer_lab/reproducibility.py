"""The canonical numeric mode: the settings that make printed numbers repeat on every x86-64 CPU.

Seeds fix *what* is computed; they do not fix *how*. PyTorch and the libraries under it choose
their CPU kernels at run time: ATen picks an AVX-512 or AVX2 build of its vectorised loops, MKL
picks a code path per CPU vendor and generation, oneDNN compiles code for the widest instruction
set it finds, and a reduction split over two threads adds in another order than over one. Each
choice changes the last bits of a result, and training turns last-bit differences into different
accuracies a few hundred steps later. So the package fixes every one of those choices, in one
place, before the first tensor operation (``pin_numerics``, called when ``transformer_lab`` is
imported):

- ``ATEN_CPU_CAPABILITY=avx2``: ATen's AVX2 kernels on every CPU that has AVX2, never AVX-512;
- ``MKL_CBWR=COMPATIBLE``: MKL's vendor-neutral code path, so Intel and AMD CPUs agree;
- ``ONEDNN_MAX_CPU_ISA=AVX2``: oneDNN generates the same instructions everywhere;
- ``OMP_NUM_THREADS=1``, ``MKL_NUM_THREADS=1`` and ``torch.set_num_threads(1)``: one thread, so
  reductions always add in the same order;
- ``OPENBLAS_CORETYPE=Haswell`` (kept if already set): NumPy's and SciPy's OpenBLAS use their
  AVX2 kernels; it acts only if set before NumPy is imported, so pages import the package first;
- ``TOKENIZERS_PARALLELISM=false``: one tokenizer thread, and no warning when a process forks.

What holds where: on any x86-64 CPU with AVX2 (Intel since 2013, AMD since 2015) the mode gives
the same numbers bit for bit. On an x86-64 CPU without AVX2 (older CPUs, and budget laptops'
Celeron and Pentium Silver lines), ATen's AVX2 kernels would stop the process with "Illegal
instruction", so the mode asks for ATen's default kernels there instead and says, in one
warning, that this CPU cannot reproduce the references. There and on ARM (Apple silicon,
Graviton), results agree to about six significant digits for a single computation, but trained
models end in different places, so the book's training numbers differ. Setting
``TRANSFORMER_LAB_NUMERICS=native`` turns the mode off (fastest kernels, other numbers).
``TRANSFORMER_LAB_CPUINFO`` names a file to read instead of ``/proc/cpuinfo`` (the tests use it
to fake a CPU without AVX2).
"""

import os
import platform
import random
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

TORCH_THREADS = 1
OPT_OUT_VARIABLE = "TRANSFORMER_LAB_NUMERICS"
CPUINFO_VARIABLE = "TRANSFORMER_LAB_CPUINFO"
CANONICAL_CAPABILITY = "AVX2"
# ATen's kernels for an x86-64 CPU without AVX2 (its AVX2 ones would be illegal instructions).
FALLBACK_CAPABILITY = "default"

# Forced for every process that imports the package (a caller asking for other kernels is
# overruled: the point is that nobody's environment changes the book's numbers).
CANONICAL_ENVIRONMENT = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "COMPATIBLE",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OMP_NUM_THREADS": str(TORCH_THREADS),
    "MKL_NUM_THREADS": str(TORCH_THREADS),
    "TOKENIZERS_PARALLELISM": "false",
}
# Set only when absent: some machines set it already to work around an OpenBLAS bug.
DEFAULT_ENVIRONMENT = {"OPENBLAS_CORETYPE": "Haswell"}


def is_x86_64() -> bool:
    """True on an x86-64 (amd64) machine, where the canonical mode applies."""
    return platform.machine().lower() in {"x86_64", "amd64"}


def cpu_has_avx2() -> bool | None:
    """Whether the CPU reports AVX2 and FMA (``None`` when the OS does not say, as off Linux).

    Reads ``/proc/cpuinfo``, or the file ``TRANSFORMER_LAB_CPUINFO`` names.
    """
    cpuinfo = Path(os.environ.get(CPUINFO_VARIABLE) or "/proc/cpuinfo")
    if not cpuinfo.exists():
        return None
    for line in cpuinfo.read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return {"avx2", "fma"} <= flags
    return None


def canonical_mode_wanted() -> bool:
    """False when the caller opted out with ``TRANSFORMER_LAB_NUMERICS=native``."""
    return os.environ.get(OPT_OUT_VARIABLE, "canonical").strip().lower() != "native"


def apply_canonical_environment() -> None:
    """Write the canonical variables into this process's environment (before torch computes)."""
    os.environ["TOKENIZERS_PARALLELISM"] = CANONICAL_ENVIRONMENT["TOKENIZERS_PARALLELISM"]
    if not canonical_mode_wanted():
        return
    if is_x86_64():
        os.environ.update(CANONICAL_ENVIRONMENT)
        if cpu_has_avx2() is False:
            os.environ["ATEN_CPU_CAPABILITY"] = FALLBACK_CAPABILITY
        else:
            for name, value in DEFAULT_ENVIRONMENT.items():
                os.environ.setdefault(name, value)
    else:
        os.environ["OMP_NUM_THREADS"] = str(TORCH_THREADS)


def numeric_mode_problem() -> str | None:
    """One sentence saying why this process cannot reproduce the book's numbers, or ``None``."""
    import torch

    if not canonical_mode_wanted():
        return f"{OPT_OUT_VARIABLE}=native: the canonical numeric mode is switched off"
    if not is_x86_64():
        return (
            f"this is a {platform.machine()} CPU, not x86-64: PyTorch runs other kernels here, "
            "so trained models (and the numbers printed after training) differ from the book's"
        )
    capability = torch.backends.cpu.get_cpu_capability()
    if capability == CANONICAL_CAPABILITY:
        return None
    if capability == "DEFAULT" and cpu_has_avx2() is False:
        return (
            "this CPU cannot reproduce the book's references: it has no AVX2, so PyTorch runs its "
            "default kernels instead of the AVX2 ones the references were computed with; the "
            "pages run, but numbers after training differ"
        )
    return (
        f"PyTorch had already chosen its {capability} kernels before transformer_lab was imported "
        f"(a tensor operation ran first), so the canonical {CANONICAL_CAPABILITY} mode could not take "
        "effect. Fix: import transformer_lab before any tensor operation (restart the kernel)"
    )


def numeric_mode_summary() -> str:
    """One line for a test run's header: canonical, or NOT canonical and why page outputs differ."""
    problem = numeric_mode_problem()
    if problem is None:
        return "numeric mode: canonical (the page references' numbers are reproducible on this machine)"
    return (
        f"numeric mode: NOT canonical, page outputs after training will differ: {problem}"
    )


def pin_numerics(threads: int = TORCH_THREADS) -> None:
    """Put this process in the canonical numeric mode; warn when it is too late to do so."""
    apply_canonical_environment()
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        # Only possible before the first parallel operation; intra-op threads are what matter.
        pass
    problem = numeric_mode_problem()
    if problem and canonical_mode_wanted() and is_x86_64():
        warnings.warn(f"transformer_lab: {problem}.", RuntimeWarning, stacklevel=3)


def seed_everything(seed: int) -> "torch.Generator":
    """Seed Python, NumPy and PyTorch; return a fresh ``torch.Generator`` seeded the same way."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


NOISE_BOUND = 1e-6


def noise_bound(difference: float, bound: float = NOISE_BOUND) -> str:
    """Print floating-point rounding noise as the bound it stays under, never as its digits.

    Two float32 computations of the same thing in another order differ by about 1e-7; the exact
    digits depend on the CPU's kernels, so a page prints "below 1e-06" instead. A difference at or
    above ``bound`` is not noise: it raises, so a page that claims agreement cannot print a lie.
    """
    from transformer_lab.validation import require_number

    difference = abs(require_number("difference", difference))
    if difference >= bound:
        raise ValueError(
            f"a difference of {difference:.1e} is not rounding noise below {bound:.0e}"
        )
    return f"below {bound:.0e}"
