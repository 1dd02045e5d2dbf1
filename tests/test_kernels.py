"""tools/kernels.py: the tools' kernels listen on Unix sockets (no TCP warning), are stopped at
once, leave no socket folder behind, and start with the imports no page needs blocked."""

import os

import nbclient
import nbformat
import pytest

from kernels import BLOCKED_IMPORTS, IPCKernelManager, blocking_line, kernel_options


class WatchedKernelManager(IPCKernelManager):
    """The kernel manager of the test's own kernel: it records its socket folder, so that the
    test looks at that folder only (other kernels on the machine have folders of their own)."""

    folders: list[str] = []

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        WatchedKernelManager.folders.append(self._socket_folder)


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets")
def test_a_notebook_runs_on_unix_sockets_and_leaves_nothing_behind(capfd):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    options = {**kernel_options(), "kernel_manager_class": WatchedKernelManager}
    WatchedKernelManager.folders.clear()
    client = nbclient.NotebookClient(notebook, kernel_name="python3", **options)
    client.execute()
    assert notebook.cells[0].outputs[0]["text"] == "42\n"
    assert len(WatchedKernelManager.folders) == 1
    (folder,) = WatchedKernelManager.folders
    assert os.path.basename(folder).startswith("book-kernel-")
    assert not os.path.exists(folder), f"{folder} was left behind"
    # The kernel's own log (its stderr is this process's) has no TCP warning.
    assert "without encryption" not in capfd.readouterr().err


def test_kernels_are_stopped_at_once_and_managed_over_unix_sockets():
    options = kernel_options()
    assert options["shutdown_kernel"] == "immediate"
    if os.name == "posix":
        assert options["kernel_manager_class"] is IPCKernelManager


def test_the_kernel_starts_with_the_unneeded_imports_blocked():
    """A page's ``glue()`` imports jsonschema, which would compile rfc3987_syntax's grammars."""
    assert "rfc3987_syntax" in BLOCKED_IMPORTS
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import sys\nfrom myst_nb import glue\nimport jsonschema\n"
                "print(sys.modules.get('rfc3987_syntax'))\n"
                "print(sorted(name for name in dir() if not name.startswith('_')))"
            )
        ]
    )
    nbclient.NotebookClient(notebook, kernel_name="python3", **kernel_options()).execute()
    text = notebook.cells[0].outputs[0]["text"].splitlines()
    assert text[0] == "None", "rfc3987_syntax was imported"
    # The start-up line leaves nothing in the page's namespace.
    assert text[1] == str(
        sorted(
            [
                "In",
                "Out",
                "exit",
                "get_ipython",
                "glue",
                "jsonschema",
                "open",
                "quit",
                "sys",
            ]
        )
    )


def test_the_blocking_line_blocks_what_it_names():
    namespace: dict = {}
    exec(blocking_line(("a_module_nobody_has",)), namespace)
    import sys

    try:
        with pytest.raises(ImportError):
            import a_module_nobody_has  # noqa: F401
    finally:
        sys.modules.pop("a_module_nobody_has", None)
    assert "_sys" not in namespace


@pytest.mark.parametrize("tool", ["build_book", "book_pages"])
def test_the_tools_block_the_unneeded_imports_before_nbformat_can_load_them(tool):
    """The build and the page tool import nbformat (and so jsonschema) after kernels.py, which
    blocks ``BLOCKED_IMPORTS`` in their own process too."""
    import subprocess
    import sys

    from book_pages import ROOT

    probe = (
        f"import sys; sys.path.insert(0, 'tools'); import {tool}, jsonschema; "
        f"print([sys.modules.get(name, 'absent') for name in {BLOCKED_IMPORTS!r}])"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.strip() == str([None] * len(BLOCKED_IMPORTS)), completed.stdout
