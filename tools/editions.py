"""The two editions of one source: the students' book, and the instructor's Gradescope autograder.

    python tools/editions.py student [--dest _build/student] [--no-html]   # make student
    python tools/editions.py autograder [--dest _build/autograder.zip]     # make autograder

    python tools/editions.py publish SOURCES HTML REMOTE [--message M]  # CI: push the edition
    python tools/editions.py student-repository                          # OWNER/NAME it goes to

**Student edition**: the repository's files minus everything that holds an answer: ``instructor/``
(references, known mistakes, solutions, hidden checks, the autograder), ``tests/`` except the
pages' executed references (Binder's reader notebooks and the downloads are made from those),
the tools that build classes of solved submissions (``classroom``, ``bench``), this tool and its
templates, the CI workflow (the student repository is published by the instructor's CI, it does
not run its own) and the instructor's documents (``MAINTAINING.md``). It has its own front door, written from
``tools/student_edition/``: a README for students, a CONTRIBUTING for reporting mistakes, a
``.ci/run`` that runs the README's build, and a Makefile without the instructor's targets and
with ``make check``. Its ``_config.yml`` and ``CITATION.cff`` name the student repository (its
own public repository, ``reader_notebooks.repository_settings``) and its ``_toc.yml`` is its own;
then its HTML is built from that tree alone (the kernels import the edition's own package).
``tests/test_editions.py`` fingerprints every answer against every ``.py`` file and code cell of
the edition; ``tests/test_student_edition.py`` runs its README's commands in a clone of it and
checks that nothing in its HTML or notebooks names the instructor's repository.

**Publishing** (``publish``, run by CI): the edition's sources become one new commit on top of the
student repository's own branch (made from the edition's tree alone, so the student repository's
history never holds an instructor's commit), and its HTML the single commit of its ``gh-pages``
branch, which GitHub Pages serves.

**Autograder**: a zip with ``setup.sh`` and ``run_autograder`` at its root (Gradescope's layout) and,
next to them, the package, the instructor's package and the pins: what Gradescope unpacks into
``/autograder/source``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import string
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What the student edition leaves out: folders (a trailing /) and files, relative to the root.
EXCLUDED = (
    "instructor/",
    "tests/",
    ".github/",
    "tools/classroom.py",
    "tools/bench.py",
    "tools/student_edition/",
    "tools/editions.py",
    "MAINTAINING.md",
)
# The pages' executed outputs (reader notebooks), and the output sanitizer the Binder rehearsal
# (make binder-check) reads.
KEPT_UNDER_EXCLUDED = ("tests/references/", "tests/nbval_sanitize.cfg")
# Makefile targets that need what the edition leaves out (the tests, the bench's tool, the
# instructor's package): the edition's Makefile has the others (student_makefile).
MAIN_ONLY_TARGETS = ("test", "test-portability", "bench", "student", "autograder")
STUDENT_MAKEFILE_HEADER = (
    "# The student edition's Makefile (written by tools/editions.py from the main Makefile):\n"
    f"# the same targets but {', '.join(MAIN_ONLY_TARGETS)}, and `make check` (the README's).\n"
)
# The student edition's own targets (the README's "check my work"), added to its Makefile.
STUDENT_ONLY_TARGETS = ("check",)
STUDENT_HELP = (
    '\t@echo "make check    check my work: the self-check on exercises/homework/starter.py'
    ' (PAGE=week-20: exercises/week-20/starter.py)"\n'
)
STUDENT_RULES = (
    "\n# Check my work (the README's second command): exit status 0 only when every check passed.\n"
    "check: setup\n"
    "\t$(PY) -m transformer_lab.selfcheck $(if $(PAGE),--page $(PAGE))\n"
)
# The student edition's front door (tools/student_edition/): file there -> path in the edition.
FRONT_DOOR = {
    "README.md": "README.md",
    "CONTRIBUTING.md": "CONTRIBUTING.md",
    "ci_run": ".ci/run",
}
TEMPLATES = ROOT / "tools" / "student_edition"
# The branch of the student repository that GitHub Pages serves (Settings -> Pages -> branch).
PAGES_BRANCH = "gh-pages"
AUTOGRADER_FILES = ROOT / "instructor" / "transformer_lab_instructor" / "autograder_files"
AUTOGRADER_TREES = ("code/", "instructor/")
AUTOGRADER_TOP = ("pyproject.toml", "requirements.txt")
STUDENT_TOC_HEADER = (
    "# The student edition's table of contents (written by tools/editions.py from the main\n"
    "# _toc.yml): the same pages; the instructor's files are not part of this edition.\n"
)


def source_files(root: Path = ROOT) -> list[str]:
    """The repository's files (tracked or new, not ignored), as paths relative to ``root``."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=root,
            check=True,
            capture_output=True,
        ).stdout.decode()
        names = [name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "node_modules", "_build", "__pycache__"}
        names = [
            path.relative_to(root).as_posix()
            for path in root.rglob("*")
            if path.is_file() and not skip & set(path.relative_to(root).parts)
        ]
    return sorted(name for name in names if (root / name).is_file())


def in_student_edition(name: str) -> bool:
    """Whether the file ``name`` (relative to the root) belongs to the student edition."""
    if name.startswith(KEPT_UNDER_EXCLUDED):
        return True
    return not any(
        name.startswith(rule) if rule.endswith("/") else name == rule for rule in EXCLUDED
    )


def _copy(names: Iterable[str], source: Path, dest: Path) -> None:
    for name in names:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, target)


def student_makefile(text: str) -> str:
    """The main Makefile without :data:`MAIN_ONLY_TARGETS`: their rules (with the comment
    right above each), their lines in ``make help`` and their ``.PHONY`` names; with
    :data:`STUDENT_ONLY_TARGETS` (``make check``) instead."""
    lines, kept = text.splitlines(keepends=True), []
    in_dropped_help = False
    index = 0
    while index < len(lines):
        line = lines[index]
        help_line = re.match(r'\t@echo "make (\S+)', line)
        if help_line:
            in_dropped_help = help_line.group(1) in MAIN_ONLY_TARGETS
        elif not line.startswith('\t@echo "   '):
            in_dropped_help = False
        rule = re.match(r"^([\w-]+):", line)
        if in_dropped_help:
            index += 1
            continue
        if rule and rule.group(1) in MAIN_ONLY_TARGETS:
            while kept and kept[-1].startswith("#"):
                kept.pop()
            index += 1
            while index < len(lines) and lines[index].startswith("\t"):
                index += 1
            continue
        if line.startswith(".PHONY:"):
            names = [n for n in line.split()[1:] if n not in MAIN_ONLY_TARGETS]
            line = ".PHONY: " + " ".join([*names, *STUDENT_ONLY_TARGETS]) + "\n"
        kept.append(line)
        if line.startswith('\t@echo "make book'):
            kept.append(STUDENT_HELP)
        index += 1
    text = re.sub(r"\n{3,}", "\n\n", "".join(kept))
    return STUDENT_MAKEFILE_HEADER + text.rstrip("\n") + "\n" + STUDENT_RULES


def student_repository(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Where this run's student edition goes: ``repository_settings`` of this tree (the
    configured student repository; a fork's run: the fork's ``<name>-student``)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import reader_notebooks

    return reader_notebooks.repository_settings(environ)


def student_config(text: str, settings: dict[str, str]) -> str:
    """``_config.yml`` of the edition: its repository is the student repository, and it is its
    own student repository (so every link of its build names it). Refuses a layout it does not
    know rather than leave the instructor's repository in the edition."""
    student = f"{settings['student_owner']}/{settings['student_name']}"
    block = re.search(r"^repository:\n((?:[ #].*\n|\n)*?)(?=^\S)", text, re.M)
    if not block or not re.search(r"^  url: ", block.group(1), re.M):
        raise SystemExit(
            "_config.yml has no `repository:` block with `url:` (tools/editions.py)"
        )
    edition = (
        "repository:\n"
        "  # The student edition's own public repository (written by tools/editions.py).\n"
        f"  url: {settings['student_url']}\n"
        f"  branch: {settings['launch_branch']}\n"
        f"  student_repository: {student}\n"
        f"  student_branch: {settings['launch_branch']}\n\n"
    )
    return text[: block.start()] + edition + text[block.end() :]


def front_door(settings: dict[str, str]) -> dict[str, str]:
    """The student edition's README, CONTRIBUTING and ``.ci/run``: path -> text (``$html``,
    ``$student_url`` ... of ``settings`` filled in, in the Markdown files)."""
    texts = {}
    for name, path in FRONT_DOOR.items():
        text = (TEMPLATES / name).read_text(encoding="utf-8")
        texts[path] = (
            string.Template(text).substitute(settings) if name.endswith(".md") else text
        )
    return texts


def assemble_student(
    dest: Path, source: Path = ROOT, settings: dict[str, str] | None = None
) -> list[str]:
    """Write the student edition's sources to ``dest`` (emptied first); return its files.
    ``settings``: the repositories (``student_repository()`` of this run by default)."""
    settings = settings or student_repository()
    if dest.exists():
        shutil.rmtree(dest)
    names = [name for name in source_files(source) if in_student_edition(name)]
    _copy(names, source, dest)
    toc = (source / "_toc.yml").read_text(encoding="utf-8")
    (dest / "_toc.yml").write_text(STUDENT_TOC_HEADER + toc, encoding="utf-8")
    makefile = (source / "Makefile").read_text(encoding="utf-8")
    (dest / "Makefile").write_text(student_makefile(makefile), encoding="utf-8")
    config = dest / "_config.yml"
    config.write_text(
        student_config(config.read_text(encoding="utf-8"), settings), encoding="utf-8"
    )
    citation = dest / "CITATION.cff"
    citation.write_text(
        re.sub(
            r"^repository-code: .*$",
            f'repository-code: "{settings["student_url"]}"',
            citation.read_text(encoding="utf-8"),
            flags=re.M,
        ),
        encoding="utf-8",
    )
    for path, text in front_door(settings).items():
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        (dest / path).write_text(text, encoding="utf-8")
    (dest / ".ci" / "run").chmod(0o755)
    return sorted({*names, *FRONT_DOOR.values()})


# Variables of a GitHub Actions run that would make the edition's build name the run's
# repository (the instructor's) instead of the edition's own (reader_notebooks.repository_settings).
RUN_VARIABLES = ("GITHUB_ACTIONS", "GITHUB_REPOSITORY", "BINDER_REPO_URL", "BINDER_REF_URL")


def build_student_html(dest: Path, source: Path = ROOT) -> int:
    """Build the edition's HTML in ``dest/_build/html`` as ``make book`` does, importing the
    edition's own package (``dest/code`` first on the path) and serving this tree's MathJax
    (``node_modules``, linked into the edition: ``make setup`` installed it here)."""
    modules = dest / "node_modules"
    linked = not modules.exists() and (source / "node_modules").is_dir()
    if linked:  # for the build only: the link is no file of the edition
        modules.symlink_to(source / "node_modules", target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k not in RUN_VARIABLES}
    env["PYTHONPATH"] = str(dest / "code")
    command = [sys.executable, str(dest / "tools" / "build_book.py"), "build", str(dest)]
    flags = ["-W", "-n", "--keep-going", "--all"]
    try:
        return subprocess.run([*command, *flags], cwd=dest, env=env).returncode
    finally:
        if linked:
            modules.unlink()


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=check
    )


def _commit_tree(tree: Path, remote: str, branch: str, message: str, *, keep: bool) -> str:
    """Commit the files of ``tree`` (a fresh repository in ``tree/.git``) and push them to
    ``branch`` of ``remote``: on top of that branch's own history (``keep``), or as its only
    commit. Returns what happened."""
    if (tree / ".git").exists():
        shutil.rmtree(tree / ".git")
    _git(tree, "init", "-q", "-b", branch)
    _git(tree, "config", "user.name", "github-actions[bot]")
    _git(tree, "config", "user.email", "github-actions[bot]@users.noreply.github.com")
    _git(tree, "remote", "add", "origin", remote)
    if (
        keep
        and _git(tree, "fetch", "-q", "--depth=1", "origin", branch, check=False).returncode
        == 0
    ):
        # The student repository's own last commit becomes the parent; the index stays empty,
        # so `add -A` stages exactly the edition's tree (files it no longer has are deleted).
        _git(tree, "reset", "-q", "--soft", "FETCH_HEAD")
    _git(tree, "add", "-A")
    if _git(tree, "rev-parse", "-q", "--verify", "HEAD", check=False).returncode == 0:
        if _git(tree, "diff", "--cached", "--quiet", "HEAD", check=False).returncode == 0:
            return f"{branch}: unchanged"
    _git(tree, "commit", "-q", "-m", message)
    # The Pages branch is replaced each time (--force); the sources' branch only grows.
    force = [] if keep else ["--force"]
    _git(tree, "push", "-q", *force, "origin", f"HEAD:refs/heads/{branch}")
    return f"{branch}: pushed {_git(tree, 'rev-parse', '--short', 'HEAD').stdout.strip()}"


def publish(
    sources: Path, html: Path, remote: str, message: str, branch: str | None = None
) -> list[str]:
    """Push the edition's ``sources`` to ``branch`` of the student repository ``remote`` (one new
    commit on its own history) and its ``html`` to its ``gh-pages`` branch (one commit, replaced
    each time). Nothing of this repository's history travels: both are made from files alone."""
    branch = branch or student_repository()["launch_branch"]
    if not (sources / "_config.yml").is_file() or not (html / "index.html").is_file():
        raise SystemExit(
            f"nothing to publish: {sources} needs _config.yml and {html} index.html "
            "(run `make student` first)"
        )
    (html / ".nojekyll").touch()  # Pages serves _static/ and _sources/ as they are
    return [
        _commit_tree(sources, remote, branch, message, keep=True),
        _commit_tree(html, remote, PAGES_BRANCH, message, keep=False),
    ]


def write_autograder(zip_path: Path, source: Path = ROOT) -> list[str]:
    """Write Gradescope's autograder zip; return the names it holds."""
    names = [
        name
        for name in source_files(source)
        if name.startswith(AUTOGRADER_TREES) or name in AUTOGRADER_TOP
    ]
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for script in ("setup.sh", "run_autograder"):
            info = zipfile.ZipInfo(script)
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            archive.writestr(info, (AUTOGRADER_FILES / script).read_bytes())
        for name in names:
            archive.write(source / name, name)
    return ["setup.sh", "run_autograder", *names]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    student = sub.add_parser("student", help="write the student edition")
    student.add_argument("--dest", type=Path, default=ROOT / "_build" / "student")
    student.add_argument("--no-html", action="store_true", help="sources only")
    grader = sub.add_parser("autograder", help="write the Gradescope autograder zip")
    grader.add_argument("--dest", type=Path, default=ROOT / "_build" / "autograder.zip")
    sub.add_parser(
        "student-repository", help="print OWNER/NAME of this run's student repository"
    )
    pusher = sub.add_parser("publish", help="push the edition to the student repository")
    pusher.add_argument("sources", type=Path, help="the edition's sources (make student)")
    pusher.add_argument("html", type=Path, help="the edition's built HTML")
    pusher.add_argument("remote", help="the student repository's git address")
    pusher.add_argument("--message", default="Student edition")
    args = parser.parse_args(argv)
    if args.command == "autograder":
        names = write_autograder(args.dest)
        print(f"wrote {args.dest} ({len(names)} files): upload it as the autograder")
        return 0
    if args.command == "student-repository":
        settings = student_repository()
        print(f"{settings['student_owner']}/{settings['student_name']}")
        return 0
    if args.command == "publish":
        for line in publish(args.sources, args.html, args.remote, args.message):
            print(line)
        return 0
    names = assemble_student(args.dest)
    print(f"wrote the student edition's sources to {args.dest} ({len(names)} files)")
    if args.no_html:
        return 0
    status = build_student_html(args.dest)
    if status == 0:
        print(f"its HTML: {args.dest / '_build' / 'html' / 'index.html'}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
