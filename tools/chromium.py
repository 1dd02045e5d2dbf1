"""Debian's headless chromium, driven by Playwright, kept on this machine.

Shared by the browser tests (tests/browser/, through book_site.py) and the Binder rehearsal
(tools/binder_check.py): where chromium is, how it is started, and the guard that aborts (and
records) every request leaving 127.0.0.1. Nothing here downloads anything: chromium comes from
Debian (installed by `make browser`, which `make test-portability`, `make binder-check` and
`make pdf` run first), Playwright drives it through
``executable_path`` (never ``playwright install``).
"""

from __future__ import annotations

import shutil
from urllib.parse import urlsplit

HOST = "127.0.0.1"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError(
            "Debian's `chromium` is not installed: run `make browser` (it installs it with "
            "apt-get), or `apt-get install -y chromium`. Never `playwright install`."
        )
    return path


def is_local(url: str) -> bool:
    """Requests allowed: to 127.0.0.1 or not over the network at all (data:, blob:, file:)."""
    parts = urlsplit(url)
    if parts.scheme in {"data", "blob", "about", "file"}:
        return True
    return parts.hostname == HOST


def block_third_party(context, third_party: list[str]) -> None:
    """Abort, and record, every request that leaves 127.0.0.1 (it must not happen at all)."""

    def handle(route) -> None:
        url = route.request.url
        if is_local(url):
            route.continue_()
        else:
            third_party.append(url)
            route.abort("blockedbyclient")

    context.route("**/*", handle)
