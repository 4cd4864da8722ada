"""docs/trust.md's reading order is the checker's: each part's line range there starts at its banner in
src/specproof/checker.py, and the parts are in the file's order (so an edit of the kernel that moves them
fails here until the page says so)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_trust_page_s_line_ranges_are_the_kernel_s_parts():
    lines = (ROOT / "src" / "specproof" / "checker.py").read_text(encoding="utf-8").splitlines()
    banners = [i + 1 for i, line in enumerate(lines) if line.startswith("# ====")]
    names = [re.sub(r"^# =+ \d\. ", "", lines[i - 1]) for i in banners]
    page = (ROOT / "docs" / "trust.md").read_text(encoding="utf-8")
    ranges = [(int(a), int(b)) for a, b in re.findall(r"\(lines (\d+)-(\d+), [\d,]+ code lines\)", page)]
    want = list(zip([1, *banners], [b - 1 for b in banners] + [len(lines)]))
    assert ranges == want, (names, ranges, want)
    assert f"{len(lines):,} lines" in page
