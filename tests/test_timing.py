import re
from pathlib import Path

from transformer_lab.timing import format_wall_time, stopwatch


def test_format_is_what_the_sanitizer_masks():
    text = format_wall_time(1.234)
    assert text == "1.23 s (wall)"
    config = (Path(__file__).parent / "nbval_sanitize.cfg").read_text()
    pattern = re.search(r"\[wall-clock timings\]\nregex: (.+)\n", config).group(1)
    assert re.fullmatch(pattern, text)


def test_stopwatch_measures():
    with stopwatch() as elapsed:
        sum(range(1000))
    assert elapsed["seconds"] > 0
