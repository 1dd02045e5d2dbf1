"""tools/lock.py (`make lock`): the two locks follow from requirements.in and from each other."""

import re

from lock import (
    BINDER_LOCK,
    LOCK,
    PIN,
    SOURCE,
    binder_lock,
    main_lock,
    normalise,
    split_header,
)


def pins(lines: list[str]) -> dict[str, str]:
    return {normalise(PIN.match(line).group(1)): PIN.match(line).group(2) for line in lines}


def test_every_direct_dependency_is_locked_at_its_pin():
    direct = [
        line for line in SOURCE.read_text(encoding="utf-8").splitlines() if PIN.match(line)
    ]
    _, locked = split_header(LOCK)
    missing = {
        name: version
        for name, version in pins(direct).items()
        if pins(locked).get(name) != version
    }
    assert not missing, (
        f"requirements.in pins {missing} but requirements.txt does not: run `make lock`"
    )


def test_binder_lock_is_what_make_lock_derives_from_the_main_lock():
    _, locked = split_header(LOCK)
    header, binder = split_header(BINDER_LOCK)
    assert binder_lock(locked, binder) == binder, (
        "binder/requirements.txt is stale: run `make lock`"
    )
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in header


def test_main_lock_drops_local_labels_and_binder_labels_torch():
    frozen = ["numpy==2.4.6", "torch==2.13.0+cpu"]
    assert main_lock(frozen) == ["numpy==2.4.6", "torch==2.13.0"]
    binder = binder_lock(main_lock(frozen), ["jupyterlab-myst==2.7.0", "numpy==1.0"])
    assert binder == ["jupyterlab-myst==2.7.0", "numpy==2.4.6", "torch==2.13.0+cpu"]


def test_each_lock_starts_with_a_header_saying_how_it_is_made():
    for path in (LOCK, BINDER_LOCK):
        header, _ = split_header(path)
        assert any(re.search(r"make lock", line) for line in header), (
            f"{path.name}: no header"
        )
