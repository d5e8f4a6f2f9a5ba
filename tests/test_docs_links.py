"""The docs hold together: every relative link in the READMEs, CHANGELOG.md and docs/*.md reaches a file (and a
heading, when it names an anchor, by GitHub's rule for heading anchors), every `docs/NAME.md` the docs,
the code and the benchmarks name exists, docs/index.md names every page, and no page is over 600 lines."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

DOCS = ROOT / "docs"
MAX_LINES = 600
PAGES = sorted([*DOCS.glob("*.md"), *(ROOT / name for name in ("README.md", "CHANGELOG.md") if (ROOT / name).exists())])
PAGES += [ROOT / folder / "README.md" for folder in ("benchmarks", "tests", "models")]

_FENCE = re.compile(r"^(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
_DOCS_NAMED = re.compile(r"\bdocs/([\w.-]+\.md)\b")


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def links(text: str) -> Iterator[tuple[int, str]]:
    """(line number, target) of every Markdown link and image outside code."""
    for number, line in _prose_lines(text):
        bare = _CODE_SPAN.sub("", line)
        for match in _INLINE_LINK.finditer(bare):
            yield number, match.group(1)
        definition = _REFERENCE_DEF.match(bare)
        if definition:
            yield number, definition.group(1)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its rendered text lower-cased, punctuation dropped (not `-`
    or `_`), each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link renders as its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_(.+?)_(?!\w)", r"\1", text)  # _emphasis_ renders without its underscores
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _prose_lines(text):
        found.update(_HTML_ANCHOR.findall(line))
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            slug = github_anchor(heading.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")  # a repeated heading gets -1, -2, ...
    return found


def _broken(page: Path) -> Iterator[str]:
    text = page.read_text(encoding="utf-8")
    for number, target in links(text):
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, mailto:, ...
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(ROOT)}:{number}: {target}"
        if not file.exists():
            yield f"{where}: no such file"
        elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text(encoding="utf-8")):
            yield f"{where}: no heading with that anchor in {file.relative_to(ROOT)}"


def test_every_relative_link_reaches_its_file_and_heading():
    broken = [line for page in PAGES for line in _broken(page)]
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_docs_page_named_in_docs_code_and_benchmarks_exists():
    named: list[str] = []
    # CHANGELOG.md is history: it may name a page that has since been split or renamed.
    files = [p for p in PAGES if p.name != "CHANGELOG.md"]
    files += [*(ROOT / "app").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    for file in files:
        if "__pycache__" in file.parts or not file.exists():
            continue
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            for page in _DOCS_NAMED.findall(line):
                if not (DOCS / page).exists():
                    named.append(f"{file.relative_to(ROOT)}:{number}: docs/{page}")
    assert not named, "pages named that do not exist:\n" + "\n".join(named)


def test_the_index_names_every_page():
    index = DOCS / "index.md"
    linked = {target.partition("#")[0] for _, target in links(index.read_text(encoding="utf-8"))}
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "index.md" and p.name not in linked]
    assert not missing, f"docs/index.md does not link: {', '.join(sorted(missing))}"


def test_readme_links_the_index():
    assert "docs/index.md" in {target for _, target in links((ROOT / "README.md").read_text(encoding="utf-8"))}


def test_no_docs_page_is_over_600_lines():
    long = {p.name: n for p in DOCS.glob("*.md") if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"pages over {MAX_LINES} lines (split them by question): {long}"


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Exit codes", "exit-codes"),
        ("Power state and energy per inference", "power-state-and-energy-per-inference"),
        (
            "`bench --versus-litert`: the tool against LiteRT's own benchmark",
            "bench---versus-litert-the-tool-against-literts-own-benchmark",
        ),
        ("GPU pipeline ÷ raw loop (H100, 2026)", "gpu-pipeline--raw-loop-h100-2026"),
        ("A/B: side by side", "ab-side-by-side"),
        (
            "The [guide](guide.md) and **bold** and _emphasis_ and snake_case",
            "the-guide-and-bold-and-emphasis-and-snake_case",
        ),
    ],
)
def test_anchors_follow_githubs_rule(heading: str, anchor: str):
    assert github_anchor(heading) == anchor


def test_the_link_reader_finds_links_and_skips_code():
    text = "a [x](a.md#b) `[y](c.md)` ![img](p.png 'no')\n```\n[z](d.md)\n```\n[ref]: e.md\n"
    assert [t for _, t in links(text)] == ["a.md#b", "p.png", "e.md"]
