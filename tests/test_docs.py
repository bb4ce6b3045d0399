"""The documentation's relative links resolve: to a file or folder of the repository and,
after a '#', to a heading of that file."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md")),
        REPO / "experiments" / "results" / "calibration.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ +(.+)$", path.read_text(), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_links_resolve(doc):
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)     # not inside code
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue                                   # a URL
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        assert resolved.exists(), f"{doc.name}: link to missing {target}"
        if anchor:
            assert anchor in _anchors(resolved), f"{doc.name}: no heading #{anchor} in {path}"
