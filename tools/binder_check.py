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
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import reader_notebooks as rn  # noqa: E402
from book_pages import CELL_TIMEOUT_SECONDS, read_page, reference_path  # noqa: E402
from chromium import CHROMIUM_ARGS, HOST, block_third_party, chromium_path  # noqa: E402

BINDER = ROOT / "binder"
CONFIG = ROOT / "_config.yml"
BASE_LIST = ROOT / "tools" / "repo2docker_base.txt"
SANITIZE_CFG = ROOT / "tests" / "nbval_sanitize.cfg"
BUILD = ROOT / "_build"
WORK = BUILD / "binder"
VENV = WORK / "venv"
HOME = WORK / "home"
SHOTS = BUILD / "binder-screenshots"
REPORT = BUILD / "binder-check.md"
STAMP = VENV / ".binder-stamp"

CELL_TIMEOUT_S = CELL_TIMEOUT_SECONDS  # one cell: the book's own limit (_config.yml)
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


def page_id(page: Path) -> str:
    return page.resolve().relative_to(ROOT).as_posix()


def page_html(page: Path) -> str:
    """The built HTML path of a source page, relative to the HTML root (``chapters/01-x.html``)."""
    return page.resolve().relative_to(ROOT).with_suffix(".html").as_posix()


def book_config() -> dict:
    import yaml

    return yaml.safe_load(CONFIG.read_text(encoding="utf-8"))


def launch_urlpath(page: Path) -> tuple[str, str]:
    """The ``urlpath`` the page's rocket button asks Binder for, and where it was read.

    From the built page's launch link when there is a build (``_build/html``), else the reader
    notebook's path (``reader_notebooks.binder_urlpath``, which the build writes into the link).
    """
    built = BUILD / "html" / page_html(page)
    if built.exists():
        binderhub = book_config()["launch_buttons"]["binderhub_url"].rstrip("/")
        for href in re.findall(r'href="([^"]+)"', built.read_text(encoding="utf-8")):
            link = html.unescape(href)
            if link.startswith(binderhub):
                return parse_qs(urlsplit(link).query)["urlpath"][0], "built launch link"
    return rn.binder_urlpath(page), "reader_notebooks.binder_urlpath"


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
# report what the reader sees. Markdown cells: the rendered text (maths left out, headings marked
# as section breaks), the code blocks, the links (as written and as resolved), the ids anchors
# can reach, the dropdowns; code cells: whether the input is in view, and its source.
SURVEY = r"""async () => {
    const notebook = window.jupyterapp.shell.currentWidget.content;
    const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
    const MATH = '.katex, .katex-display, mjx-container, .MathJax, .MathJax_Display, .math';
    const textOf = node => {
        if (node.nodeType === Node.TEXT_NODE) return node.data;
        if (node.nodeType !== Node.ELEMENT_NODE) return '';
        if (node.matches(MATH)) return ' ';
        // jupyterlab-myst's number of a display equation, "(1)" (see LIMITS)
        if (node.matches('.select-none') && /^\(\d+\)$/.test(node.textContent.trim())) return ' ';
        if (node.matches('style, script')) return '';
        const inner = Array.from(node.childNodes).map(textOf).join('');
        if (/^H[1-6]$/.test(node.tagName)) return '\n\u00a7\u00a7' + inner + '\u00a7\u00a7\n';
        if (node.matches('p, li, pre, div, blockquote, summary, details, table, tr, td, th, dt, dd, aside'))
            return ' ' + inner + ' ';
        return inner;
    };
    const proseOf = node => {
        const copy = node.cloneNode(true);
        copy.querySelectorAll('pre, code, ' + MATH).forEach(el => el.replaceWith(' '));
        return copy.textContent;
    };
    const found = {markdown: [], code: [], unrendered: 0, errors: [], ids: [],
                   admonitions: 0, math: 0};
    for (let i = 0; i < notebook.widgets.length; i++) {
        const cell = notebook.widgets[i];
        await notebook.scrollToItem(i, 'center');
        const reader = cell.model.getMetadata ? (cell.model.getMetadata('reader') || '') : '';
        if (cell.model.type === 'markdown') {
            let drawn = null;
            for (let k = 0; k < 100 && !(drawn && drawn.childElementCount); k++) {
                drawn = cell.node.querySelector('.myst, .jp-RenderedMarkdown');
                if (!(drawn && drawn.childElementCount)) await sleep(50);
            }
            if (!(drawn && drawn.childElementCount)) { found.unrendered += 1; continue; }
            found.math += drawn.querySelectorAll('.katex, mjx-container, .MathJax').length;
            found.admonitions += drawn.querySelectorAll('blockquote, aside.myst-admonition').length;
            drawn.querySelectorAll('[id], a[name]').forEach(
                el => found.ids.push(el.id || el.getAttribute('name')));
            found.markdown.push({
                index: i + 1, reader: reader, text: textOf(drawn), prose: proseOf(drawn),
                pre: Array.from(drawn.querySelectorAll('pre')).map(el => el.textContent),
                links: Array.from(drawn.querySelectorAll('a[href]')).map(
                    a => ({raw: a.getAttribute('href'), href: a.href, text: a.textContent.trim()})),
                details: drawn.querySelectorAll('details').length,
                open_details: drawn.querySelectorAll('details[open]').length,
            });
        } else if (cell.model.type === 'code') {
            found.code.push({index: i + 1, reader: reader, input_hidden: !!cell.inputHidden,
                             source: cell.model.sharedModel.getSource()});
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
MATH_SOURCE = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", flags=re.S)
DIRECTIVE_LINE = re.compile(r"^\s*(?:```+|:::+)\{(?P<name>[\w:-]+)\}\s*(?P<argument>.*)$")
# What must never be drawn as text in the prose: a role, a directive fence, a MyST label.
RAW_MYST = re.compile(r"\{[a-z][\w:-]*\}|(?:```|:::)\{|^\s*\([\w-]+\)=", flags=re.M)


@dataclass
class Expected:
    """What the reader must see on a page, from its source and reference."""

    glue_keys: list[str]
    listings: list[tuple[str, str]]  # (what, code)
    captions: list[str]  # "Fig. N caption" (plain)
    dropdowns: int
    visible_sources: set[
        str
    ]  # code a reader may see: the page's cells with their input shown
    code_cells: int  # in the reader notebook


def expected_view(page: Path, notebook) -> Expected:
    """What ``page``'s reader notebook must show (computed from the page, not from the notebook)."""
    import nbformat

    source = read_page(page)
    reference = nbformat.read(reference_path(page), as_version=4)
    context = rn.Context(page, rn.read_book(), rn.glue_values(reference), "notebook", {})
    listings, dropdowns = [], 0
    text = page.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(text):
        match = DIRECTIVE_LINE.match(line)
        if not match:
            continue
        if match["name"] == "dropdown":
            dropdowns += 1
        if match["name"] == "literalinclude":
            options = {}
            for following in text[number + 1 :]:
                option = re.match(r"^\s*:([\w-]+):\s*(.*)$", following)
                if not option:
                    break
                options[option[1]] = option[2].strip()
            code = rn.literalinclude(match["argument"], options, context)
            what = f"{match['argument'].strip()} {options.get('pyobject', '')}".strip()
            listings.append((what, code.split("\n", 1)[1].rsplit("\n", 1)[0]))
    book = rn.read_book()
    captions = []
    for index, cell in enumerate(source.cells):
        if cell.cell_type == "code" and rn.figure_caption(cell):
            caption = rn.figure_caption(cell)[0]
            number = book.figure_numbers[(page_id(page), index)]
            captions.append(f"Fig. {number} {MATH_SOURCE.sub(' ', caption)}")
    visible = {
        rn.strip_glue(cell.source)
        for cell in source.cells
        if cell.cell_type == "code"
        and not set(cell.metadata.get("tags", []))
        & {"remove-cell", "remove-input", "hide-input"}
    }
    return Expected(
        sorted(rn.glue_values(reference)),
        listings,
        captions,
        dropdowns,
        visible,
        sum(cell.cell_type == "code" for cell in notebook.cells),
    )


# A wall-clock time in prose ("0.71 s", "0.71 seconds of wall-clock time", the formats of
# transformer_lab.timing): it differs from run to run, as nbval's sanitizer knows.
WALL_TIME = re.compile(r"\b\d+(?:[.,]\d+)?\s*(?:ms|s|min|seconds?|minutes?)\b")


def words(text: str) -> list[str]:
    """Visible text normalised for comparison: words and numbers only (maths left out before),
    wall-clock times masked."""
    return re.findall(r"[^\W_]+", WALL_TIME.sub(" wall time ", text.replace("\u2212", "-")))


def judge_view(
    page: Path, notebook_path: Path, drawn: dict, expected: Expected, html_root: Path
) -> list[str]:
    """Every way the drawn notebook departs from what the reader must see (one line each)."""
    problems: list[str] = []
    markdown = [cell for cell in drawn["markdown"] if cell["reader"] != rn.PREAMBLE]
    prose = "\n".join(cell["prose"] for cell in markdown)
    shown_keys = [
        key for key in expected.glue_keys if re.search(rf"\b{re.escape(key)}\b", prose)
    ]
    if shown_keys:
        problems.append(f"glue keys in the rendered prose: {shown_keys}")
    raw = sorted(set(RAW_MYST.findall(prose)))
    if raw:
        problems.append(f"raw MyST in the rendered prose: {raw}")
    if drawn["unrendered"]:
        problems.append(f"{drawn['unrendered']} markdown cells not drawn")
    code_blocks = [" ".join(block.split()) for cell in markdown for block in cell["pre"]]
    for what, code in expected.listings:
        if not any(" ".join(code.split()) in block for block in code_blocks):
            problems.append(f"listing missing: {what}")
    text = " ".join(words(" ".join(cell["text"] for cell in markdown)))
    for caption in expected.captions:
        if " ".join(words(caption)) not in text:
            problems.append(f"caption missing: {caption[:80]!r}")
    details = sum(cell["details"] for cell in markdown)
    if details != expected.dropdowns:
        problems.append(f"{details} dropdowns drawn, the page has {expected.dropdowns}")
    opened = sum(cell["open_details"] for cell in markdown)
    if opened:
        problems.append(f"{opened} dropdowns open on load (they start closed)")
    for cell in drawn["code"]:
        if cell["input_hidden"] or cell["reader"] == rn.SETUP:
            continue
        if (
            cell["reader"] == rn.BOOKKEEPING
            or cell["source"] not in expected.visible_sources
        ):
            first = cell["source"].strip().splitlines()[:1] or [""]
            problems.append(
                f"book-keeping cell in view: cell {cell['index']} ({first[0][:70]!r}) is not one "
                "the HTML shows"
            )
    ids = set(drawn["ids"])
    for cell in markdown:
        for link in cell["links"]:
            problem = link_problem(link, notebook_path, ids, html_root)
            if problem:
                problems.append(
                    f"cell {cell['index']}: link {link['text'][:40]!r}: {problem}"
                )
    return problems


def link_problem(link: dict, notebook_path: Path, ids: set[str], html_root: Path) -> str:
    """Why a drawn link does not resolve, or '' when it does."""
    raw = (link.get("raw") or "").strip()
    if raw in {"", "#"}:
        return f"goes to {raw or 'nothing'!r}"
    target, _, fragment = raw.partition("#")
    published = rn.repository_settings()["html"] + "/"
    if target.startswith(published):
        page = html_root / target[len(published) :]
        if not page.is_file():
            return f"{target} is not a page of the built book"
        if fragment and f'id="{fragment}"' not in page.read_text(encoding="utf-8"):
            return f"{page.name} has no anchor #{fragment}"
        return ""
    if re.match(r"^[a-z]+:", target):
        return ""  # another site (documentation): not loaded, the rehearsal is offline
    if not target:
        return "" if fragment in ids else f"no anchor #{fragment} on this notebook"
    there = (notebook_path.parent / target).resolve()
    if not there.is_file():
        return f"{target} does not exist in the Binder home"
    if fragment.startswith("cell-id="):
        # JupyterLab opens (or shows) the notebook and scrolls to the cell with that id, which
        # must hold the target (reader_notebooks.link_to).
        import nbformat

        label = fragment.removeprefix("cell-id=")
        cells = [c for c in nbformat.read(there, as_version=4).cells if c.id == label]
        if not cells or f"({label})=" not in cells[0].source:
            return f"{target} has no cell {label!r} holding that target"
        return ""
    content = there.read_text(encoding="utf-8")
    if (
        fragment
        and f'id=\\"{fragment}\\"' not in content
        and f"({fragment})=" not in content
    ):
        return f"{target} has no anchor #{fragment}"
    return ""


class _HtmlSections(HTMLParser):
    """The visible prose of a built page's article, by section: code cells left out (but not
    figure captions), maths and header links left out; headings start sections."""

    SKIP = ("cell_input", "cell_output", "headerlink", "math", "prev-next-area")
    VOID = {"br", "img", "hr", "input", "meta", "link", "source", "wbr", "col", "area"}

    def __init__(self) -> None:
        super().__init__()
        self.inside = 0
        self.stack: list[tuple[str, bool]] = []
        self.parts: list[str] = []

    def skipping(self) -> bool:
        return any(skip for _, skip in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "article" and "bd-article" in classes:
            self.inside += 1
        if not self.inside or tag in self.VOID:
            return
        skip = tag in {"script", "style"} or any(name in classes for name in self.SKIP)
        if tag == "figcaption":
            # a figure's caption counts, even inside a cell's output
            self.stack = [(name, False) for name, _ in self.stack]
        self.stack.append((tag, skip))
        if re.fullmatch(r"h[1-6]", tag) and not self.skipping():
            self.parts.append("\n\u00a7\u00a7")
        elif tag in {"p", "li", "pre", "div", "dt", "dd", "td", "th", "summary"}:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if not self.inside or tag in self.VOID:
            return
        while self.stack:
            name, _ = self.stack.pop()
            if re.fullmatch(r"h[1-6]", name) and not self.skipping():
                self.parts.append("\u00a7\u00a7\n")
            if name == tag:
                if tag == "article":
                    self.inside -= 1
                break

    def handle_data(self, data: str) -> None:
        if self.inside and not self.skipping():
            self.parts.append(data)


def sections(text: str) -> list[tuple[str, str]]:
    """``[(heading, body)]`` from text whose headings are marked ``§§heading§§``."""
    found: list[tuple[str, str]] = [("(before the title)", "")]
    for piece in re.split(r"(\u00a7\u00a7.*?\u00a7\u00a7)", text, flags=re.S):
        if piece.startswith("\u00a7\u00a7"):
            found.append((" ".join(words(piece)), ""))
        else:
            heading, body = found[-1]
            found[-1] = (heading, body + " " + piece)
    return [
        (heading, " ".join(words(body)))
        for number, (heading, body) in enumerate(found)
        if number or words(body)
    ]


def html_sections(html_file: Path) -> list[tuple[str, str]]:
    parser = _HtmlSections()
    parser.feed(html_file.read_text(encoding="utf-8"))
    # The built page's own title sits in the first heading; the rest follows the notebook.
    return sections("".join(parser.parts))


def compare_sections(
    notebook: list[tuple[str, str]], built: list[tuple[str, str]]
) -> list[str]:
    """Every section whose normalised visible text differs between notebook and HTML."""
    import difflib

    differences = []
    theirs = dict(built)
    ours = dict(notebook)
    for heading in [h for h, _ in built if h not in ours]:
        differences.append(f"section {heading!r}: in the HTML, not in the notebook")
    for heading in [h for h, _ in notebook if h not in theirs]:
        differences.append(f"section {heading!r}: in the notebook, not in the HTML")
    for heading, body in notebook:
        if heading not in theirs or theirs[heading] == body:
            continue
        left, right = theirs[heading].split(), body.split()
        changes = []
        for tag, a0, a1, b0, b1 in difflib.SequenceMatcher(
            a=left, b=right, autojunk=False
        ).get_opcodes():
            if tag != "equal":
                changes.append(
                    f"HTML {' '.join(left[a0:a1])[:80]!r} / notebook {' '.join(right[b0:b1])[:80]!r}"
                )
        differences.append(f"section {heading!r}: " + "; ".join(changes[:4]))
    return differences


@dataclass
class PageRun:
    """Everything observed while one page's reader notebook was opened and run in JupyterLab."""

    page: str
    urlpath: str
    urlpath_source: str
    open_s: float = 0.0
    run_s: float = 0.0
    slowest_cell: tuple[int, float] = (0, 0.0)
    code_cells: int = 0
    drawn: dict = field(default_factory=dict)  # what JupyterLab drew
    view_problems: list[str] = field(default_factory=list)  # what the reader sees, judged
    section_differences: list[str] = field(default_factory=list)  # against the built HTML
    problems: list[str] = field(default_factory=list)  # it did not open, run, or errored
    blocked: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    comparison: Comparison | None = None
    screenshots: list[str] = field(default_factory=list)
    explorers: list[str] = field(default_factory=list)  # "kind: control -> status shown"

    @property
    def ok(self) -> bool:
        return (
            not self.problems
            and not self.view_problems
            and not self.section_differences
            and (self.comparison is None or self.comparison.ok)
        )


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


# The code cells whose outputs hold a widget (the explorers, transformer_lab.explorers), each
# marked with data-tl-cell so that a locator finds it once it is drawn.
EXPLORER_CELLS = """() => {
    const notebook = window.jupyterapp.shell.currentWidget.content;
    const found = [];
    notebook.widgets.forEach((cell, i) => {
        if (cell.model.type !== 'code') return;
        const outputs = cell.model.toJSON().outputs || [];
        if (!outputs.some(o => o.data && o.data['application/vnd.jupyter.widget-view+json'])) return;
        cell.node.dataset.tlCell = String(i);
        found.push(i);
    });
    return found;
}"""
SCROLL_TO_CELL = (
    "(i) => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'center')"
)


def operate(panel, kind: str, data: dict, keyboard) -> tuple[str, str]:
    """Move one control of an explorer as a reader would; (what was done, text the status must hold).

    The expected text comes from the explorer's own data (the state the control selects).
    """
    if kind in {"temperature", "merges"}:
        slider = panel.locator("input[type=range]").first
        slider.focus()
        keyboard.press("End")  # the slider's last state, from the keyboard
        last = data["states"][-1]
        expected = last["label"] if kind == "temperature" else f"{last['merges']} of"
        return "End on the slider", expected
    if kind == "width":
        select = panel.locator("select").first
        select.select_option(index=len(data["states"]) - 1)
        return "the last width chosen", f"d = {data['states'][-1]['width']}"
    if kind == "mask":
        panel.locator("input[type=checkbox]").first.check()
        return "the causal mask ticked", "causal on"
    if kind == "heads":
        panel.locator("input[type=radio]").nth(1).check()
        return "head 1 chosen", "head 1"
    raise RehearsalError(
        f"an explorer of an unknown kind {kind!r}: teach operate() its control"
    )


def operate_explorers(tab, result: PageRun, stem: str) -> None:
    """Each explorer drawn after Run All: move one control, and read the status it then shows.

    A problem when the explorer is not drawn (a dead widget), its status does not change, or it
    does not show the state the control selected.
    """
    for index in tab.evaluate(EXPLORER_CELLS):
        tab.evaluate(SCROLL_TO_CELL, index)
        panel = tab.locator(f'[data-tl-cell="{index}"] .tl-explorer')
        try:
            panel.first.wait_for(state="visible", timeout=30_000)
        except Exception:  # Playwright's TimeoutError
            result.problems.append(f"the explorer of cell {index + 1} was not drawn")
            continue
        panel = panel.first
        kind = panel.get_attribute("data-explorer") or "?"
        data = json.loads(panel.locator("script.tl-explorer-data").text_content())
        status = panel.locator(".tl-status")
        before = status.inner_text()
        action, expected = operate(panel, kind, data, tab.keyboard)
        after = status.inner_text()
        result.explorers.append(f"{kind}: {action} → “{after}”")
        if after == before or expected not in after:
            result.problems.append(
                f"the {kind} explorer (cell {index + 1}) did not follow its control ({action}): "
                f"its status read “{after}”, expected it to name “{expected}”"
            )
        screenshot(tab, f"{stem}-explorer-{kind}.png", result)


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
    """Open ``page``'s reader notebook at its launch path, judge what it shows, run it, compare."""
    import nbformat

    urlpath, source = launch_urlpath(page)
    result = PageRun(page=page_id(page), urlpath=urlpath, urlpath_source=source)
    path = urlpath.removeprefix("lab/tree/")
    notebook_file = HOME / path
    if not notebook_file.is_file():
        result.problems.append(
            f"the launch link opens {path}, which binder/postBuild did not write"
        )
        return result
    expected = expected_view(page, nbformat.read(notebook_file, as_version=4))
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
            and CROSS_CELL_REFERENCE not in message.text
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
            lambda s: s.get("ready") and s.get("path") == path,
            OPEN_TIMEOUT_S,
            f"{path} did not open",
        )
        if not state["notebook"]:
            screenshot(tab, f"{stem}-opened.png", result)
            result.problems.append(f"opened as {state['widget']!r}, not as a notebook")
            return result
        state = wait_for(
            tab,
            STATE_PROBE,
            lambda s: s.get("kernel") == "idle",
            OPEN_TIMEOUT_S,
            f"{path}: the kernel was not idle",
        )
        result.drawn = tab.evaluate(SURVEY)
        result.open_s = time.perf_counter() - start
        result.code_cells = sum(cell["type"] == "code" for cell in state["cells"])
        if result.code_cells != expected.code_cells:
            result.problems.append(
                f"{result.code_cells} code cells in JupyterLab, the notebook has "
                f"{expected.code_cells}"
            )
        result.view_problems = judge_view(
            page, notebook_file, result.drawn, expected, BUILD / "html"
        )
        built = BUILD / "html" / page_html(page)
        shown = "".join(
            cell["text"]
            for cell in result.drawn["markdown"]
            if cell["reader"] != rn.PREAMBLE
        )
        result.section_differences = compare_sections(sections(shown), html_sections(built))
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
        operate_explorers(tab, result, stem)
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
    """Compare ``cells`` (a reader notebook's code cells, as JSON) with the page's reference.

    The reader notebook's book-keeping cells (``metadata.reader``) have no counterpart in view;
    every other cell is a code cell of the page that is not ``remove-cell``, without its glue
    calls, and is compared with that cell's reference outputs under nbval's rules.
    """
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
        if cell.cell_type == "code" and "remove-cell" not in cell.metadata.get("tags", [])
    ]
    shown = [
        cell
        for cell in cells
        if (cell.get("metadata") or {}).get("reader") not in rn.NOT_THE_PAGES
    ]
    shown_sources = [
        "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for cell in shown
    ]
    if shown_sources != [rn.strip_glue(cell.source) for cell in reference]:
        result.stale = (
            f"the notebook's code no longer matches {reference_file.relative_to(ROOT)} "
            "(run make refresh, then rewrite the reader notebooks)"
        )
        return result
    rules = _nbval_rules()
    for number, (ref, cell) in enumerate(zip(reference, shown), start=1):
        if ref.execution_count is None:
            continue  # nbval does not compare a reference cell that was never run
        result.compared += 1
        rules.comparison_traceback = []
        expected = [
            output
            for output in ref.outputs
            if "scrapbook" not in (output.get("metadata") or {})
        ]
        if rules.compare_outputs(
            as_notebook_outputs(cell.get("outputs", [])), coalesce_streams(expected)
        ):
            result.equal += 1
        else:
            detail = " ".join(
                line.strip() for line in rules.comparison_traceback if line.strip()
            )
            result.differences.append(f"code cell {number}: {detail[:400]}")
    return result


# --------------------------------------------------------------------------- standalone


# Outside the clone, as a reader's download is: a venv inside it would find the clone's data/ by
# walking up from the installed package, and so pass where a download fails ("no data/ folder").
STANDALONE = Path(tempfile.gettempdir()) / "book-reader-standalone-venv"
STANDALONE_KERNEL = "reader-standalone"


def outside_the_clone(folder: Path) -> str | None:
    """Why ``folder`` cannot stand for a reader's machine (inside the clone, or below a ``data/``
    folder the package would find by walking up), or None."""
    folder = folder.resolve()
    if folder.is_relative_to(ROOT.resolve()):
        return f"{folder} is inside the clone {ROOT}: the rehearsal would see the clone's data/"
    for parent in (folder, *folder.parents):
        if (parent / "data").is_dir():
            return f"{parent / 'data'} lies above {folder}: the package would find it"
    return None


def standalone_environment() -> tuple[float, str]:
    """A fresh venv made by the install command a downloaded notebook gives (its first cell,
    ``reader_notebooks.install_command``), with the repository's archive and lock replaced by
    local copies: the package, its runtime dependencies at the lock's versions, JupyterLab and
    torch's CPU build. Seconds, and its packages. Fails on a CUDA package or a missing JupyterLab."""
    start = time.perf_counter()
    if outside_the_clone(STANDALONE) is not None:
        raise RehearsalError(outside_the_clone(STANDALONE))
    shutil.rmtree(STANDALONE, ignore_errors=True)
    python = runtime_python()
    run([python, "-m", "venv", str(STANDALONE)], what="creating the standalone venv")
    py = STANDALONE / "bin" / "python"
    # The repository's archive, as GitHub serves it: one folder holding the tracked files.
    archive = shutil.make_archive(
        str(WORK / "repository"), "zip", root_dir=HOME.parent, base_dir=HOME.name
    )
    command = rn.install_command(
        rn.repository_settings(),
        lock=str(ROOT / "requirements.txt"),
        archive=Path(archive).as_uri(),
    )
    words = shlex.split(command)
    if words[:4] != ["python", "-m", "pip", "install"]:
        raise RehearsalError(
            f"the notebooks' install command is not a pip install: {command}"
        )
    # PyTorch's index cannot be reached here (torch's CPU wheel comes from the local cache):
    # no retries, so pip moves on at once.
    run(
        [str(py), *words[1:]],
        env={**pip_env(), "PIP_RETRIES": "0", "PIP_PROGRESS_BAR": "off"},
        what=f"the notebooks' install command ({command})",
    )
    packages = installed(py)
    cuda = sorted(name for name in packages if name.startswith("nvidia"))
    if cuda or "+cpu" not in packages.get("torch", "") and sys.platform == "linux":
        raise RehearsalError(
            f"the install command brought torch {packages.get('torch')} and CUDA packages {cuda}"
        )
    if not (STANDALONE / "bin" / "jupyter-lab").exists():
        raise RehearsalError("the install command left out JupyterLab (jupyter-lab)")
    leaked = run(
        [
            str(py),
            "-c",
            "import importlib.util as u; print([m for m in ('myst_nb', 'jupyter_book', "
            "'sphinx') if u.find_spec(m)])",
        ],
        what="checking the standalone venv",
    ).strip()
    if leaked != "[]":
        raise RehearsalError(f"the standalone venv has the book's build tools: {leaked}")
    run(
        [
            str(py),
            "-m",
            "ipykernel",
            "install",
            "--prefix",
            str(STANDALONE),
            "--name",
            STANDALONE_KERNEL,
            "--display-name",
            "reader (standalone)",
        ],
        what="registering the standalone kernel",
    )
    return (
        time.perf_counter() - start,
        f"{len(packages)} packages, torch {packages['torch']}, no nvidia-*, JupyterLab "
        f"{packages.get('jupyterlab')}",
    )


def run_standalone(pages: list[Path]) -> list[tuple[str, float, str]]:
    """Run All on each page's downloadable reader notebook (links to the HTML) in the standalone
    venv, from a folder outside the repository; compare its outputs with the reference."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    os.environ["JUPYTER_PATH"] = str(STANDALONE / "share" / "jupyter")
    # A reader's machine has no variable pointing at the clone's data.
    os.environ.pop("CLOUDWAVE_DATA_DIR", None)
    results = []
    with tempfile.TemporaryDirectory(prefix="reader-standalone-") as folder:
        if outside_the_clone(Path(folder)) is not None:
            raise RehearsalError(outside_the_clone(Path(folder)))
        for page in pages:
            start = time.perf_counter()
            notebook = rn.make_reader_notebook(page, links="html")
            for cell in notebook.cells:
                if cell.cell_type == "code":
                    cell.outputs = []
                if cell.metadata.get("reader") == rn.SETUP:
                    # A starter the set-up cell downloads comes from the staged copy (no network).
                    cell.source = cell.source.replace(
                        rn.raw_files_url(rn.repository_settings()), HOME.as_uri()
                    )
            client = NotebookClient(
                notebook,
                timeout=CELL_TIMEOUT_S,
                kernel_name=STANDALONE_KERNEL,
                resources={"metadata": {"path": folder}},
                shutdown_kernel="immediate",
            )
            try:
                client.execute()
            except CellExecutionError as error:
                results.append(
                    (
                        page_id(page),
                        time.perf_counter() - start,
                        f"Run All failed: {str(error).strip().splitlines()[-1][:200]}",
                    )
                )
                continue
            cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
            comparison = compare_with_reference(page, [dict(cell) for cell in cells])
            verdict = (
                comparison.stale
                or "; ".join(comparison.differences)
                or f"ok, {comparison.equal} of {comparison.compared} cells as in the reference"
            )
            results.append((page_id(page), time.perf_counter() - start, verdict))
    return results


# --------------------------------------------------------------------------- report


def load_average() -> str:
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def report_markdown(
    environment: Environment,
    standalone: tuple[float, str, list[tuple[str, float, str]]] | None,
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
        "Each page's reader notebook opened at its launch link's path (written by binder/postBuild, "
        "tools/reader_notebooks.py), judged as drawn (glue keys, raw MyST, listings, captions, "
        "dropdowns, links, book-keeping in view), its text compared section by section with the "
        "built HTML page (visible prose, words only, maths left out), then Run > Run All Cells and "
        "its outputs compared with the reference notebook under nbval's rules. Open: from loading "
        "the URL to a drawn notebook with an idle kernel.",
        "",
        "| page | opened | code cells | what the reader sees | sections as in the HTML "
        "| open (s) | run all (s) | slowest cell (s) | outputs as in the reference | result |",
        "|---|---|---:|---|---|---:|---:|---:|---|---|",
    ]
    for run_ in runs:
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
        view = (
            f"{len(run_.view_problems)} problems" if run_.view_problems else "as required"
        )
        if not run_.drawn:
            view = "—"
        differ = (
            f"{len(run_.section_differences)} differ"
            if run_.section_differences
            else "same"
        )
        lines.append(
            f"| `{run_.page}` | `{run_.urlpath}` ({run_.urlpath_source}) | {run_.code_cells} | "
            f"{view} | {differ if run_.drawn else '—'} | {run_.open_s:.1f} | {run_.run_s:.1f} | "
            f"{slowest} | {same} | {'ok' if run_.ok else '**FAIL**'} |"
        )
    lines += [""]
    operated = [(run_.page, line) for run_ in runs for line in run_.explorers]
    if operated:
        lines += [
            "## Explorers, operated in JupyterLab after Run All",
            "",
            "One control of each explorer moved as a reader would, and the status it then showed:",
            "",
        ]
        lines += [f"- `{page}`, {line}" for page, line in operated]
        lines.append("")
    if standalone:
        lines += [
            "## Standalone run (a downloaded notebook)",
            "",
            "A fresh venv made by the install command a downloaded notebook gives (the package "
            "from the repository's archive with JupyterLab, the lock's versions, torch's CPU "
            "build; no myst_nb, no Jupyter Book, no Sphinx: checked), made in "
            f"{standalone[0]:.0f} s ({standalone[1]}). Each page's downloadable reader notebook "
            "(links to the published HTML) run from a folder outside the repository:",
            "",
            "| page | run all (s) | outputs |",
            "|---|---:|---|",
        ]
        lines += [
            f"| `{page}` | {seconds:.1f} | {verdict} |"
            for page, seconds, verdict in standalone[2]
        ]
        lines.append("")
    lines += [
        f"**Whole rehearsal: {total_s:.0f} s wall** (environment, home, server, every page above"
        + (", the standalone run" if standalone else "")
        + ").",
        "",
        "## What remains different in JupyterLab (jupyterlab-myst's limits)",
        "",
    ]
    lines += [f"- **{name}**: {reason}" for name, reason in LIMITS]
    lines.append("")
    for run_ in runs:
        notes = list(run_.problems) + run_.view_problems + run_.section_differences
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


# jupyterlab-myst's console message for a link to a label in another cell (see LIMITS): not an
# error of the notebook, since every drawn link is checked against the drawn ids (link_problem).
CROSS_CELL_REFERENCE = "No target for internal reference"

# What JupyterLab still cannot do as the book does, and why it cannot be fixed from the book's side.
LIMITS = [
    (
        "MyST pages opened directly",
        "a double-clicked chapters/*.md (jupytext) shows glue keys, no listings and unresolved "
        "cross-page references: jupyterlab-myst implements neither glue nor literalinclude and "
        "resolves no reference to another file. The launch links therefore open the reader "
        "notebooks (notebooks/), never the .md pages.",
    ),
    (
        "Maths",
        "jupyterlab-myst typesets with KaTeX, the HTML with MathJax: the same TeX, drawn by two "
        "engines; the section comparison leaves maths out.",
    ),
    (
        "Equation numbers",
        "jupyterlab-myst numbers every display equation, (1), (2), ..., at its right; the HTML "
        "numbers none. Neither Markdown nor jupyterlab-myst's settings turn that off for `$$` "
        "blocks; the section comparison leaves the numbers out.",
    ),
    (
        "Figure alt text",
        "JupyterLab's image renderer takes no alt text from a notebook output; the figure's "
        "caption is a Markdown cell right under it instead.",
    ),
    (
        "Links to a section",
        "jupyterlab-myst renders each Markdown cell on its own, so for a label in another cell "
        "it logs 'No target for internal reference' in the browser console. The links do not "
        "rely on it: each names the notebook file and the cell whose id is the label "
        "(#cell-id=label), which JupyterLab scrolls to, drawn or not; the rehearsal checks that "
        "cell holds the label and leaves those console messages out of the notes below.",
    ),
    (
        "Book-keeping cells a later cell needs",
        "a notebook cannot run a cell it does not hold: the few statements of a remove-cell cell "
        "that a later visible cell reads stay, collapsed (input and output hidden).",
    ),
]


# What the built HTML is made from: a build older than any of these is stale.
BOOK_SOURCES = (
    "_config.yml",
    "_toc.yml",
    "intro.md",
    "chapters",
    "exercises",
    "code",
    "_ext",
)
# What Python and Jupyter write next to the sources (ignored by git): not part of the book.
UNBUILT = {"__pycache__", ".ipynb_checkpoints"}


def book_build_problem(html: Path) -> str:
    """Why the HTML in ``html`` cannot be judged as it is ('' when it is a current build).

    The rehearsal compares each reader notebook with its built page, so a build older than any
    page, package file or configuration would report differences that are not there."""
    index = html / "index.html"
    if not index.exists():
        return f"no {html.relative_to(ROOT) if html.is_relative_to(ROOT) else html}"
    built = index.stat().st_mtime
    for name in BOOK_SOURCES:
        source = ROOT / name
        # rglob of a missing folder yields nothing
        for file in [source] if source.is_file() else source.rglob("*"):
            if any(part in UNBUILT or part.endswith(".egg-info") for part in file.parts):
                continue
            if file.is_file() and file.stat().st_mtime > built:
                return f"{file.relative_to(ROOT)} changed after the last build"
    return ""


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
    parser.add_argument(
        "--no-standalone",
        action="store_true",
        help="skip the standalone run (a fresh venv with only the package)",
    )
    args = parser.parse_args(argv)
    started, load_before, clock = (
        datetime.now(UTC),
        load_average(),
        time.perf_counter(),
    )
    listed = [page.resolve() for page in rn.reader_pages()]
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
        why = book_build_problem(BUILD / "html")
        if why:
            print(f"{why}: building the book (make book) ...", flush=True)
            run(["make", "book"], what="make book")
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
        standalone = None
        if not args.no_standalone:
            print("standalone run: a fresh venv with only the package ...", flush=True)
            seconds, packages = standalone_environment()
            standalone = (seconds, packages, run_standalone(chosen))
    except RehearsalError as error:
        print(f"binder-check: {error}", file=sys.stderr)
        return 1
    text = report_markdown(
        environment,
        standalone,
        home_s,
        lab,
        runs,
        time.perf_counter() - clock,
        started,
        load_before,
    )
    REPORT.write_text(text, encoding="utf-8")
    print(text)
    print(f"(written to {REPORT.relative_to(ROOT)})")
    standalone_ok = standalone is None or all(
        verdict.startswith("ok") for _, _, verdict in standalone[2]
    )
    return 0 if all(run_.ok for run_ in runs) and standalone_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
