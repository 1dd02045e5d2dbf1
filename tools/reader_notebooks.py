"""Reader notebooks: each page with code as a plain Jupyter notebook that shows the book's lesson.

JupyterLab (even with jupyterlab-myst) and a downloaded ``.ipynb`` know nothing of MyST-NB: glue,
``literalinclude`` and cross-page references are Sphinx's. So the notebook a reader launches on
Binder or downloads from a page is made here, from the page (``chapters/NN-slug.md``) and its
committed, executed reference (``tests/references/...ipynb``):

- every glued value (``{glue:text}`key```, ``{glue}``, ``{glue:md}``) is replaced by its value,
  read from the reference's glue outputs, formatted as MyST-NB formats it;
- every ``literalinclude`` becomes a fenced code listing of the included source (``:pyobject:``,
  ``:lines:``), read from the package as it is;
- every ``{ref}``/``{doc}`` becomes a Markdown link that resolves: ``#label`` on the same page,
  the sibling notebook (``links="notebook"``, Binder) or the published HTML page and anchor
  (``links="html"``, the download button), each target marked with ``<a id="label"></a>``;
- admonitions become block quotes with their title, dropdowns closed ``<details>``, definition
  lists bullet lists, every figure's caption a Markdown cell under its code cell ("Fig. N", numbered
  across the book in the order of ``_toc.yml``, as Sphinx numbers them);
- the book-keeping the HTML hides is out of view: ``glue`` calls and ``from myst_nb import glue``
  go everywhere; a ``remove-cell`` cell loses its asserts and every statement no later cell needs,
  and what is left (if anything) stays as a collapsed cell; ``remove-input`` / ``hide-input``
  cells show only their output; ``remove-output`` cells keep their code and no output.

Visible cells keep the reference's outputs (an explorer's as its text line: its widget comes with
Run All), so a downloaded notebook reads like the HTML before it runs; Run All recomputes them
with only the package (no myst_nb, no Jupyter Book). A MyST construct this module does not know
is an error naming the page and the construct, never a silent copy.

    python tools/reader_notebooks.py write [--links notebook|html] [--out DIR] [PAGE.md ...]
    python tools/reader_notebooks.py check     # every page converts; prints what each holds

Binder: ``binder/postBuild`` writes them into ``notebooks/`` (the launch links open them there);
the HTML build (``_ext/book_html.py``) writes the ``links="html"`` variant behind each page's
download button. The repository and branch the links name come from ``repository_settings``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shlex
import sys
import textwrap
from ast import literal_eval
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from book_pages import ROOT, has_code, read_page, reference_path, toc_pages  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
# What the generated cells are, in ``cell.metadata["reader"]`` (the rehearsal reads it).
PREAMBLE, CAPTION, BOOKKEEPING = "preamble", "caption", "bookkeeping"
# The set-up code cell, first of the code cells: installs the package if missing, makes the data.
SETUP = "setup"
# Code cells that are not a visible cell of the page.
NOT_THE_PAGES = {BOOKKEEPING, SETUP}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
HIDE_INPUT_TAGS = {"remove-input", "hide-input"}
HIDE_OUTPUT_TAGS = {"remove-output", "hide-output"}
ADMONITIONS = {
    "admonition": "",
    "note": "Note",
    "tip": "Tip",
    "hint": "Hint",
    "important": "Important",
    "warning": "Warning",
    "caution": "Caution",
    "attention": "Attention",
    "danger": "Danger",
    "error": "Error",
    "seealso": "See also",
}
# A role (``{name}`content```) or a code span, whichever starts first: roles in code spans stay.
INLINE = re.compile(
    r"(?P<role>\{(?P<name>[A-Za-z][\w:-]*)\}`(?P<body>[^`]*)`)|(?P<code>(?P<ticks>`+).+?(?<!`)(?P=ticks)(?!`))",
    flags=re.S,
)
LABEL = re.compile(r"^\((?P<label>[^()\s]+)\)=\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|:{3,})(?P<info>.*)$")
DIRECTIVE = re.compile(r"^\{(?P<name>[\w:-]+)\}\s*(?P<argument>.*)$")


class ReaderError(ValueError):
    """A page uses MyST this module cannot turn into a plain notebook; the message names it."""


class StaleReference(ReaderError):
    """The page's code no longer matches its committed reference (refresh it)."""


# --------------------------------------------------------------------------- where things live


def repository_settings(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The repositories the links and launch buttons name: ``url`` and ``branch`` (this
    repository: the repository button), and the student edition's public repository, which
    everything a reader opens names: ``student_url`` (``student_owner``, ``student_name``), its
    ``launch_branch`` (the ref that launches and downloads install from) and ``html``, its GitHub
    Pages address.

    In a GitHub Actions run (``GITHUB_ACTIONS=true``) the run decides: ``GITHUB_SERVER_URL`` /
    ``GITHUB_REPOSITORY`` and ``GITHUB_REF_NAME``, so a fork's book launches the fork. A pull
    request's run names its base branch (``GITHUB_BASE_REF``): ``GITHUB_REPOSITORY`` is the base
    repository, where the branch of a fork's pull request does not exist. In a session launched on
    Binder, BinderHub names the repository and the commit it built (``BINDER_REPO_URL``,
    ``BINDER_REF_URL``; ``binder/start`` writes the notebooks then), so a fork's launch links to the
    fork. Elsewhere ``_config.yml``'s ``repository`` (url, branch).

    The student repository is ``repository.student_repository`` (``NAME`` beside the repository,
    or ``OWNER/NAME``; unset: the repository's name with ``-student``) for the configured
    repository, and ``<run's repository>-student`` for any other (a fork's). In the student
    edition (tools/editions.py) the two are the same repository: it is its own student repository.
    """
    environ = dict(os.environ if environ is None else environ)
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    url = config["repository"]["url"].rstrip("/")
    branch = str(config["repository"].get("branch", "main"))
    # Launches and downloads open the student edition, which CI publishes to its own repository.
    launch = str(config["repository"].get("student_branch", "main"))
    configured = _owner_and_name(url)
    student = str(
        config["repository"].get("student_repository") or f"{configured[1]}-student"
    )
    student_configured = (
        tuple(student.split("/")) if "/" in student else (configured[0], student)
    )
    if environ.get("GITHUB_ACTIONS") == "true" and environ.get("GITHUB_REPOSITORY"):
        server = environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
        url = f"{server}/{environ['GITHUB_REPOSITORY']}"
        if environ.get("GITHUB_HEAD_REF"):  # a pull request
            branch = environ.get("GITHUB_BASE_REF") or branch
        else:
            branch = environ.get("GITHUB_REF_NAME") or branch
    elif environ.get("BINDER_REPO_URL"):
        url = environ["BINDER_REPO_URL"].rstrip("/").removesuffix(".git")
        built = re.fullmatch(
            re.escape(url) + r"/tree/(?P<ref>[^?#]+)", environ.get("BINDER_REF_URL", "")
        )
        if built:
            branch = launch = built["ref"]
    owner, name = _owner_and_name(url)
    if (
        student_configured == configured
    ):  # the student edition is its own student repository
        student_owner, student_name = owner, name
    elif (owner.lower(), name.lower()) == tuple(part.lower() for part in configured):
        student_owner, student_name = student_configured
    else:  # a fork's run: the fork's student repository
        student_owner, student_name = owner, f"{name}-student"
    return {
        "url": url,
        "branch": branch,
        "owner": owner,
        "name": name,
        "student_url": f"https://github.com/{student_owner}/{student_name}",
        "student_owner": student_owner,
        "student_name": student_name,
        "launch_branch": launch,
        "html": f"https://{student_owner.lower()}.github.io/{student_name}",
    }


def _owner_and_name(url: str) -> tuple[str, str]:
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(?:\.git)?", url)
    if not match:
        raise ReaderError(
            f"the repository URL {url!r} is not https://github.com/OWNER/NAME"
        )
    return match[1], match[2]


# PyTorch's index of CPU-only wheels. On Linux x86-64 PyPI's torch is the CUDA build (about 15
# nvidia-* packages); with this index as well, pip takes the CPU build, whose version (2.x+cpu)
# sorts above PyPI's and matches the lock's pin. macOS and Windows get a CPU build either way.
# The Makefile's TORCH_CPU_INDEX names the same index for `make setup`.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def install_command(
    settings: dict[str, str], lock: str | None = None, archive: str | None = None
) -> str:
    """The one command a notebook gives to install what it needs, on Linux, macOS and Windows.

    The package from the student repository's archive of ``settings["launch_branch"]``, with JupyterLab
    (its ``notebook`` extra), every version held to the lock of that branch (``-c``), and torch's
    CPU build (``TORCH_CPU_INDEX``). ``lock`` and ``archive`` replace the two addresses (the
    Binder rehearsal runs the command on local copies).
    """
    owner, name = settings["student_owner"], settings["student_name"]
    ref = settings["launch_branch"]
    lock = (
        lock or f"https://raw.githubusercontent.com/{owner}/{name}/{ref}/requirements.txt"
    )
    archive = archive or f"{settings['student_url']}/archive/{ref}.zip"
    return (
        f"python -m pip install --extra-index-url {TORCH_CPU_INDEX} -c {lock} "
        f'"transformer-lab[notebook] @ {archive}"'
    )


def page_id(page: Path) -> str:
    return page.resolve().relative_to(ROOT).as_posix()


def notebook_relpath(page: Path) -> str:
    """The reader notebook's path in the repository's Binder home (``notebooks/chapters/x.ipynb``)."""
    return (
        NOTEBOOKS.relative_to(ROOT) / page.resolve().relative_to(ROOT).with_suffix(".ipynb")
    ).as_posix()


def binder_urlpath(page: Path) -> str:
    """The ``urlpath`` a page's rocket button asks Binder for: its reader notebook in JupyterLab."""
    return f"lab/tree/{notebook_relpath(page)}"


# --------------------------------------------------------------------------- the book's targets


@dataclass
class Target:
    page: Path
    anchor: str  # "" for the page itself
    title: str


@dataclass
class Book:
    """Every cross-reference target of the book, each page's figures' numbers, the pages with code."""

    targets: dict[str, Target] = field(default_factory=dict)
    figure_numbers: dict[tuple[str, int], int] = field(default_factory=dict)  # (page, cell)
    with_code: set[str] = field(default_factory=set)
    titles: dict[str, str] = field(default_factory=dict)


def plain_title(markdown: str) -> str:
    """A heading or caption as the text Sphinx shows in a link to it (markup stripped)."""
    text = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", markdown)
    text = re.sub(r"[*_]{1,2}([^*_]+)[*_]{1,2}", r"\1", text)
    return text.replace("`", "").strip()


def figure_caption(cell: nbformat.NotebookNode) -> tuple[str, str] | None:
    figure = cell.metadata.get("mystnb", {}).get("figure")
    if not figure or not figure.get("caption"):
        return None
    return figure["caption"], figure.get("name", "")


def read_book() -> Book:
    """Labels (before headings), figure names and captions, page titles, of every page of _toc.yml."""
    book = Book()
    figure = 0
    for page in toc_pages():
        notebook = read_page(page)
        if any(cell.cell_type == "code" for cell in notebook.cells):
            book.with_code.add(page_id(page))
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type == "markdown":
                lines = cell.source.splitlines()
                for number, line in enumerate(lines):
                    heading = HEADING.match(line)
                    if heading and page_id(page) not in book.titles:
                        book.titles[page_id(page)] = plain_title(heading.group(2))
                    label = LABEL.match(line)
                    if not label:
                        continue
                    title = ""
                    for following in lines[number + 1 :]:
                        if following.strip() and not LABEL.match(following):
                            found = HEADING.match(following)
                            title = plain_title(found.group(2)) if found else ""
                            break
                    book.targets[label.group("label")] = Target(
                        page, label.group("label"), title
                    )
            elif cell.cell_type == "code" and figure_caption(cell):
                figure += 1
                caption, name = figure_caption(cell)
                book.figure_numbers[(page_id(page), index)] = figure
                if name:
                    book.targets[name] = Target(page, name, plain_title(caption))
    return book


# --------------------------------------------------------------------------- glue


def glue_values(reference: nbformat.NotebookNode) -> dict[str, dict]:
    """``{key: mime bundle}`` of every value the executed reference glued (MyST-NB's outputs)."""
    values: dict[str, dict] = {}
    for cell in reference.cells:
        for output in cell.get("outputs", []):
            meta = output.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            prefix = len(meta.get("mime_prefix", ""))
            values[meta["name"]] = {
                mime[prefix:]: value for mime, value in output.get("data", {}).items()
            }
    return values


def format_plain_text(text: str, spec: str) -> str:
    """MyST-NB's ``{glue:text}`` formatting of a glued ``text/plain`` value (quotes removed)."""
    try:
        value = literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if not spec:
        return str(value)
    kind = spec[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, spec)


# --------------------------------------------------------------------------- markdown


@dataclass
class Context:
    page: Path
    book: Book
    glue: dict[str, dict]
    links: str  # "notebook" or "html"
    settings: dict[str, str]
    used_glue: set[str] = field(default_factory=set)

    def where(self, what: str) -> str:
        return f"{page_id(self.page)}: {what}"


def anchor_markup(label: str, context: Context) -> str:
    """Where a link may land: a MyST target for jupyterlab-myst (Binder), which resolves
    ``#label`` links to it across the notebook's cells, or an HTML anchor (downloads)."""
    return f"({label})=" if context.links == "notebook" else f'<a id="{label}"></a>'


def link_to(target: Target, context: Context) -> str:
    """A link to ``target`` from ``context.page`` that resolves for this kind of notebook:
    Binder's go to the same notebook or a sibling, a download's to the published HTML page.

    A Binder link names the notebook file, even on the same page, and the target's cell
    (``#cell-id=label``; the cell's id is its label): JupyterLab opens or shows the notebook and
    scrolls to that cell. A bare ``#label`` is left to the browser, which finds nothing while
    JupyterLab has not drawn the cell yet, nor when jupyterlab-myst gives the label no id.
    """
    anchor = f"#{target.anchor}" if target.anchor else ""
    if context.links == "notebook" and page_id(target.page) in context.book.with_code:
        here = (NOTEBOOKS / context.page.resolve().relative_to(ROOT)).parent
        there = NOTEBOOKS / target.page.resolve().relative_to(ROOT).with_suffix(".ipynb")
        cell = f"#cell-id={target.anchor}" if target.anchor else ""
        return os.path.relpath(there, here).replace(os.sep, "/") + cell
    html = target.page.resolve().relative_to(ROOT).with_suffix(".html").as_posix()
    return f"{context.settings['html']}/{html}{anchor}"


def role(name: str, body: str, context: Context) -> str:
    """A MyST role as plain Markdown."""
    if name in {"glue", "glue:text", "glue:md", "glue:any"}:
        key, _, spec = body.partition(":") if name == "glue:text" else (body, "", "")
        key = key.strip()
        if key not in context.glue:
            raise ReaderError(context.where(f"{{{name}}}`{body}`: no glued value {key!r}"))
        context.used_glue.add(key)
        data = context.glue[key]
        if name == "glue:md" or (name != "glue:text" and "text/markdown" in data):
            return "".join(data["text/markdown"])
        if "text/plain" not in data:
            raise ReaderError(context.where(f"{key!r} was glued without text/plain"))
        return format_plain_text("".join(data["text/plain"]), spec)
    if name in {"ref", "doc"}:
        explicit = re.fullmatch(r"(?s)(?P<text>.*?)\s*<(?P<target>[^<>]+)>", body)
        text, name_ = (explicit["text"], explicit["target"]) if explicit else ("", body)
        if name == "ref":
            target = context.book.targets.get(name_.strip())
            if target is None:
                raise ReaderError(context.where(f"{{ref}}`{body}`: no such label"))
        else:
            path = (context.page.parent / name_.strip()).resolve()
            found = [p for p in toc_pages() if p.resolve().with_suffix("") == path]
            if not found:
                raise ReaderError(context.where(f"{{doc}}`{body}`: no such page"))
            target = Target(found[0], "", context.book.titles.get(page_id(found[0]), ""))
        text = text or target.title
        if not text:
            raise ReaderError(context.where(f"{{{name}}}`{body}`: the target has no title"))
        return f"[{convert_inline(text, context)}]({link_to(target, context)})"
    if name == "math":
        return f"${body}$"
    if name in {"kbd", "code"}:
        return f"`{body}`"
    raise ReaderError(context.where(f"the role {{{name}}} has no plain-notebook form"))


def convert_inline(text: str, context: Context) -> str:
    """Roles replaced; code spans (and the roles quoted in them) kept as they are."""

    def replace(match: re.Match) -> str:
        if match.group("code"):
            return match.group("code")
        return role(match.group("name"), match.group("body"), context)

    return INLINE.sub(replace, text)


def closing_fence(lines: list[str], start: int, fence: str) -> int:
    """Index of the line that closes the fence opened at ``lines[start]``."""
    char, length = fence[0], len(fence)
    index = start + 1
    while index < len(lines):
        stripped = lines[index].strip()
        if re.fullmatch(re.escape(char) + f"{{{length},}}", stripped):
            return index
        inner = FENCE.match(lines[index])
        if char == ":" and inner and inner.group("fence")[0] == "`" and inner.group("info"):
            index = closing_fence(lines, index, inner.group("fence"))
        index += 1
    raise ReaderError(f"a {fence} fence opened on line {start + 1} is never closed")


def split_options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    """A directive's ``:option: value`` lines (or a ``---`` YAML block) and its content."""
    options: dict[str, str] = {}
    if body and body[0].strip() == "---":
        end = body.index("---", 1) if "---" in body[1:] else 0
        options = {
            key: str(value) for key, value in yaml.safe_load("\n".join(body[1:end])).items()
        }
        return options, body[end + 1 :]
    index = 0
    while index < len(body) and re.match(r"^\s*:[\w-]+:", body[index]):
        key, _, value = body[index].strip()[1:].partition(":")
        options[key] = value.strip()
        index += 1
    return options, body[index:]


def python_object(source: str, dotted: str) -> tuple[int, int]:
    """1-based first and last line of ``dotted`` (a function or class, ``Class.method``), with
    its decorators, as Sphinx's ``:pyobject:`` includes it."""
    nodes = ast.parse(source).body
    found = None
    for part in dotted.split("."):
        found = next(
            (
                node
                for node in nodes
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and node.name == part
            ),
            None,
        )
        if found is None:
            raise KeyError(dotted)
        nodes = found.body
    first = min([found.lineno, *(d.lineno for d in found.decorator_list)])
    return first, found.end_lineno


# Sphinx's text bounds of a literalinclude: where the listing starts and where it ends.
TEXT_BOUNDS = ("start-at", "start-after", "end-before", "end-at")


def text_bounds(lines: list[str], options: dict[str, str], context: Context) -> list[str]:
    """``lines`` cut as Sphinx cuts them: from the first line holding ``start-at`` (or after the
    one holding ``start-after``) up to the first later line holding ``end-at`` (kept) or
    ``end-before`` (not kept)."""
    for option, keep in (("start-at", True), ("start-after", False)):
        if option in options:
            found = [i for i, line in enumerate(lines) if options[option] in line]
            if not found:
                raise ReaderError(context.where(f"literalinclude {option}: text not found"))
            lines = lines[found[0] + (0 if keep else 1) :]
    for option, keep in (("end-at", True), ("end-before", False)):
        if option in options:
            found = [i for i, line in enumerate(lines) if options[option] in line]
            if not found:
                raise ReaderError(context.where(f"literalinclude {option}: text not found"))
            lines = lines[: found[0] + (1 if keep else 0)]
    return lines


def literalinclude(argument: str, options: dict[str, str], context: Context) -> str:
    path = (context.page.parent / argument.strip()).resolve()
    if not path.is_file():
        raise ReaderError(context.where(f"literalinclude {argument}: no such file"))
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    known = {"language", "pyobject", "lines", "dedent", *TEXT_BOUNDS}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ReaderError(context.where(f"literalinclude options {unknown} not supported"))
    if "pyobject" in options:
        try:
            first, last = python_object(source, options["pyobject"])
        except KeyError:
            raise ReaderError(
                context.where(f"literalinclude: no {options['pyobject']} in {argument}")
            ) from None
        lines = lines[first - 1 : last]
    if "lines" in options:
        chosen: list[str] = []
        for part in options["lines"].split(","):
            low, _, high = part.strip().partition("-")
            chosen += lines[int(low) - 1 : int(high or low)]
        lines = chosen
    lines = text_bounds(lines, options, context)
    text = "\n".join(lines)
    if "dedent" in options:
        text = textwrap.dedent(text)
    language = options.get("language", "python" if path.suffix == ".py" else "")
    return f"```{language}\n{text}\n```"


def indent_quote(markdown: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in markdown.splitlines())


def directive(name: str, argument: str, body: list[str], context: Context) -> str:
    """A MyST directive as plain Markdown (HTML only for ``<details>`` and anchors)."""
    options, content = split_options(body)
    inner = convert_markdown("\n".join(content), context) if content else ""
    anchor = anchor_markup(options["name"], context) + "\n\n" if options.get("name") else ""
    if name in ADMONITIONS:
        title = argument.strip() if name == "admonition" else ADMONITIONS[name]
        if name != "admonition" and argument.strip():
            inner = convert_markdown(argument.strip(), context) + "\n\n" + inner
        title_md = convert_inline(title, context)
        if "dropdown" in options.get("class", "").split():
            return anchor + details(title_md, inner, context)
        return anchor + indent_quote(f"**{title_md}**\n\n{inner}".rstrip())
    if name == "dropdown":
        if "open" in options:
            raise ReaderError(context.where("an open dropdown: hints start closed"))
        return anchor + details(convert_inline(argument.strip(), context), inner, context)
    if name == "literalinclude":
        return anchor + literalinclude(argument, options, context)
    if name in {"glue", "glue:md", "glue:any", "glue:text"}:
        key = argument.strip()
        text = role("glue:md" if name == "glue:md" else "glue", key, context)
        return anchor + (
            convert_markdown(text, context) if options.get("format") == "myst" else text
        )
    if name in {"math", "equation"}:
        return anchor + "$$\n" + "\n".join(content).strip() + "\n$$"
    if name in {"code-block", "code", "sourcecode"}:
        return anchor + f"```{argument.strip()}\n" + "\n".join(content) + "\n```"
    raise ReaderError(context.where(f"the directive {{{name}}} has no plain-notebook form"))


def details(summary: str, inner: str, context: Context) -> str:
    """A closed dropdown: jupyterlab-myst's own (Binder: it typesets the maths inside, which it
    does not inside raw HTML), else ``<details>`` with blank lines so that Markdown inside renders."""
    if context.links == "notebook":
        colons = max([len(m) for m in re.findall(r"^\s*(:{3,})", inner, flags=re.M)] + [2])
        fence = ":" * (colons + 1)
        return f"{fence}{{dropdown}} {summary}\n{inner.strip()}\n{fence}"
    return f"<details>\n<summary>{summary}</summary>\n\n{inner.strip()}\n\n</details>"


def definition_lists(text: str) -> str:
    """MyST's ``Term`` / ``: definition`` pairs as bullets ``- **Term**: definition``."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if (
            line.strip()
            and index + 1 < len(lines)
            and lines[index + 1].startswith(": ")
            and not line.startswith((" ", "-", "*", "#", ">", "|"))
        ):
            definition = [lines[index + 1][2:]]
            index += 2
            while (
                index < len(lines)
                and lines[index].startswith("  ")
                and lines[index].strip()
            ):
                definition.append(lines[index].strip())
                index += 1
            out.append(f"- **{line.strip()}**: " + " ".join(definition))
            continue
        out.append(line)
        index += 1
    return "\n".join(out)


def convert_markdown(source: str, context: Context) -> str:
    """A MyST markdown cell's source as plain Markdown (see the module docstring)."""
    return "\n\n".join(text for _, text in markdown_parts(source, context) if text)


def markdown_parts(source: str, context: Context) -> list[tuple[str, str]]:
    """``convert_markdown``'s text cut before each label of the top level: (label or "", text).

    The reader notebook gives each labelled part a cell of its own whose id is the label, so a
    link can name the cell (``#cell-id=label``), which JupyterLab scrolls to whether or not the
    cell has been drawn yet.
    """
    lines = source.splitlines()
    parts: list[tuple[str, list[str]]] = [("", [])]
    prose: list[str] = []

    def flush() -> None:
        if prose:
            parts[-1][1].append(convert_inline(definition_lists("\n".join(prose)), context))
            prose.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        label = LABEL.match(line)
        fence = FENCE.match(line)
        out = parts[-1][1]
        if label:
            flush()
            parts.append((label.group("label"), []))
            prose.append(anchor_markup(label.group("label"), context) + "\n")
        elif line.lstrip().startswith("%"):
            pass  # a MyST comment
        elif fence:
            end = closing_fence(lines, index, fence.group("fence"))
            indent = fence.group("indent")
            info = fence.group("info").strip()
            named = DIRECTIVE.match(info)
            if named:
                flush()
                body = [part[len(indent) :] for part in lines[index + 1 : end]]
                converted = directive(named["name"], named["argument"], body, context)
                out.append(textwrap.indent(converted, indent))
            else:
                flush()
                out.append("\n".join(lines[index : end + 1]))
            index = end
        else:
            prose.append(line)
        index += 1
    flush()
    converted = []
    for label, out in parts:
        text = "\n\n".join(part.strip("\n") for part in out if part.strip())
        converted.append((label, re.sub(r"\n{3,}", "\n\n", text).strip("\n")))
    return converted


# --------------------------------------------------------------------------- code


def is_glue(node: ast.stmt) -> bool:
    """``glue(...)`` calls and ``from myst_nb import glue`` (MyST-NB's, absent for a reader)."""
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("myst_nb"):
        return True
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "glue"
    )


def contains_glue(node: ast.stmt) -> bool:
    return any(
        isinstance(sub, ast.Call)
        and isinstance(sub.func, ast.Name)
        and sub.func.id == "glue"
        for sub in ast.walk(node)
    )


def bound_names(node: ast.stmt) -> set[str]:
    """Names a statement binds (assignments, imports, defs, loop targets, with ... as)."""
    names: set[str] = set()
    if isinstance(node, ast.Import | ast.ImportFrom):
        for alias in node.names:
            names.add((alias.asname or alias.name).split(".")[0])
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        names.add(node.name)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store | ast.Del):
            names.add(sub.id)
    return names


def loaded_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(re.findall(r"[A-Za-z_]\w*", source))
    return {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    } | {
        node.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    }


def free_and_bound(source: str) -> tuple[set[str], set[str]]:
    """Names a cell reads before binding them itself, and every name it binds."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return loaded_names(source), set()
    free: set[str] = set()
    bound: set[str] = set()
    for node in tree.body:
        free |= loaded_names(ast.unparse(node)) - bound
        bound |= bound_names(node)
    return free, bound


def statement_text(lines: list[str], node: ast.stmt, previous_end: int) -> str:
    """The statement's lines, with the comment lines right above it."""
    start = node.lineno - 1
    if hasattr(node, "decorator_list") and node.decorator_list:
        start = min(d.lineno for d in node.decorator_list) - 1
    while start - 1 >= previous_end and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return "\n".join(lines[start : node.end_lineno])


def strip_glue(source: str) -> str:
    """``source`` without its glue statements (unchanged when there are none or it won't parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    if not any(is_glue(node) or contains_glue(node) for node in tree.body):
        return source
    lines = source.splitlines()
    kept, end = [], 0
    for node in tree.body:
        if not is_glue(node) and not contains_glue(node):
            kept.append(statement_text(lines, node, end))
        end = node.end_lineno
    return "\n".join(kept)


def only_asserts(node: ast.stmt) -> bool:
    """True for an assert or a ``raise``, or a loop, ``if`` or ``with`` whose every statement is
    one (a check of the prose run over several results, or a guard such as ``if not found:
    raise ...`` that protects only the book-keeping)."""
    if isinstance(node, ast.Assert | ast.Raise):
        return True
    if isinstance(node, ast.For | ast.While | ast.If | ast.With):
        return all(
            only_asserts(child) for child in [*node.body, *getattr(node, "orelse", [])]
        )
    return False


def needed_part(source: str, needed: set[str]) -> str:
    """What a hidden book-keeping cell must still run for the visible cells after it.

    Glue and asserts go; then, backwards, a statement stays only if it binds a name that a later
    cell (or a statement kept after it) reads. Statements that bind nothing and are not glue or
    asserts (a seed, a call for its effect) stay too, so that later outputs do not change.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.splitlines()
    chosen: list[ast.stmt] = []
    wanted = set(needed)
    for node in reversed(tree.body):
        if is_glue(node) or contains_glue(node) or only_asserts(node):
            continue
        binds = bound_names(node)
        if (binds & wanted) or not binds:
            if (
                not binds
                and isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
            ):
                continue  # a bare string
            chosen.append(node)
            wanted |= loaded_names(ast.unparse(node))
    chosen.reverse()
    kept, end = [], 0
    for node in tree.body:
        if node in chosen:
            kept.append(statement_text(lines, node, end))
        end = node.end_lineno
    return "\n".join(kept)


# --------------------------------------------------------------------------- the notebook


def preamble(page: Path, context: Context, page_source: str, has_code: bool = True) -> str:
    """The first cell: what this notebook is, where it comes from, how to run it."""
    settings = context.settings
    html = f"{settings['html']}/{page.resolve().relative_to(ROOT).with_suffix('.html').as_posix()}"
    title = context.book.titles.get(page_id(page), page_id(page))
    if not has_code:
        return (
            f"*This notebook is the page [{title}]({html}) of the book. It has no code to run: "
            "its numbers were computed when the book was built.*"
        )
    lines = [
        f"*This notebook is the page [{title}]({html}) of the book, made to be run: Run All "
        "reproduces the page's outputs and starts its explorers. It needs only the book's "
        "package `transformer_lab` and its dependencies: on Binder they are installed. "
        "Elsewhere, with Python 3.11, this one command installs them and JupyterLab (Linux, "
        "macOS or Windows; on Linux it takes PyTorch's CPU build), then `jupyter lab` opens this "
        f"notebook (or clone [the repository]({settings['student_url']}) and run `make book`):*",
        f"```\n{install_command(settings)}\n```",
        "*The first code cell does the rest: it runs that command if this Python lacks the "
        "package, and makes the book's synthetic CloudWave data in a `data/` folder next to this "
        "notebook if the package finds none (a few seconds, once).*",
    ]
    starters = starter_files(page_source)
    if starters:
        files = ", ".join(f"`{name}`" for name in starters)
        lines.append(
            f"*Your own code goes in {files} of the repository. The package finds it from this "
            "notebook's folder upwards, or next to the package when it is installed with "
            "`pip install -e .` from the clone. Where it finds none (a downloaded notebook), the "
            "set-up cell downloads the repository's copy to that path next to this notebook: "
            "write your code there.*"
        )
    return "\n\n".join(lines)


def starter_files(page_source: str) -> list[str]:
    """The exercise files a page's code reads (``exercises/.../starter.py``), as named there."""
    return sorted(set(re.findall(r"exercises/[\w./-]+?\.py", page_source)))


def raw_files_url(settings: dict[str, str]) -> str:
    """Where the launch branch's files are served one by one (a starter the set-up downloads)."""
    return (
        f"https://raw.githubusercontent.com/{settings['owner']}/{settings['name']}/"
        f"{settings['launch_branch']}"
    )


def setup_source(settings: dict[str, str], starters: list[str] | None = None) -> str:
    """The set-up cell's code (the notebook's first code cell): install the package with
    ``install_command`` if this kernel's
    Python lacks it, then make the CloudWave data in ``./data`` (the notebook's folder, where
    ``transformer_lab.datasets.find_data_dir`` looks first) if the package finds no data, and
    download each of ``starters`` (the exercise files the page reads) from the repository to the
    same path under the notebook's folder if no folder above holds it. It runs as a function, so
    the page's namespace is left as the page expects."""
    words = shlex.split(install_command(settings))[4:]  # after "python -m pip install"
    fetch = ""
    if starters:
        base = raw_files_url(settings)
        fetch = textwrap.indent(
            textwrap.dedent(
                f"""\
                for name in {starters!r}:
                    here = Path.cwd()
                    if not any((folder / name).is_file() for folder in (here, *here.parents)):
                        (here / name).parent.mkdir(parents=True, exist_ok=True)
                        urllib.request.urlretrieve({base!r} + "/" + name, name)
                        print(f"downloaded {{name}} from the repository: write your code there")
                """
            ),
            "    ",
        )
    return textwrap.dedent(
        f"""\
        # Set-up, run first: installs the book's package `transformer_lab` if this Python lacks
        # it, and makes the book's synthetic CloudWave data in ./data if the package finds none.
        def _set_up():
            import importlib
            import importlib.util
            import subprocess
            import sys
            import urllib.request
            import warnings
            from pathlib import Path

            if importlib.util.find_spec("transformer_lab") is None:
                print("installing the book's package and its dependencies (minutes: PyTorch is large)")
                subprocess.run([sys.executable, "-m", "pip", "install", *{words!r}], check=True)
                importlib.invalidate_caches()
            from transformer_lab.datasets import find_data_dir

            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    find_data_dir()
            except FileNotFoundError:
                command = [sys.executable, "-m", "transformer_lab.cloudwave", "--out", "data"]
                subprocess.run(command, check=True, capture_output=True, text=True)
                print(f"made the book's CloudWave data in {{Path('data').resolve()}}")
        FETCH

        _set_up()
        del _set_up
        """
    ).replace("FETCH\n", fetch + "\n")


def make_reader_notebook(
    page: Path,
    links: str = "notebook",
    book: Book | None = None,
    settings: dict[str, str] | None = None,
    reference: nbformat.NotebookNode | None = None,
) -> nbformat.NotebookNode:
    """The reader notebook of ``page`` (a page of _toc.yml with code)."""
    if links not in {"notebook", "html"}:
        raise ValueError(f"links must be 'notebook' or 'html', not {links!r}")
    book = book or read_book()
    settings = settings or repository_settings()
    source = read_page(page)
    if reference is None:
        path = reference_path(page)
        if not path.exists():
            raise StaleReference(
                f"{page_id(page)}: no reference {path.relative_to(ROOT)} (make refresh)"
            )
        reference = nbformat.read(path, as_version=4)
    context = Context(page, book, glue_values(reference), links, settings)
    page_code = [cell for cell in source.cells if cell.cell_type == "code"]
    ref_code = [cell for cell in reference.cells if cell.cell_type == "code"]
    if [c.source for c in page_code] != [c.source for c in ref_code]:
        raise StaleReference(
            f"{page_id(page)}: its code no longer matches {reference_path(page).relative_to(ROOT)} "
            "(refresh it: python tools/book_pages.py refresh PAGE)"
        )
    outputs = {
        id(page_cell): ref.get("outputs", []) for page_cell, ref in zip(page_code, ref_code)
    }

    # What each hidden cell must leave defined: the names a later visible cell reads before it
    # binds them, unless a visible cell in between binds them first.
    # A kept part of a hidden cell counts as a reader of the cells before it, too.
    kept_code: dict[int, str] = {}
    reads: set[str] = set()
    for index in reversed(range(len(source.cells))):
        cell = source.cells[index]
        if cell.cell_type != "code":
            continue
        if "remove-cell" in cell.metadata.get("tags", []):
            kept_code[index] = needed_part(cell.source, reads)
            code = kept_code[index]
        else:
            code = strip_glue(cell.source)
        free, binds = free_and_bound(code)
        reads = (reads - binds) | free

    runs_code = any(
        "remove-cell" not in cell.metadata.get("tags", []) or kept_code[index].strip()
        for index, cell in enumerate(source.cells)
        if cell.cell_type == "code"
    )
    cells = [
        nbformat.v4.new_markdown_cell(preamble(page, context, page_text(page), runs_code))
    ]
    cell_ids: dict[int, str] = {}  # a labelled cell's id is its label (link_to)
    cells[0].metadata["reader"] = PREAMBLE
    for index, cell in enumerate(source.cells):
        if cell.cell_type == "markdown":
            for label, text in markdown_parts(cell.source, context):
                if text:
                    cells.append(nbformat.v4.new_markdown_cell(text))
                    if label:
                        cell_ids[id(cells[-1])] = label
            continue
        if cell.cell_type != "code":
            continue
        tags = set(cell.metadata.get("tags", []))
        if "remove-cell" in tags:
            code = kept_code[index]
            if code.strip():
                kept = nbformat.v4.new_code_cell(code)
                kept.metadata.update(
                    reader=BOOKKEEPING,
                    jupyter={"source_hidden": True, "outputs_hidden": True},
                    tags=sorted(tags),
                )
                cells.append(kept)
            continue
        code = strip_glue(cell.source)
        new = nbformat.v4.new_code_cell(code)
        if tags:
            new.metadata["tags"] = sorted(tags)
        hidden = {}
        if tags & HIDE_INPUT_TAGS:
            hidden["source_hidden"] = True
        if tags & HIDE_OUTPUT_TAGS:
            hidden["outputs_hidden"] = True
        if hidden:
            new.metadata["jupyter"] = hidden
        if not tags & {"remove-output"}:
            new.outputs = [
                stored_output(output)
                for output in outputs[id(cell)]
                if "scrapbook" not in output.get("metadata", {})
            ]
        cells.append(new)
        caption = figure_caption(cell)
        if caption:
            number = book.figure_numbers[(page_id(page), index)]
            anchor = anchor_markup(caption[1], context) + "\n" if caption[1] else ""
            text = f"{anchor}**Fig. {number}** {convert_inline(caption[0], context)}"
            cells.append(nbformat.v4.new_markdown_cell(text))
            cells[-1].metadata["reader"] = CAPTION
            if caption[1]:
                cell_ids[id(cells[-1])] = caption[1]
    if runs_code:
        # The set-up cell goes just before the first code cell: the first one Run All runs.
        first = next(index for index, cell in enumerate(cells) if cell.cell_type == "code")
        setup = setup_source(settings, starter_files(page_text(page)))
        cells.insert(first, nbformat.v4.new_code_cell(setup))
        cells[first].metadata["reader"] = SETUP
    unused = sorted(set(context.glue) - context.used_glue)
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "reader": {"page": page_id(page), "links": links, "glue_not_in_prose": unused},
    }
    for number, cell in enumerate(notebook.cells):
        cell.id = cell_ids.get(id(cell), f"cell-{number}")
    return notebook


def stored_output(output: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A reference output as the reader notebook keeps it: an explorer's as its text line only.

    An explorer's output is a widget (``transformer_lab.explorers``) whose model lived in the
    kernel that wrote the reference, so JupyterLab could not draw it ("model not found"), and its
    HTML needs the book's script, so on its own it would be a panel of dead controls. Its text
    line says the explorer moves once the cell has run; Run All brings the live widget.
    """
    data = output.get("data", {})
    if WIDGET_VIEW not in data:
        return output
    kept = nbformat.from_dict(dict(output))
    kept.data = {"text/plain": data["text/plain"]}
    return kept


def page_text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def reader_pages() -> list[Path]:
    """The pages of _toc.yml that get a reader notebook: those with code."""
    return [page for page in toc_pages() if has_code(page)]


def write(pages: list[Path], out: Path, links: str) -> list[Path]:
    """Write the reader notebooks of ``pages`` under ``out`` (mirroring the pages' paths)."""
    book, settings = read_book(), repository_settings()
    written = []
    for page in pages:
        target = out / page.resolve().relative_to(ROOT).with_suffix(".ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(make_reader_notebook(page, links, book, settings), target)
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["write", "check"])
    parser.add_argument("pages", nargs="*")
    parser.add_argument("--links", choices=["notebook", "html"], default="notebook")
    parser.add_argument("--out", type=Path, default=NOTEBOOKS)
    args = parser.parse_intermixed_args(argv)
    pages = [Path(p).resolve() for p in args.pages] or reader_pages()
    try:
        if args.command == "write":
            for path in write(pages, args.out.resolve(), args.links):
                print(f"wrote {path}")
        else:
            book = read_book()
            for page in pages:
                notebook = make_reader_notebook(page, args.links, book)
                shown = sum(
                    c.metadata.get("reader") not in NOT_THE_PAGES for c in notebook.cells
                )
                print(
                    f"{page_id(page)}: {len(notebook.cells)} cells ({shown} in view), "
                    f"{json.dumps(notebook.metadata['reader']['glue_not_in_prose'])} glued "
                    "but not in the prose"
                )
    except ReaderError as error:
        print(f"reader_notebooks: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
