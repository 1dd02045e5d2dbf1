"""The two editions of one source: the students' book, and the instructor's Gradescope autograder.

    python tools/editions.py student [--dest _build/student] [--no-html]   # make student
    python tools/editions.py autograder [--dest _build/autograder.zip]     # make autograder

**Student edition**: the repository's files minus everything that holds an answer: ``instructor/``
(references, known mistakes, solutions, hidden checks, the autograder), ``tests/`` except the
pages' executed references (Binder's reader notebooks and the downloads are made from those),
the tools that build classes of solved submissions (``classroom``, ``bench``) and the CI
workflow (the student branch is published by the main repository's CI, it does not run its own).
It has its own ``_toc.yml`` and names its own branch in ``_config.yml``; then its HTML is built
from that tree alone (the kernels import the edition's own package). ``tests/test_editions.py``
fingerprints every answer against every ``.py`` file and code cell of the edition.

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
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDENT_BRANCH = "student"
# What the student edition leaves out: folders (a trailing /) and files, relative to the root.
EXCLUDED = (
    "instructor/",
    "tests/",
    ".github/",
    "tools/classroom.py",
    "tools/bench.py",
)
# The pages' executed outputs (reader notebooks), and the output sanitizer the Binder rehearsal
# (make binder-check) reads.
KEPT_UNDER_EXCLUDED = ("tests/references/", "tests/nbval_sanitize.cfg")
# Makefile targets that need what the edition leaves out (the tests, the bench's tool, the
# instructor's package): the edition's Makefile has the others (student_makefile).
MAIN_ONLY_TARGETS = ("test", "test-portability", "bench", "student", "autograder")
STUDENT_MAKEFILE_HEADER = (
    "# The student edition's Makefile (written by tools/editions.py from the main Makefile):\n"
    f"# the same targets but {', '.join(MAIN_ONLY_TARGETS)}, which need the instructor's files.\n"
)
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
    right above each), their lines in ``make help`` and their ``.PHONY`` names."""
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
            line = ".PHONY: " + " ".join(names) + "\n"
        kept.append(line)
        index += 1
    return STUDENT_MAKEFILE_HEADER + re.sub(r"\n{3,}", "\n\n", "".join(kept))


def assemble_student(dest: Path, source: Path = ROOT) -> list[str]:
    """Write the student edition's sources to ``dest`` (emptied first); return its files."""
    if dest.exists():
        shutil.rmtree(dest)
    names = [name for name in source_files(source) if in_student_edition(name)]
    _copy(names, source, dest)
    toc = (source / "_toc.yml").read_text(encoding="utf-8")
    (dest / "_toc.yml").write_text(STUDENT_TOC_HEADER + toc, encoding="utf-8")
    makefile = (source / "Makefile").read_text(encoding="utf-8")
    (dest / "Makefile").write_text(student_makefile(makefile), encoding="utf-8")
    config = dest / "_config.yml"
    text = config.read_text(encoding="utf-8")
    config.write_text(
        text.replace("  branch: main\n", f"  branch: {STUDENT_BRANCH}\n"), encoding="utf-8"
    )
    return names


def build_student_html(dest: Path) -> int:
    """Build the edition's HTML in ``dest/_build/html`` as ``make book`` does, importing the
    edition's own package (``dest/code`` first on the path)."""
    env = dict(os.environ, PYTHONPATH=str(dest / "code"))
    command = [sys.executable, str(dest / "tools" / "build_book.py"), "build", str(dest)]
    flags = ["-W", "-n", "--keep-going", "--all"]
    return subprocess.run([*command, *flags], cwd=dest, env=env).returncode


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
    args = parser.parse_args(argv)
    if args.command == "autograder":
        names = write_autograder(args.dest)
        print(f"wrote {args.dest} ({len(names)} files): upload it as the autograder")
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
