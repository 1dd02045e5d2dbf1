"""tools/kernels.py: the tools' kernels listen on Unix sockets (no TCP warning), are stopped at
once, and leave no socket folder behind."""

import glob
import os
import tempfile

import nbclient
import nbformat
import pytest

from kernels import IPCKernelManager, kernel_options


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets")
def test_a_notebook_runs_on_unix_sockets_and_leaves_nothing_behind(capfd):
    pattern = os.path.join(tempfile.gettempdir(), "book-kernel-*")
    before = set(glob.glob(pattern))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    client = nbclient.NotebookClient(notebook, kernel_name="python3", **kernel_options())
    client.execute()
    assert notebook.cells[0].outputs[0]["text"] == "42\n"
    assert set(glob.glob(pattern)) == before
    # The kernel's own log (its stderr is this process's) has no TCP warning.
    assert "without encryption" not in capfd.readouterr().err


def test_kernels_are_stopped_at_once_and_managed_over_unix_sockets():
    options = kernel_options()
    assert options["shutdown_kernel"] == "immediate"
    if os.name == "posix":
        assert options["kernel_manager_class"] is IPCKernelManager
