"""Local Binder rehearsal (`make binder-check`): every page with code, opened and run as a reader
who clicks its rocket button would, in JupyterLab, in Debian's chromium.

mybinder.org cannot be reached from here, but everything after its image build can be redone
locally, and the image build itself can be imitated closely:

1. Environment, the way repo2docker builds it from binder/: a separate venv
   (``_build/binder/venv``) on the Python of ``binder/runtime.txt``; first the Python packages of
   repo2docker's own base environment (``tools/repo2docker_base.txt``: JupyterLab, Jupyter
   Server, notebook, ...), then ``pip install -r binder/requirements.txt`` into the SAME
   environment (as repo2docker does), then ``pip check``. What the pins changed in the image is
   reported. The venv is reused while those three files and the Python are unchanged.
2. Home: the repository's files (tracked and untracked-but-not-ignored) copied to
   ``_build/binder/home``, which plays ``/home/jovyan``: it is $HOME and the server's root, so
   nothing the rehearsal does (postBuild's Jupyter settings, autosaves, caches) touches the
   working tree or the user's own ~/.jupyter. ``binder/postBuild`` runs there.
3. JupyterLab on 127.0.0.1 with a random token, no browser; chromium (Playwright, through
   ``executable_path``) blocks every request that is not for 127.0.0.1.
4. Each page of ``_toc.yml`` that has code is opened at its launch link's ``urlpath``
   (``lab/tree/<page>.md``); checks: it opens as a notebook (jupytext) with the page's code
   cells, the MyST markup renders (jupyterlab-myst: admonition, dropdown, typeset maths); then
   Run > Run All Cells, wait for every cell; fail on an error output or a cell that does not
   finish within ``CELL_TIMEOUT_S``; screenshot; compare the outputs JupyterLab holds with the
   page's reference notebook under the rules nbval applies in `make test`.
5. A timed report: printed, and written to ``_build/binder-check.md``.

    python tools/binder_check.py                 # every page with code
    python tools/binder_check.py chapters/01-soft-join.md   # some pages
    python tools/binder_check.py --rebuild       # rebuild the venv even if it is up to date
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[1]
# book_pages sits beside this file; book_site is the browser tests' helper module.
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from book_pages import has_code, read_page, reference_path, toc_pages  # noqa: E402
from book_site import (  # noqa: E402
    CHROMIUM_ARGS,
    HOST,
    block_third_party,
    book_config,
    chromium_path,
    page_html,
    page_id,
)  # noqa: E402

BINDER = ROOT / "binder"
BASE_LIST = ROOT / "tools" / "repo2docker_base.txt"
SANITIZE_CFG = ROOT / "tests" / "nbval_sanitize.cfg"
BUILD = ROOT / "_build"
WORK = BUILD / "binder"
VENV = WORK / "venv"
HOME = WORK / "home"
SHOTS = BUILD / "binder-screenshots"
REPORT = BUILD / "binder-check.md"
STAMP = VENV / ".binder-stamp"

CELL_TIMEOUT_S = 180  # one cell; the book's own per-cell limit is 120 s (_config.yml)
OPEN_TIMEOUT_S = 120  # page load to a notebook with an idle kernel
SERVER_TIMEOUT_S = 120
VIEWPORT = {"width": 1280, "height": 1000}
# pip keeps an unreachable index cheap only without retries: each project is looked up on every
# index, and with pip's default 5 retries every lookup on a host that does not resolve waits
# ~7.5 s (binder/requirements.txt names PyTorch's CPU index; torch itself comes from find-links).
PIP = [
    "-m",
    "pip",
    "install",
    "--retries",
    "0",
    "--progress-bar",
    "off",
    "--disable-pip-version-check",
]
# Settings that keep JupyterLab itself off the network (no news feed, no update check, no PyPI
# queries from the extension manager), and let the rehearsal read the notebook model
# (window.jupyterapp), as JupyterLab's own UI tests (Galata) do.
LAB_FLAGS = [
    "--no-browser",
    "--LabApp.expose_app_in_browser=True",
    "--LabApp.news_url=None",
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    "--LabApp.extension_manager=readonly",
    "--ServerApp.open_browser=False",
]
if os.geteuid() == 0:  # CI runs as root; Binder's user (jovyan) is not
    LAB_FLAGS.append("--allow-root")


class RehearsalError(RuntimeError):
    """A step of the rehearsal failed; the message says which and why."""


# --------------------------------------------------------------------------- environment


def run(
    command: list[str], *, env: dict[str, str] | None = None, cwd: Path = ROOT, what: str
) -> str:
    """Run ``command``; return its output, or raise RehearsalError with the output's tail."""
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise RehearsalError(
            f"{what} failed (exit {done.returncode}): {' '.join(command)}\n{tail}"
        )
    return done.stdout


def runtime_python() -> str:
    """The interpreter binder/runtime.txt asks for (``python-3.11`` -> ``python3.11`` on PATH)."""
    runtime = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    match = re.fullmatch(r"python-(\d+\.\d+)", runtime)
    if not match:
        raise RehearsalError(f"binder/runtime.txt should read python-X.Y, not {runtime!r}")
    found = shutil.which(f"python{match.group(1)}")
    if found is None:
        raise RehearsalError(
            f"binder/runtime.txt asks for {runtime} but python{match.group(1)} is not on PATH"
        )
    return found


def env_fingerprint(python: str) -> str:
    """Hash of what the venv is built from: the three input files and the interpreter's version."""
    digest = hashlib.sha256()
    for path in (BASE_LIST, BINDER / "requirements.txt", BINDER / "runtime.txt"):
        digest.update(path.read_bytes())
    digest.update(run([python, "--version"], what="python --version").encode())
    return digest.hexdigest()


def installed(python: Path) -> dict[str, str]:
    """``{normalised name: version}`` of the packages in the environment of ``python``."""
    listing = json.loads(
        run(
            [
                str(python),
                "-m",
                "pip",
                "list",
                "--format=json",
                "--disable-pip-version-check",
            ],
            what="pip list",
        )
    )
    return {
        re.sub(r"[-_.]+", "-", item["name"]).lower(): item["version"] for item in listing
    }


@dataclass
class Environment:
    """How the Binder venv came to be, for the report."""

    reused: bool
    python: str
    steps: list[tuple[str, float]] = field(default_factory=list)
    changed: dict[str, tuple[str, str]] = field(
        default_factory=dict
    )  # name -> (image, after pins)
    added: int = 0
    pip_check: str = ""
    key_versions: dict[str, str] = field(default_factory=dict)


def pip_env() -> dict[str, str]:
    """The caller's environment for pip (its config: find-links, indexes, cache), minus any venv."""
    return {
        key: value
        for key, value in os.environ.items()
        if key not in {"VIRTUAL_ENV", "PYTHONPATH"}
    }


def build_environment(rebuild: bool) -> Environment:
    """Create (or reuse) the Binder venv: repo2docker's base packages, then binder/requirements.txt."""
    python = runtime_python()
    fingerprint = env_fingerprint(python)
    py = VENV / "bin" / "python"
    report = Environment(
        reused=False, python=run([python, "--version"], what="python").strip()
    )
    if not rebuild and STAMP.exists() and STAMP.read_text(encoding="utf-8") == fingerprint:
        report.reused = True
    else:
        shutil.rmtree(VENV, ignore_errors=True)
        VENV.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        run([python, "-m", "venv", str(VENV)], what="creating the venv")
        report.steps.append(("create venv", time.perf_counter() - start))
        start = time.perf_counter()
        run(
            [str(py), *PIP, "--quiet", "-r", str(BASE_LIST)],
            env=pip_env(),
            what="installing repo2docker's base packages",
        )
        report.steps.append(
            (
                "repo2docker's base packages (tools/repo2docker_base.txt)",
                time.perf_counter() - start,
            )
        )
        image = installed(py)
        start = time.perf_counter()
        run(
            [str(py), *PIP, "--quiet", "-r", str(BINDER / "requirements.txt")],
            env=pip_env(),
            what="pip install -r binder/requirements.txt",
        )
        report.steps.append(
            ("pip install -r binder/requirements.txt", time.perf_counter() - start)
        )
        after = installed(py)
        (VENV / "image-packages.json").write_text(
            json.dumps(image, indent=1, sort_keys=True), encoding="utf-8"
        )
        (VENV / "binder-packages.json").write_text(
            json.dumps(after, indent=1, sort_keys=True), encoding="utf-8"
        )
        STAMP.write_text(fingerprint, encoding="utf-8")
    image = json.loads((VENV / "image-packages.json").read_text(encoding="utf-8"))
    after = json.loads((VENV / "binder-packages.json").read_text(encoding="utf-8"))
    report.changed = {
        name: (image[name], after[name])
        for name in sorted(image)
        if name in after and after[name] != image[name]
    }
    report.added = len(set(after) - set(image))
    report.key_versions = {
        name: after.get(name, "missing")
        for name in (
            "jupyterlab",
            "jupyter-server",
            "notebook",
            "ipykernel",
            "jupytext",
            "jupyterlab-myst",
            "torch",
        )
    }
    check = subprocess.run(
        [str(py), "-m", "pip", "check", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
    )
    report.pip_check = (check.stdout + check.stderr).strip()
    if check.returncode != 0:
        raise RehearsalError(
            "binder/requirements.txt fights repo2docker's image (pip check):\n"
            + report.pip_check
        )
    return report


def binder_env() -> dict[str, str]:
    """Environment of postBuild and the server: the venv first on PATH, $HOME = the staged home."""
    cache = run([sys.executable, "-m", "pip", "cache", "dir"], what="pip cache dir").strip()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(
            ("JUPYTER", "PYTHON", "VIRTUAL_ENV", "MPLBACKEND", "IPYTHONDIR")
        )
    }
    env.update(
        HOME=str(HOME),
        VIRTUAL_ENV=str(VENV),
        PATH=f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        PIP_CACHE_DIR=cache,
    )
    return env


def stage_home() -> float:
    """Copy the repository's files to the rehearsal's home and run binder/postBuild there (seconds)."""
    start = time.perf_counter()
    shutil.rmtree(HOME, ignore_errors=True)
    listed = run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        what="git ls-files",
    )
    for relative in filter(None, listed.split("\0")):
        source = ROOT / relative
        if source.is_file():
            target = HOME / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    post_build = HOME / "binder" / "postBuild"
    post_build.chmod(0o755)  # repo2docker: chmod +x binder/postBuild && ./binder/postBuild
    run(["./binder/postBuild"], env=binder_env(), cwd=HOME, what="binder/postBuild")
    return time.perf_counter() - start


# --------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


class JupyterLab:
    """JupyterLab from the Binder venv, serving the staged home on 127.0.0.1 with a random token."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(24)
        self.port = free_port()
        self.origin = f"http://{HOST}:{self.port}"
        self.log_path = WORK / "jupyterlab.log"
        self.process: subprocess.Popen | None = None
        self.startup_s = 0.0

    def __enter__(self) -> JupyterLab:
        start = time.perf_counter()
        command = [
            str(VENV / "bin" / "jupyter"),
            "lab",
            f"--ip={HOST}",
            f"--port={self.port}",
            f"--ServerApp.root_dir={HOME}",
            f"--IdentityProvider.token={self.token}",
            *LAB_FLAGS,
        ]
        self._log = self.log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            command, cwd=HOME, env=binder_env(), stdout=self._log, stderr=subprocess.STDOUT
        )
        while time.perf_counter() - start < SERVER_TIMEOUT_S:
            if self.process.poll() is not None:
                raise RehearsalError(
                    f"JupyterLab exited with {self.process.returncode}; see {self.log_path}"
                )
            try:
                self.api("GET", "api/status")
                self.startup_s = time.perf_counter() - start
                return self
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        raise RehearsalError(
            f"JupyterLab did not answer within {SERVER_TIMEOUT_S} s; see {self.log_path}"
        )

    def __exit__(self, *exc: object) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()

    def api(self, method: str, path: str) -> object:
        """Call the server's REST API (token in the header); the decoded JSON answer, if any."""
        request = urllib.request.Request(
            f"{self.origin}/{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 (127.0.0.1 only)
            body = answer.read()
        return json.loads(body) if body else None

    def forget(self) -> None:
        """A fresh start for the next page, as a new Binder launch would be: no kernels, no saved layout."""
        for session in self.api("GET", "api/sessions") or []:
            self.api("DELETE", f"api/sessions/{session['id']}")
        for kernel in self.api("GET", "api/kernels") or []:
            self.api("DELETE", f"api/kernels/{kernel['id']}")
        try:
            self.api("DELETE", "lab/api/workspaces/default")
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise


# --------------------------------------------------------------------------- pages


def launch_urlpath(page: Path) -> tuple[str, str]:
    """The ``urlpath`` the page's rocket button asks Binder for, and where it was read.

    From the built page's launch link when there is a build (``_build/html``), else built from
    ``_config.yml`` the way Jupyter Book does (tests/browser/test_browser_links.py checks the two agree).
    """
    built = BUILD / "html" / page_html(page)
    if built.exists():
        binderhub = book_config()["launch_buttons"]["binderhub_url"].rstrip("/")
        for href in re.findall(r'href="([^"]+)"', built.read_text(encoding="utf-8")):
            link = html.unescape(href)
            if link.startswith(binderhub):
                return parse_qs(urlsplit(link).query)["urlpath"][0], "built launch link"
    interface = book_config()["launch_buttons"].get("notebook_interface", "classic")
    prefix = "lab/tree" if interface == "jupyterlab" else "tree"
    return f"{prefix}/{page_id(page)}", "_config.yml"


# The notebook JupyterLab shows (window.jupyterapp: --LabApp.expose_app_in_browser).
STATE_PROBE = """() => {
    const app = window.jupyterapp;
    const widget = app && app.shell.currentWidget;
    if (!widget || !widget.context) return {ready: false};
    const model = widget.content && widget.content.model;
    const notebook = widget.node.classList.contains('jp-NotebookPanel') && !!(model && model.cells);
    const cells = [];
    if (notebook) {
        for (let i = 0; i < model.cells.length; i++) {
            const cell = model.cells.get(i);
            cells.push({type: cell.type, count: cell.type === 'code' ? cell.executionCount : null,
                        state: cell.type === 'code' ? (cell.executionState || null) : null});
        }
    }
    const session = widget.sessionContext;
    return {ready: true, path: widget.context.path, notebook: notebook, widget: widget.node.className,
            kernel: session && session.session && session.session.kernel ? session.session.kernel.status : null,
            kernel_name: session ? session.kernelDisplayName : null, cells: cells};
}"""

CELLS_JSON = """() => {
    const model = window.jupyterapp.shell.currentWidget.content.model;
    const cells = [];
    for (let i = 0; i < model.cells.length; i++) {
        const cell = model.cells.get(i);
        if (cell.type === 'code') cells.push(cell.toJSON());
    }
    return cells;
}"""

# Walk every cell (scrolling it into view: JupyterLab may attach only the cells on screen) and
# report what was drawn: MyST constructs in markdown cells, error outputs in code cells.
SURVEY = r"""async () => {
    const notebook = window.jupyterapp.shell.currentWidget.content;
    const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
    const found = {markdown_cells: 0, unrendered: 0, admonitions: 0, dropdowns: 0, math: 0,
                   xref_not_found: 0, raw_directives: [], text: [], errors: []};
    for (let i = 0; i < notebook.widgets.length; i++) {
        const cell = notebook.widgets[i];
        await notebook.scrollToItem(i, 'center');
        if (cell.model.type === 'markdown') {
            found.markdown_cells += 1;
            let drawn = null;
            for (let k = 0; k < 100 && !(drawn && drawn.childElementCount); k++) {
                drawn = cell.node.querySelector('.myst, .jp-RenderedMarkdown');
                if (!(drawn && drawn.childElementCount)) await sleep(50);
            }
            if (!(drawn && drawn.childElementCount)) { found.unrendered += 1; continue; }
            found.admonitions += drawn.querySelectorAll('aside.myst-admonition').length;
            found.dropdowns += drawn.querySelectorAll('details.myst-dropdown').length;
            found.math += drawn.querySelectorAll('.katex').length;
            found.xref_not_found += drawn.querySelectorAll('[title="Cross Reference Not Found"]').length;
            const text = drawn.textContent;  // innerText is empty for cells scrolled out of view
            found.text.push(text);
            found.raw_directives.push(...(text.match(/(```|:::)\{[a-z:-]+\}/g) || []));
        } else if (cell.model.type === 'code') {
            for (const output of cell.node.querySelectorAll('.jp-OutputArea-output[data-mime-type]')) {
                const mime = output.dataset.mimeType;
                if (mime === 'application/vnd.jupyter.error' ||
                    (mime === 'application/vnd.jupyter.stderr' && output.innerText.includes('Traceback'))) {
                    found.errors.push(`cell ${i + 1}: ${output.innerText.slice(0, 300)}`);
                }
            }
        }
    }
    await notebook.scrollToItem(0, 'start');
    return found;
}"""


SHOW_LAST_OUTPUT = """() => {
    const notebook = window.jupyterapp.shell.currentWidget.content;
    const code = notebook.widgets.map((cell, i) => [cell, i]).filter(([cell]) => cell.model.type === 'code');
    return notebook.scrollToItem(code.length ? code[code.length - 1][1] : 0, 'start');
}"""
ADMONITIONS = (
    "admonition|note|tip|warning|important|hint|caution|attention|danger|error|seealso"
)


def page_markup(page: Path) -> dict:
    """What the page's markdown asks MyST to draw (counted in the source), and its code cells."""
    notebook = read_page(page)
    markdown = "\n".join(
        cell.source for cell in notebook.cells if cell.cell_type == "markdown"
    )
    directive = r"^(?:```+|:::+)\{%s\}"
    display = re.compile(
        r"^\$\$.*?^\$\$|^(?:```+|:::+)\{math\}.*?^(?:```+|:::+)$",
        flags=re.MULTILINE | re.DOTALL,
    )
    inline = re.compile(r"\$[^$\n]+\$|\{math\}`")
    return {
        "code_cells": sum(cell.cell_type == "code" for cell in notebook.cells),
        "admonitions": len(
            re.findall(directive % f"(?:{ADMONITIONS})", markdown, flags=re.MULTILINE)
        ),
        "dropdowns": len(re.findall(directive % "dropdown", markdown, flags=re.MULTILINE)),
        "math": len(display.findall(markdown))
        + len(inline.findall(display.sub("", markdown))),
        "literalincludes": len(
            re.findall(directive % "literalinclude", markdown, flags=re.MULTILINE)
        ),
        "glue_keys": re.findall(r"\{glue(?::text)?\}`([^`<]+?)(?::[^`]*)?`", markdown),
    }


@dataclass
class PageRun:
    """Everything observed while one page was opened and run in JupyterLab."""

    page: str
    urlpath: str
    urlpath_source: str
    open_s: float = 0.0
    run_s: float = 0.0
    slowest_cell: tuple[int, float] = (0, 0.0)
    code_cells: int = 0
    markup: dict = field(default_factory=dict)  # counted in the page's source
    drawn: dict = field(default_factory=dict)  # counted in JupyterLab
    glue_as_names: int = 0
    problems: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    comparison: Comparison | None = None
    screenshots: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and (self.comparison is None or self.comparison.ok)


def wait_for(page, probe: str, until, timeout_s: float, what: str) -> dict:
    """Poll ``probe`` until ``until(state)`` holds; raise RehearsalError naming ``what`` on timeout."""
    deadline = time.perf_counter() + timeout_s
    state: dict = {}
    while time.perf_counter() < deadline:
        state = page.evaluate(probe)
        if until(state):
            return state
        time.sleep(0.25)
    raise RehearsalError(
        f"{what} within {timeout_s:.0f} s (last state: {json.dumps(state)[:400]})"
    )


def click_run_all(page) -> None:
    """Run > Run All Cells, through the menu bar as a reader would."""
    page.locator(
        "#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")
    ).click()
    page.locator(
        ".lm-Menu-content .lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")
    ).click()


def run_all(page, result: PageRun) -> list[float]:
    """Run every cell; return each code cell's wall time (s). Problems go to ``result.problems``.

    A cell's time is from the previous cell's end to its own (the kernel runs them one by one),
    read by polling JupyterLab's notebook model every 0.25 s.
    """
    click_run_all(page)
    start = last = time.perf_counter()
    durations: list[float] = []
    seen_busy = False
    idle_since: float | None = None
    while True:
        time.sleep(0.25)
        state = page.evaluate(STATE_PROBE)
        now = time.perf_counter()
        code = [cell for cell in state["cells"] if cell["type"] == "code"]
        finished = 0
        while finished < len(code) and code[finished]["count"] is not None:
            finished += 1
        while len(durations) < finished:
            durations.append(now - last)
            last = now
        running = any(cell["state"] == "running" for cell in code)
        seen_busy = seen_busy or state["kernel"] == "busy" or running
        if finished == len(code) and state["kernel"] == "idle":
            return durations
        if state["kernel"] == "idle" and not running and (seen_busy or now - start > 10):
            idle_since = idle_since or now
            if (
                now - idle_since > 3
            ):  # idle with cells left: an error stopped the run, or the kernel died
                result.problems.append(
                    f"the run stopped before code cell {finished + 1} of {len(code)}"
                )
                return durations
        else:
            idle_since = None
        if now - last > CELL_TIMEOUT_S:
            result.problems.append(
                f"code cell {finished + 1} did not finish within {CELL_TIMEOUT_S} s"
            )
            page.evaluate(
                "() => window.jupyterapp.commands.execute('notebook:interrupt-kernel')"
            )
            return durations


def model_errors(cells: list[dict]) -> list[str]:
    """Error outputs, and tracebacks printed to stderr, in the notebook model (code cell numbers from 1)."""
    found = []
    for number, cell in enumerate(cells, start=1):
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            if output.get("output_type") == "error":
                found.append(
                    f"code cell {number}: {output.get('ename')}: {str(output.get('evalue'))[:200]}"
                )
            elif (
                output.get("output_type") == "stream"
                and output.get("name") == "stderr"
                and "Traceback" in text
            ):
                found.append(
                    f"code cell {number}: traceback on stderr: {text.strip().splitlines()[-1][:200]}"
                )
    return found


def check_markup(result: PageRun) -> None:
    """Compare what MyST drew with what the page's source asks for."""
    markup, drawn = result.markup, result.drawn
    if drawn["unrendered"]:
        result.problems.append(
            f"MyST: {drawn['unrendered']} of {drawn['markdown_cells']} markdown cells not drawn"
        )
    for kind in ("admonitions", "dropdowns", "math"):
        if markup[kind] and not drawn[kind]:
            result.problems.append(
                f"MyST: the page has {markup[kind]} {kind}, none is drawn"
            )
    if drawn["raw_directives"]:
        result.problems.append(
            f"MyST: directives shown as raw text: {sorted(set(drawn['raw_directives']))}"
        )
    text = "\n".join(drawn["text"])
    result.glue_as_names = sum(key in text for key in markup["glue_keys"])


def dismiss_news_prompt(tab) -> None:
    """Answer JupyterLab's "get notified about official Jupyter news?" toast (No), if it is there."""
    button = tab.locator(".jp-toast-button", has_text=re.compile(r"^No$"))
    if button.count():
        button.first.click()
        button.first.wait_for(state="detached", timeout=10_000)


def screenshot(tab, name: str, result: PageRun) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / name))
    result.screenshots.append(name)


def check_page(browser, lab: JupyterLab, page: Path) -> PageRun:
    """Open ``page`` at its launch path, check it, run it, screenshot it, compare its outputs."""
    urlpath, source = launch_urlpath(page)
    result = PageRun(
        page=page_id(page), urlpath=urlpath, urlpath_source=source, markup=page_markup(page)
    )
    lab.forget()
    context = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
    context.set_default_timeout(60_000)
    block_third_party(context, result.blocked)
    tab = context.new_page()
    tab.on(
        "pageerror",
        lambda error: result.console_errors.append(f"uncaught exception: {error}"),
    )
    tab.on(
        "console",
        lambda message: (
            message.type == "error"
            and "Cross reference target was not found" not in message.text
            and result.console_errors.append(f"console.error: {message.text[:300]}")
        ),
    )
    stem = page_id(page).replace("/", "__").removesuffix(".md")
    try:
        start = time.perf_counter()
        tab.goto(f"{lab.origin}/{urlpath}?token={lab.token}", wait_until="load")
        state = wait_for(
            tab,
            STATE_PROBE,
            lambda s: s.get("ready") and s.get("path") == page_id(page),
            OPEN_TIMEOUT_S,
            f"{page_id(page)} did not open",
        )
        if not state["notebook"]:
            screenshot(tab, f"{stem}-opened.png", result)
            result.problems.append(
                f"opened as {state['widget']!r}, not as a notebook (jupytext's extension "
                "not loaded, or not the default viewer for markdown)"
            )
            return result
        state = wait_for(
            tab,
            STATE_PROBE,
            lambda s: s.get("kernel") == "idle",
            OPEN_TIMEOUT_S,
            f"{page_id(page)}: the kernel was not idle",
        )
        result.drawn = tab.evaluate(SURVEY)
        result.open_s = time.perf_counter() - start
        result.code_cells = sum(cell["type"] == "code" for cell in state["cells"])
        if result.code_cells != result.markup["code_cells"]:
            result.problems.append(
                f"{result.code_cells} code cells in JupyterLab, the page has "
                f"{result.markup['code_cells']}"
            )
        check_markup(result)
        dismiss_news_prompt(tab)
        screenshot(tab, f"{stem}-opened.png", result)

        start = time.perf_counter()
        durations = run_all(tab, result)
        result.run_s = time.perf_counter() - start
        if durations:
            slowest = max(range(len(durations)), key=durations.__getitem__)
            result.slowest_cell = (slowest + 1, durations[slowest])
        cells = tab.evaluate(CELLS_JSON)
        result.problems.extend(model_errors(cells))
        result.problems.extend(
            f"error output on screen, {text}" for text in tab.evaluate(SURVEY)["errors"]
        )
        tab.evaluate(SHOW_LAST_OUTPUT)
        screenshot(tab, f"{stem}-ran.png", result)
        result.comparison = compare_with_reference(page, cells)
    except RehearsalError as error:
        result.problems.append(str(error))
    finally:
        context.close()
    return result


# --------------------------------------------------------------------------- same numbers as the book


def _nbval_rules():
    """nbval's own output comparison (``IPyNbCell.compare_outputs``), usable outside pytest.

    `make test` runs nbval strictly over tests/references/ with tests/nbval_sanitize.cfg; this
    borrows the very function it compares with, its stream coalescing and sanitizing, so the
    rehearsal compares exactly the fields nbval does (every output and MIME type, except the
    keys in ``skip_compare`` below: nbval's defaults when nbdime is off).
    """
    from nbval.plugin import IPyNbCell, get_sanitize_patterns

    class NbvalRules:
        compare_outputs = IPyNbCell.compare_outputs
        sanitize = IPyNbCell.sanitize
        colors = type(
            "NoColors",
            (),
            {
                name: ""
                for name in (
                    "HEADER",
                    "OKBLUE",
                    "OKGREEN",
                    "WARNING",
                    "FAIL",
                    "ENDC",
                    "BOLD",
                    "UNDERLINE",
                )
            },
        )

        def __init__(self) -> None:
            patterns = dict(get_sanitize_patterns(SANITIZE_CFG.read_text(encoding="utf-8")))
            skip = (
                "metadata",
                "traceback",
                "prompt_number",
                "output_type",
                "name",
                "execution_count",
                "application/vnd.jupyter.widget-view+json",
                "image/png",
                "image/jpeg",
            )
            self.parent = type(
                "Parent", (), {"skip_compare": skip, "sanitize_patterns": patterns}
            )()
            self.comparison_traceback: list[str] = []

        def format_output_compare(self, key: str, left: object, right: object) -> None:
            self.comparison_traceback.append(first_difference(key, str(left), str(right)))

    return NbvalRules()


def first_difference(key: str, reference: str, shown: str) -> str:
    """One line per side: the first line where the reference and JupyterLab's output differ."""
    ref_lines, new_lines = reference.splitlines() or [""], shown.splitlines() or [""]
    for number, (left, right) in enumerate(zip(ref_lines, new_lines), start=1):
        if left != right:
            return f"{key}, line {number}: reference {left.strip()[:120]!r} / JupyterLab {right.strip()[:120]!r}"
    return f"{key}: {len(ref_lines)} lines in the reference, {len(new_lines)} in JupyterLab"


@dataclass
class Comparison:
    """JupyterLab's outputs against the page's reference notebook, cell by cell, under nbval's rules."""

    compared: int = 0
    equal: int = 0
    differences: list[str] = field(default_factory=list)
    stale: str = ""

    @property
    def ok(self) -> bool:
        return not self.stale and not self.differences


def as_notebook_outputs(outputs: list[dict]) -> list:
    """JupyterLab's cell outputs as nbformat nodes, multi-line strings joined (as nbformat reads them)."""
    import nbformat
    from nbval.plugin import coalesce_streams

    def join(value: object) -> object:
        if isinstance(value, list) and all(isinstance(part, str) for part in value):
            return "".join(value)
        if isinstance(value, dict):
            return {key: join(item) for key, item in value.items()}
        return value

    return coalesce_streams([nbformat.from_dict(join(output)) for output in outputs])


def compare_with_reference(page: Path, cells: list[dict]) -> Comparison:
    """Compare ``cells`` (JupyterLab's code cells, as JSON) with the page's reference notebook."""
    import nbformat
    from nbval.plugin import coalesce_streams

    result = Comparison()
    reference_file = reference_path(page)
    if not reference_file.exists():
        result.stale = f"no reference notebook {reference_file.relative_to(ROOT)}"
        return result
    reference = [
        cell
        for cell in nbformat.read(reference_file, as_version=4).cells
        if cell.cell_type == "code"
    ]
    shown_sources = [
        "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for cell in cells
    ]
    if shown_sources != [cell.source for cell in reference]:
        result.stale = f"the page's code no longer matches {reference_file.relative_to(ROOT)} (run make refresh)"
        return result
    rules = _nbval_rules()
    for number, (ref, shown) in enumerate(zip(reference, cells), start=1):
        if ref.execution_count is None:
            continue  # nbval does not compare a reference cell that was never run
        result.compared += 1
        rules.comparison_traceback = []
        if rules.compare_outputs(
            as_notebook_outputs(shown.get("outputs", [])), coalesce_streams(ref.outputs)
        ):
            result.equal += 1
        else:
            detail = " ".join(
                line.strip() for line in rules.comparison_traceback if line.strip()
            )
            result.differences.append(f"code cell {number}: {detail[:400]}")
    return result


# --------------------------------------------------------------------------- report


def load_average() -> str:
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def report_markdown(
    environment: Environment,
    home_s: float,
    lab: JupyterLab | None,
    runs: list[PageRun],
    total_s: float,
    started: datetime,
    load_before: str,
) -> str:
    """The rehearsal's report: environment, timings per page, and every problem found."""
    lines = [
        "# Binder rehearsal (`make binder-check`)",
        "",
        f"{started:%Y-%m-%d %H:%M} UTC; {os.cpu_count()} cores, load average before the run {load_before} "
        f"(1 / 5 / 15 min); {environment.python}.",
        "",
        "## Environment (binder/ built the way repo2docker does, in `_build/binder/venv`)",
        "",
    ]
    if environment.reused:
        lines.append(
            "The venv was up to date (same binder/ files, base list and Python): reused, not rebuilt."
        )
    for step, seconds in environment.steps:
        lines.append(f"- {step}: {seconds:.0f} s")
    lines += [
        f"- copy the repository to the rehearsal's home and run binder/postBuild: {home_s:.1f} s",
        f"- JupyterLab up and answering: {lab.startup_s:.1f} s"
        if lab
        else "- JupyterLab: not started",
        "",
        "Versions in the resulting environment: "
        + ", ".join(
            f"{name} {version}" for name, version in environment.key_versions.items()
        )
        + ".",
        "",
        f"binder/requirements.txt changed {len(environment.changed)} of the image's packages and added "
        f"{environment.added}; `pip check`: {environment.pip_check or 'no output'}",
        "",
    ]
    if environment.changed:
        from packaging.version import Version

        down = [
            name
            for name, (old, new) in environment.changed.items()
            if Version(new.split("+")[0]) < Version(old.split("+")[0])
        ]
        lines.append(
            f"Moved to an older version than the image's: {', '.join(down) or 'none'}."
        )
        lines.append("")
        lines.append(
            "Changed (image → after binder/requirements.txt): "
            + ", ".join(
                f"{name} {old} → {new}" for name, (old, new) in environment.changed.items()
            )
            + "."
        )
        lines.append("")
    lines += [
        "## Pages",
        "",
        "Each page opened at its launch link's path, run with Run > Run All Cells, its outputs compared "
        "with its reference notebook (tests/references/) under nbval's rules. MyST: what JupyterLab drew "
        "/ what the page's source has. Open: from loading the URL to a drawn notebook with an idle kernel.",
        "",
        "| page | opens as notebook | admonitions | dropdowns | maths | open (s) | run all (s) "
        "| slowest cell (s) | outputs as in the reference | result |",
        "|---|---|---|---|---|---:|---:|---:|---|---|",
    ]
    for run_ in runs:

        def of(kind: str, drawn=run_.drawn, markup=run_.markup) -> str:
            return f"{drawn[kind]} / {markup[kind]}" if drawn else f"— / {markup[kind]}"

        comparison = run_.comparison
        if comparison is None:
            same = "—"
        elif comparison.stale:
            same = comparison.stale
        else:
            same = f"{comparison.equal} of {comparison.compared} cells"
        slowest = (
            f"{run_.slowest_cell[1]:.1f} (cell {run_.slowest_cell[0]})"
            if run_.slowest_cell[0]
            else "—"
        )
        opened = f"yes, {run_.code_cells} code cells" if run_.code_cells else "**no**"
        lines.append(
            f"| `{run_.page}` | {opened} | {of('admonitions')} | {of('dropdowns')} | {of('math')} | "
            f"{run_.open_s:.1f} | {run_.run_s:.1f} | {slowest} | {same} | "
            f"{'ok' if run_.ok else '**FAIL**'} |"
        )
    lines += [
        "",
        f"**Whole rehearsal: {total_s:.0f} s wall** (environment, home, server, every page above).",
        "",
        "## What JupyterLab shows differently from the book (jupyterlab-myst's limits, not failures)",
        "",
        "| page | glued values shown as their key names | `literalinclude` listings (not drawn) "
        "| cross-page references not resolved |",
        "|---|---:|---:|---:|",
    ]
    for run_ in runs:
        keys = len(run_.markup["glue_keys"])
        lines.append(
            f"| `{run_.page}` | {run_.glue_as_names} of {keys} | {run_.markup['literalincludes']} | "
            f"{run_.drawn.get('xref_not_found', '—')} |"
        )
    lines.append("")
    for run_ in runs:
        notes = list(run_.problems)
        if run_.comparison:
            notes += [
                f"differs from the reference: {d}" for d in run_.comparison.differences
            ]
        notes += [f"blocked (not 127.0.0.1): {url}" for url in sorted(set(run_.blocked))]
        notes += run_.console_errors
        if notes:
            lines += [f"### `{run_.page}`", ""] + [f"- {note}" for note in notes] + [""]
    lines += [
        f"Screenshots: `{SHOTS.relative_to(ROOT)}/` (each page as opened, and after Run All).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "pages",
        nargs="*",
        help="pages to check (default: every page of _toc.yml with code)",
    )
    parser.add_argument(
        "--rebuild", action="store_true", help="rebuild the Binder venv even if up to date"
    )
    args = parser.parse_args(argv)
    started, load_before, clock = (
        datetime.now(UTC),
        load_average(),
        time.perf_counter(),
    )
    listed = [page for page in toc_pages() if has_code(page)]
    chosen = [(ROOT / name).resolve() for name in args.pages] or listed
    unknown = [str(page) for page in chosen if page not in listed]
    if unknown:
        print(f"not pages of _toc.yml with code: {unknown}", file=sys.stderr)
        return 2

    from playwright.sync_api import sync_playwright

    runs: list[PageRun] = []
    lab: JupyterLab | None = None
    try:
        print("building the Binder environment (or reusing it) ...", flush=True)
        environment = build_environment(args.rebuild)
        print("staging the home and running binder/postBuild ...", flush=True)
        home_s = stage_home()
        with JupyterLab() as lab, sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium_path(), args=CHROMIUM_ARGS
            )
            for page in chosen:
                print(f"  {page_id(page)} ...", flush=True)
                runs.append(check_page(browser, lab, page))
            browser.close()
    except RehearsalError as error:
        print(f"binder-check: {error}", file=sys.stderr)
        return 1
    text = report_markdown(
        environment, home_s, lab, runs, time.perf_counter() - clock, started, load_before
    )
    REPORT.write_text(text, encoding="utf-8")
    print(text)
    print(f"(written to {REPORT.relative_to(ROOT)})")
    return 0 if all(run_.ok for run_ in runs) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
