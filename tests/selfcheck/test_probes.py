"""The public probes: each drawn from its own generator, and the same bytes on every CPU.

A stored answer is found by the exact bytes of its input (``answers.input_key``), so a probe
that changes changes the verdict. Two ways it changed at 1bb8d3d:

- probes seeded the global generator (``torch.manual_seed`` inside ``fork_rng``): under
  ``grade --jobs N`` another thread drew from it in between, and a right file got "no stored
  answer ... for this input";
- probes drawn with ``torch.randn`` and PyTorch's own layer start differ in their last bits on a
  CPU without AVX2 (and on ARM): there the instructor's own solutions got "LookupError: no
  stored answer" for four Week-20 tasks and Exercise 12.
"""

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from test_reproducibility import NO_AVX2_CPUINFO
from transformer_lab.reproducibility import (
    CANONICAL_ENVIRONMENT,
    CPUINFO_VARIABLE,
    OPT_OUT_VARIABLE,
)
from transformer_lab.selfcheck.checks import answers, multihead, positions
from transformer_lab.selfcheck.checks.tensors import draw_parameters, exact_normal

ROOT = Path(__file__).resolve().parents[2]


def public_probes() -> list[tuple]:
    """Every public probe whose answers are stored and that holds drawn numbers."""
    return [
        *positions.toy_probes(),
        (positions.model_probe(3),),
        (positions.model_probe(4),),
        (positions.model_probe(6, broken=True),),
        *multihead.main_probes(),
        multihead.gradient_probe(),
    ]


def probe_keys() -> list[str]:
    return [answers.input_key(probe) for probe in public_probes()]


def test_probes_drawn_in_threads_while_another_thread_draws_are_the_serial_ones():
    serial = probe_keys()
    stop, drawn, errors = threading.Event(), [], []

    def other_thread():  # a check of another submission, or the student's own code
        n = 0
        while not stop.is_set():
            torch.manual_seed(n)
            torch.randn(64)
            n += 1

    def drawer():
        try:
            for _ in range(4):
                drawn.append(probe_keys())
        except Exception as error:  # noqa: BLE001 - reported by the assert below
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        noise = threading.Thread(target=other_thread)
        noise.start()
        drawers = [threading.Thread(target=drawer) for _ in range(3)]
        for thread in drawers:
            thread.start()
        for thread in drawers:
            thread.join()
    finally:
        stop.set()
        noise.join()
        sys.setswitchinterval(interval)
    assert not errors
    differing = sum(keys != serial for keys in drawn)
    assert differing == 0, f"{differing} of {len(drawn)} rounds drew other probes"


def test_drawing_a_probe_leaves_the_global_generator_alone():
    """Once the layers are built (once per process, then copied), no probe draws from it."""
    public_probes()
    state = torch.random.get_rng_state()
    public_probes()
    assert torch.equal(torch.random.get_rng_state(), state)


def test_exact_draws_are_spread_like_their_normal_and_repeat():
    g = torch.Generator().manual_seed(0)
    values = exact_normal(g, 20_000, std=2.0)
    assert values.dtype == torch.float32
    assert abs(float(values.mean())) < 0.05 and abs(float(values.std()) - 2.0) < 0.05
    again = exact_normal(torch.Generator().manual_seed(0), 20_000, std=2.0)
    assert torch.equal(values, again)


def test_drawn_parameters_start_like_pytorchs_and_keep_the_layer_norms():
    g = torch.Generator().manual_seed(1)
    layer = draw_parameters(torch.nn.TransformerEncoderLayer(16, 2, 32), g)
    assert torch.equal(layer.norm1.weight, torch.ones(16))
    assert torch.equal(layer.norm1.bias, torch.zeros(16))
    bound = 1 / 16**0.5  # PyTorch's own start: uniform in ±1/√fan_in, std bound/√3
    assert abs(float(layer.linear1.weight.detach().std()) - bound / 3**0.5) < 0.02
    table = draw_parameters(torch.nn.Embedding(10, 4, padding_idx=0), g)
    assert torch.equal(table.weight[0], torch.zeros(4)) and table.weight[1:].abs().sum() > 0


RUN_SOLUTIONS = """
import transformer_lab
from transformer_lab_instructor.solutions import SOLUTION, STRETCH, WEEK20
from transformer_lab.selfcheck.checks.registry import BY_NAME
namespace = {}
exec(compile(SOLUTION + STRETCH, "homework.py", "exec"), namespace)
exec(compile(WEEK20, "week20.py", "exec"), namespace)
for name, check in BY_NAME.items():
    result = check.run(namespace[name])
    print(name, result.status, result.summary)
"""


def solutions_run_under(setting: str, tmp_path) -> list[str]:
    """The self-check's verdict on every solution, in a process whose package runs ``setting``:
    ``no AVX2`` (it reads a cpuinfo without AVX2, so ATen's default kernels) or ``native``."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in CANONICAL_ENVIRONMENT
        and name not in {OPT_OUT_VARIABLE, CPUINFO_VARIABLE}
    }
    if setting == "native":
        environment[OPT_OUT_VARIABLE] = "native"
    else:
        cpuinfo = tmp_path / "cpuinfo"
        cpuinfo.write_text(NO_AVX2_CPUINFO)
        environment[CPUINFO_VARIABLE] = str(cpuinfo)
        environment["ATEN_CPU_CAPABILITY"] = "default"
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "instructor"), environment.get("PYTHONPATH", "")]
    )
    capability = (
        "import transformer_lab, torch; print(torch.backends.cpu.get_cpu_capability())\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", capability + RUN_SOLUTIONS],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.splitlines()


@pytest.mark.portability
def test_the_solutions_pass_on_a_cpu_without_avx2(tmp_path):
    capability, *verdicts = solutions_run_under("no AVX2", tmp_path)
    assert capability == "DEFAULT"  # ATen's kernels for such a CPU, as there
    failing = [line for line in verdicts if line.split()[1] != "passed"]
    assert len(verdicts) == 14 and not failing, "\n".join(failing)


@pytest.mark.portability
def test_the_solutions_pass_with_the_numeric_mode_switched_off(tmp_path):
    _, *verdicts = solutions_run_under("native", tmp_path)
    failing = [line for line in verdicts if line.split()[1] != "passed"]
    assert len(verdicts) == 14 and not failing, "\n".join(failing)
