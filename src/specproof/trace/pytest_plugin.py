"""specproof's pytest plugin (registered as ``pytest11`` entry point ``specproof``): what each passing
:func:`specproof.testing.assert_lossless` passed, in a "specproof verdicts" section of pytest's
summary, so a float-faithful pass (the textbook verifier in float arithmetic, its TV the float floor)
is not mistaken for an exactly lossless one. It works under pytest-xdist: the lines travel in each
test report's ``user_properties``.

Nothing here imports the tracer; a run that never calls ``assert_lossless`` prints nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from specproof.trace import _passed

#: The summary lists at most this many lines (the rest are counted).
SHOWN = 20
_KEY = "specproof"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    if _passed.PASSED:  # recorded while the test ran: into the report made now
        item.user_properties.extend((_KEY, line) for line in _passed.PASSED)
        _passed.PASSED.clear()
    yield


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines: dict[str, None] = {}  # ordered, without repeats (a test's properties are on each of its reports)
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()):
                if key == _KEY:
                    lines[f"{report.nodeid}: {value}"] = None
    if not lines:
        return
    terminalreporter.section("specproof verdicts")
    for line in list(lines)[:SHOWN]:
        terminalreporter.write_line(line)
    if len(lines) > SHOWN:
        terminalreporter.write_line(f"... and {len(lines) - SHOWN} more assert_lossless passes")
