import re
from pathlib import Path

import pytest

from transformer_lab.timing import format_wall_time, format_wall_time_prose, stopwatch


def sanitizer_pattern(section: str) -> str:
    """The regex of one section of the nbval sanitizer file."""
    config = (Path(__file__).parent / "nbval_sanitize.cfg").read_text()
    return re.search(rf"\[{re.escape(section)}\]\nregex: (.+)\n", config).group(1)


def test_format_is_what_the_sanitizer_masks():
    text = format_wall_time(1.234)
    assert text == "1.23 s (wall)"
    assert re.fullmatch(sanitizer_pattern("wall-clock timings"), text)


def test_prose_format_is_masked_too():
    text = format_wall_time_prose(0.1)
    assert text == "0.10 seconds of wall-clock time"
    assert re.fullmatch(sanitizer_pattern("wall-clock timings in prose"), text)


def test_stopwatch_measures():
    with stopwatch() as elapsed:
        sum(range(1000))
    assert elapsed["seconds"] > 0


def test_a_duration_must_be_a_non_negative_number():
    with pytest.raises(TypeError, match="seconds must be a number, got str '1.0'"):
        format_wall_time("1.0")
    with pytest.raises(ValueError, match="seconds must be at least 0, got -1.0"):
        format_wall_time_prose(-1.0)
