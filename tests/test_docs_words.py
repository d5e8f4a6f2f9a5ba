"""The project speaks of the tool, not of how it was made: no line of the README, the docs, the code,
the tests, the benchmarks, the models or the packaging names a work session, one of the project's own
issue numbers, a borrowed machine or a scratch path, and no docs heading is a date. A reason is stated
as the invariant or the measured fact itself (with a pointer to where the figure is kept).

Citations of another project's tracker stay (its owner/repo beside the number, or the URL)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

ROOTS = ("README.md", "docs", "app", "tests", "benchmarks", "models", "packaging")
TEXT = {".py", ".md", ".json", ".txt", ".sh", ".csv", ".c", ".h", ".spec", ".plist", ".html", ".desktop",
        ".toml", ".yml", ".yaml", ".cfg", ".ini"}  # fmt: skip
SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", "build", "dist"}

_ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|\d+(?:st|nd|rd|th))"
WORDS: dict[str, re.Pattern[str]] = {
    "a numbered session": re.compile(rf"\b{_ORDINAL}\s+session\b", re.IGNORECASE),
    "an issue number": re.compile(r"\bissues?\s*#\s*\d+|\bissues?\s+\d+\b", re.IGNORECASE),
    "a borrowed machine": re.compile(
        r"\blent\s+(?:machine|host|gpu|h100|h200|device|card)s?\b|\bdevice\s+(?:machine|tool)s?\b", re.IGNORECASE
    ),
    "a helper or review session": re.compile(r"\bhelper\s+sessions?\b|\bthe review's\s+(?:mend|fix|finding)", re.I),
    "a scratch path": re.compile(r"(?<![\w.~])/(?:tmp|work)/"),
}
_UPSTREAM = re.compile(r"[\w.-]+/[\w.-]+(?:'s)?\s*$")  # `owner/repo` just before: an upstream citation
_DATED_HEADING = re.compile(r"^#{1,6}\s.*\b20\d\d-\d\d(?:-\d\d)?\b")


def _files() -> Iterator[Path]:
    for name in ROOTS:
        top = ROOT / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        for path in candidates:
            if path.is_file() and path.suffix in TEXT and not SKIPPED_DIRS & set(path.parts):
                if path != Path(__file__).resolve():  # the patterns themselves
                    yield path


def findings(line: str) -> list[str]:
    """What a line names that it should not (empty: nothing)."""
    found = []
    for what, pattern in WORDS.items():
        for match in pattern.finditer(line):
            if what == "an issue number" and _UPSTREAM.search(line[: match.start()]):
                continue
            found.append(f"{what} ({match.group(0)!r})")
    return found


def test_no_line_names_a_session_an_issue_a_borrowed_machine_or_a_scratch_path():
    bad = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for finding in findings(line):
                bad.append(f"{path.relative_to(ROOT)}:{number}: {finding}: {line.strip()[:120]}")
    assert not bad, f"{len(bad)} lines speak of how the project was made, not of the tool:\n" + "\n".join(bad)


def test_no_docs_heading_is_dated():
    dated = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        fenced = False
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            fenced ^= line.lstrip().startswith("```")
            if not fenced and _DATED_HEADING.match(line):
                dated.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not dated, "dated headings (a figure's date goes in its table row):\n" + "\n".join(dated)


def _spelled(text: str) -> str:
    words = {"<S>": "session", "<I>": "issue", "<M>": "machine", "<T>": "/" + "tmp/"}
    for placeholder, word in words.items():
        text = text.replace(placeholder, word)
    return text


@pytest.mark.parametrize(
    "line",
    [
        # Written with placeholders (<S> session, <I> issue, <M> machine, <T> the temporary folder) so this
        # file's own lines pass the scan they test.
        *(
            _spelled(x)
            for x in (
                "the ninth <S> measured the GPU process",
                "Ninth <S>: the GPU process measured",
                "(docs/performance.md, 5th <S>)",
                "as <I> 36 asked",
                "(<I> #32)",
                "An <I> 36 on an H100 host",
                "measured on the device <M>",
                "cloned into <T>iso2/repo",
                "`--before <T>before`",
            )
        ),
        "the review's mends",
    ],
)
def test_the_patterns_catch_what_they_are_for(line: str):
    assert findings(line), line


@pytest.mark.parametrize(
    "line",
    [
        "google-ai-edge/LiteRT #331 tracks it",
        _spelled("the runtime's bug (google-ai-edge/LiteRT <I> 331)"),
        "https://github.com/google-ai-edge/LiteRT/issues/331",
        "each A/B side opens a backend session of its own",
        "delegate (session 1): cpu, XNNPACK",
        "the first recorded run is the baseline",
        "the Review panel; the Review's resampling",
        "~/.config/delegate-scope/settings.ini",
        "a GPU device lost mid-run",
        "the issues the runtime reports",
    ],
)
def test_the_patterns_leave_the_tools_own_words_and_upstream_citations(line: str):
    assert not findings(line), findings(line)
