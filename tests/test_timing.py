import re
from pathlib import Path

from transformer_lab.timing import format_wall_time, format_wall_time_prose, stopwatch


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


def test_prose_format_is_masked_too():
    text = format_wall_time_prose(0.1)
    assert text == "0.10 seconds of wall-clock time"
    config = (Path(__file__).parent / "nbval_sanitize.cfg").read_text()
    pattern = re.search(r"\[wall-clock timings in prose\]\nregex: (.+)\n", config).group(1)
    assert re.fullmatch(pattern, text)
