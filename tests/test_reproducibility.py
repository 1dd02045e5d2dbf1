"""The canonical numeric mode: pinned on import, and immune to the caller's choice of CPU kernels."""

import functools
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import transformer_lab
from transformer_lab import reproducibility
from transformer_lab.reproducibility import (
    CANONICAL_CAPABILITY,
    CANONICAL_ENVIRONMENT,
    OPT_OUT_VARIABLE,
    TORCH_THREADS,
    noise_bound,
    seed_everything,
)

ROOT = Path(__file__).resolve().parents[1]
needs_x86_avx2 = pytest.mark.skipif(
    not reproducibility.is_x86_64() or reproducibility.cpu_has_avx2() is False,
    reason="the canonical mode pins x86-64 kernels that need AVX2",
)

# Training-sensitive work at a small size: a set classifier (chapter 3) and a character-level
# transformer (chapter 4), each trained for four Adam steps. Each prints its final loss and the sum
# of its trained parameters with every digit: a last-bit difference in any kernel moves some weight,
# so the sum shows it after a few steps where a loss alone might round to the same float. The last
# line is the numeric mode the package reports.
TRAINING_PROBE = textwrap.dedent(
    """
    import transformer_lab  # first: it pins the numeric mode before any tensor operation
    import torch
    from torch import nn

    from transformer_lab.char_transformer import PraiseClassifier, encode_texts
    from transformer_lab.reproducibility import numeric_mode_summary, seed_everything
    from transformer_lab.set_classifier import SetClassifier
    from transformer_lab.set_task import make_sets
    from transformer_lab.training import adam, train_epoch

    def trained(model, data, epochs):
        generator = torch.Generator().manual_seed(0)
        optimizer = adam(model.parameters(), 3e-3)
        loss_fn = nn.BCEWithLogitsLoss()
        for _ in range(epochs):
            last = train_epoch(model, optimizer, loss_fn, data, 64, generator)
        weights = sum(p.detach().double().sum().item() for p in model.parameters())
        return f"loss {last!r}, weights {weights!r}"

    x, padding, y = make_sets(64, seed=1)
    seed_everything(0)
    print("sets", trained(SetClassifier(), (x, padding, y), 4))

    texts = ["sync works great", "never works, sadly", "great, not bad", "bad, not great"] * 8
    ids = encode_texts(texts)
    labels = torch.tensor([1.0, 0.0, 1.0, 0.0] * 8)
    seed_everything(0)
    print("chars", trained(PraiseClassifier(use_positions=True), (ids, labels), 4))
    print("kernels", torch.backends.cpu.get_cpu_capability())
    print(numeric_mode_summary())
    """
)

# Environments a caller might run the book in, each asking for other kernels than the canonical.
OTHER_KERNELS = {
    "generic kernels": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_CBWR": "AUTO",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
    },
    "MKL's fastest path, 2 threads": {
        "MKL_CBWR": "AUTO",
        "OMP_NUM_THREADS": "2",
        "MKL_NUM_THREADS": "2",
    },
}


@functools.cache
def canonical_run() -> str:
    """The probe's output in a caller's plain environment (computed once per test session)."""
    return run_probe({})


@functools.cache
def opted_out_run() -> str:
    """The probe's output with the canonical mode switched off and generic kernels asked for."""
    return run_probe({OPT_OUT_VARIABLE: "native", **OTHER_KERNELS["generic kernels"]})


def trained_numbers(output: str) -> list[str]:
    """The probe's loss and weight lines: what training computed, without the lines that name
    the kernels and the mode (those differ whenever the environment does)."""
    return [line for line in output.splitlines() if line.startswith(("sets ", "chars "))]


def run_probe(extra_environment: dict[str, str]) -> str:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in CANONICAL_ENVIRONMENT and key != OPT_OUT_VARIABLE
    }
    environment.update(extra_environment)
    completed = subprocess.run(
        [sys.executable, "-c", TRAINING_PROBE],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_importing_the_package_pins_threads_and_the_environment():
    assert transformer_lab is not None
    assert torch.get_num_threads() == TORCH_THREADS
    if reproducibility.is_x86_64():
        for name, value in CANONICAL_ENVIRONMENT.items():
            assert os.environ[name] == value, name


@needs_x86_avx2
def test_pytorch_runs_the_canonical_kernels():
    assert torch.backends.cpu.get_cpu_capability() == CANONICAL_CAPABILITY
    assert reproducibility.numeric_mode_problem() is None
    assert reproducibility.numeric_mode_summary().startswith("numeric mode: canonical")


@pytest.mark.portability
@needs_x86_avx2
@pytest.mark.parametrize("asked_for", list(OTHER_KERNELS))
def test_training_is_immune_to_the_callers_cpu_kernels(asked_for):
    """The same training, in a process that asks for other kernels, prints the same numbers."""
    canonical = canonical_run()
    assert f"kernels {CANONICAL_CAPABILITY}" in canonical
    assert run_probe(OTHER_KERNELS[asked_for]) == canonical


@pytest.mark.portability
@needs_x86_avx2
def test_without_the_canonical_mode_the_kernels_change_the_numbers():
    """The immunity test above can fail: opting out with generic kernels changes the numbers."""
    canonical, opted_out = (
        trained_numbers(canonical_run()),
        trained_numbers(opted_out_run()),
    )
    assert len(canonical) == len(opted_out) == 2, "the probe prints a sets and a chars line"
    assert opted_out != canonical


def test_importing_after_a_tensor_operation_warns_with_the_fix():
    script = "import torch\ntorch.ones(2) + 1\nimport transformer_lab\n"
    environment = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    environment.pop(OPT_OUT_VARIABLE, None)
    completed = subprocess.run(
        [sys.executable, "-c", script], env=environment, capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr
    if reproducibility.is_x86_64() and reproducibility.cpu_has_avx2() is not False:
        assert "import transformer_lab before any tensor operation" in completed.stderr
        assert "DEFAULT" in completed.stderr


def test_opting_out_is_reported_as_the_reason():
    # the opted-out probe's last line (it asks for generic kernels too: the opt-out is the reason)
    summary = opted_out_run().splitlines()[-1]
    assert summary.startswith("numeric mode: NOT canonical, page outputs after training")
    assert "switched off" in summary


# /proc/cpuinfo of an x86-64 CPU without AVX2 (Intel Westmere: SSE4.2, no AVX at all).
NO_AVX2_CPUINFO = (
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Westmere E56xx/L56xx/X56xx\n"
    "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush "
    "mmx fxsr sse sse2 ss syscall nx lm constant_tsc rep_good nopl pni pclmulqdq ssse3 cx16 "
    "sse4_1 sse4_2 x2apic popcnt aes hypervisor lahf_lm\n"
)


@pytest.fixture
def no_avx2_cpu(tmp_path):
    """The environment of a process whose package reads a cpuinfo without AVX2."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(NO_AVX2_CPUINFO)
    environment = {**os.environ, reproducibility.CPUINFO_VARIABLE: str(cpuinfo)}
    environment.pop(OPT_OUT_VARIABLE, None)
    return environment


def test_a_cpu_without_avx2_gets_atens_default_kernels(monkeypatch, no_avx2_cpu):
    monkeypatch.setattr(os, "environ", dict(no_avx2_cpu))
    assert reproducibility.cpu_has_avx2() is False
    reproducibility.apply_canonical_environment()
    assert os.environ["ATEN_CPU_CAPABILITY"] == reproducibility.FALLBACK_CAPABILITY
    assert os.environ["MKL_CBWR"] == "COMPATIBLE"
    assert (
        "OPENBLAS_CORETYPE" not in no_avx2_cpu
        or os.environ["OPENBLAS_CORETYPE"] == (no_avx2_cpu["OPENBLAS_CORETYPE"])
    )


@pytest.mark.skipif(not reproducibility.is_x86_64(), reason="x86-64 kernels")
def test_without_avx2_the_book_still_runs_and_says_why_its_numbers_differ(no_avx2_cpu):
    script = textwrap.dedent(
        """
        import transformer_lab
        import torch
        from transformer_lab.reproducibility import numeric_mode_summary
        print(float((torch.ones(4, 4) @ torch.ones(4)).sum()))
        print(torch.backends.cpu.get_cpu_capability())
        print(numeric_mode_summary())
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], env=no_avx2_cpu, capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr
    total, capability, summary = completed.stdout.strip().splitlines()
    assert (total, capability) == ("16.0", "DEFAULT")
    assert summary.startswith("numeric mode: NOT canonical")
    assert "cannot reproduce the book's references: it has no AVX2" in summary
    warnings = [line for line in completed.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 1 and "no AVX2" in warnings[0], completed.stderr


@pytest.mark.portability
@pytest.mark.skipif(not reproducibility.is_x86_64(), reason="x86-64 kernels")
def test_without_avx2_a_page_whose_outputs_match_passes(no_avx2_cpu, tmp_path):
    """Chapter 1 trains nothing: on a CPU without AVX2 every output matches, and only the
    package's warning (on stderr) is new, so the page passes instead of being called different.

    The page is executed here as the build would execute it on that CPU, into a folder of its
    own, and the page tests compare that copy (``BOOK_EXECUTED_DIR``) with the reference."""
    import nbformat

    from book_pages import execute_page
    from build_book import EXECUTED_VARIABLE, FINGERPRINT_FILE, inputs_fingerprint

    executed = tmp_path / "executed"
    copy = executed / "chapters" / "01-soft-join.ipynb"
    copy.parent.mkdir(parents=True)
    nbformat.write(execute_page(ROOT / "chapters" / "01-soft-join.md", no_avx2_cpu), copy)
    (executed / FINGERPRINT_FILE).write_text(inputs_fingerprint(ROOT))
    page = "tests/references/chapters/01-soft-join.ipynb"
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", page],
        cwd=ROOT,
        env={**no_avx2_cpu, EXECUTED_VARIABLE: str(executed)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout[-3000:]
    assert "it has no AVX2" in completed.stdout  # the run still says why numbers may differ
    assert "it has no AVX2" in "".join(
        output.get("text", "")
        for cell in nbformat.read(copy, as_version=4).cells
        for output in cell.get("outputs", [])
    ), "the page's kernel did not run without AVX2"
    assert re.search(r"\b\d+ passed, 1 warning in", completed.stdout), completed.stdout[
        -500:
    ]


def test_only_the_numeric_mode_warning_is_left_out_of_the_comparison():
    from nbformat import NotebookNode

    import session_rules

    problem = "this CPU has no AVX2"
    warning = (
        f"/x/__init__.py:9: RuntimeWarning: transformer_lab: {problem}.\n  pin_numerics()\n"
    )
    outputs = [
        NotebookNode(output_type="stream", name="stderr", text=warning),
        NotebookNode(output_type="stream", name="stderr", text=warning + "other\n"),
        NotebookNode(output_type="stream", name="stdout", text=warning),
    ]
    kept = session_rules.without_numeric_mode_warning(outputs, problem)
    assert [(o.name, o.text) for o in kept] == [("stderr", "other\n"), ("stdout", warning)]
    assert session_rules.without_numeric_mode_warning(outputs, None) == outputs


def test_the_run_says_what_to_do_where_pages_cannot_match():
    import session_rules

    assert "x86-64 CPU with AVX2" in session_rules.WHERE_PAGES_MATCH
    assert "--ignore=tests/references" in session_rules.WHERE_PAGES_MATCH


def test_seed_everything_repeats_draws():
    first = seed_everything(5)
    a = (torch.rand(3), torch.rand(3, generator=first))
    second = seed_everything(5)
    b = (torch.rand(3), torch.rand(3, generator=second))
    torch.testing.assert_close(a, b)


def test_noise_is_printed_as_its_bound_and_a_real_difference_is_refused():
    assert noise_bound(2.4e-7) == "below 1e-06"
    assert noise_bound(-5e-7) == "below 1e-06"
    assert noise_bound(0.0, bound=1e-3) == "below 1e-03"
    with pytest.raises(
        ValueError, match="a difference of 1.0e-05 is not rounding noise below 1e-06"
    ):
        noise_bound(1e-5)
    with pytest.raises(ValueError, match="difference must be a finite number"):
        noise_bound(float("nan"))
