"""How the book's tools start Jupyter kernels: on Unix sockets, stopped at once when done.

The build (``build_book.py``) and ``make refresh`` (``book_pages.py``) execute pages with nbclient.
By default its kernels listen on TCP on 127.0.0.1, and each one logs "Kernel is running over TCP
without encryption ... susceptible to eavesdropping", which reads like a security problem to a
newcomer reading the build log. Over Unix sockets in a private temporary folder the kernel has no
reason to warn, and nothing leaves the machine either way.

Each kernel starts with the imports it never needs blocked (``BLOCKED_IMPORTS``). A page's first
``glue()`` imports ``myst_nb``, whose ``nbformat`` imports ``jsonschema``, which imports
``rfc3987_syntax`` when it is installed (JupyterLab's ``jupyter-events`` needs it, so the lock
keeps it) and compiles its 38 grammars: about 1.1 s of CPU per page, for a check of IRIs that
nothing in a page ever makes. A module set to ``None`` in ``sys.modules`` raises ImportError on
import, which ``jsonschema`` expects and skips. The line runs in the kernel before the page's first
cell (IPython's ``exec_lines``) and leaves no name behind in the page's namespace.
"""

import json
import os
import shutil
import sys
import tempfile

from jupyter_client.manager import AsyncKernelManager


class IPCKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel listens on Unix sockets in a private temporary folder.

    The default, TCP on 127.0.0.1, never leaves the machine either, but makes every kernel log a
    warning about unencrypted TCP into the build log. The folder is removed with the kernel.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._socket_folder = tempfile.mkdtemp(prefix="book-kernel-")
        self.transport = "ipc"
        self.connection_file = os.path.join(self._socket_folder, "kernel.json")
        self.ip = os.path.join(self._socket_folder, "kernel-ipc")

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self._socket_folder, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources


# Imports no page needs that cost a page's kernel CPU time (see the module's docstring).
BLOCKED_IMPORTS = ("rfc3987_syntax",)
# Blocked in the tools' own processes too (the build, `make refresh`, the page tests' helpers):
# they import nbformat, and so jsonschema, and check no IRI either. The tools import this module
# before nbformat (an `isort: split` keeps it first); where jsonschema is imported already (in
# pytest, by nbval), this changes nothing.
for _name in BLOCKED_IMPORTS:
    sys.modules.setdefault(_name, None)


def blocking_line(modules: tuple[str, ...] = BLOCKED_IMPORTS) -> str:
    """One line of Python that makes importing each of ``modules`` raise ImportError."""
    blocked = "; ".join(f"_sys.modules.setdefault({name!r}, None)" for name in modules)
    return f"import sys as _sys; {blocked}; del _sys"


def kernel_arguments() -> list[str]:
    """The kernel's command-line options: IPython runs ``blocking_line`` at start-up."""
    return [f"--IPKernelApp.exec_lines={json.dumps([blocking_line()])}"]


def kernel_options() -> dict[str, object]:
    """The NotebookClient options the build adds to MyST-NB's execution of every page."""
    options: dict[str, object] = {
        "shutdown_kernel": "immediate",
        "extra_arguments": kernel_arguments(),
    }
    # Unix sockets; elsewhere the kernel keeps TCP on 127.0.0.1.
    if os.name == "posix":
        options["kernel_manager_class"] = IPCKernelManager
    return options
