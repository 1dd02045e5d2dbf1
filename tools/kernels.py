"""How the book's tools start Jupyter kernels: on Unix sockets, stopped at once when done.

The build (``build_book.py``) and ``make refresh`` (``book_pages.py``) execute pages with nbclient.
By default its kernels listen on TCP on 127.0.0.1, and each one logs "Kernel is running over TCP
without encryption ... susceptible to eavesdropping", which reads like a security problem to a
newcomer reading the build log. Over Unix sockets in a private temporary folder the kernel has no
reason to warn, and nothing leaves the machine either way.
"""

import os
import shutil
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


def kernel_options() -> dict[str, object]:
    """The NotebookClient options the build adds to MyST-NB's execution of every page."""
    options: dict[str, object] = {"shutdown_kernel": "immediate"}
    # Unix sockets; elsewhere the kernel keeps TCP on 127.0.0.1.
    if os.name == "posix":
        options["kernel_manager_class"] = IPCKernelManager
    return options
