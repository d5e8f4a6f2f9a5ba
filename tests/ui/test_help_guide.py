"""Help → User guide: the docs pages rendered in a QTextBrowser, from real files."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from app.ui.help_guide import GuideBrowser, docs_dir, heading_slug, start_page
from tests.helpers.paths import ROOT


def _pages(folder: Path) -> Path:
    from PySide6.QtGui import QColor, QImage

    folder.mkdir()
    image = QImage(3000, 120, QImage.Format.Format_RGB32)
    image.fill(QColor("steelblue"))
    assert image.save(str(folder / "wide.png"))
    (folder / "index.md").write_text(
        "# Contents\n\n- [The second part](other.md#the-second-part)\n- [Not here](../outside.md)\n\n"
        "![A wide screenshot](wide.png)\n",
        encoding="utf-8",
    )
    filler = "".join(f"Line {i} of the first part.\n\n" for i in range(200))
    (folder / "other.md").write_text(f"# Other\n\n{filler}## The second part\n\nFound.\n", encoding="utf-8")
    return folder


def test_pages_link_to_each_other_and_to_their_headings(qtbot, tmp_path: Path):
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QTextCursor

    guide = GuideBrowser(None, _pages(tmp_path / "docs"))
    qtbot.addWidget(guide)
    guide.show()
    assert guide.browser.source().toLocalFile() == str(tmp_path / "docs" / "index.md")
    assert "The second part" in guide.browser.toPlainText()
    guide.follow(QUrl("other.md#the-second-part"))
    assert guide.browser.source().toLocalFile() == str(tmp_path / "docs" / "other.md")
    heading = guide.browser.document().findBlockByNumber(guide.browser.document().blockCount() - 2)
    assert heading.text() == "The second part"
    shown = guide.browser.cursorRect(QTextCursor(heading))  # in the viewport's coordinates
    assert guide.browser.verticalScrollBar().value() > 0
    assert guide.browser.viewport().rect().contains(shown.topLeft()), shown
    guide.back()
    assert guide.browser.source().toLocalFile().endswith("index.md")


def test_a_wide_image_is_drawn_within_the_page(qtbot, tmp_path: Path):
    guide = GuideBrowser(None, _pages(tmp_path / "docs"))
    qtbot.addWidget(guide)
    guide.show()
    guide.resize(800, 600)
    widths = _image_widths(guide)
    assert widths and 0 < widths[0] < 900  # the file is 3000 px wide


def _image_widths(guide: GuideBrowser) -> list[float]:
    block, widths = guide.browser.document().begin(), []
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            if it.fragment().charFormat().isImageFormat():
                widths.append(it.fragment().charFormat().toImageFormat().width())
            it += 1
        block = block.next()
    return widths


def test_a_link_to_a_page_not_shipped_says_so_and_stays(qtbot, tmp_path: Path):
    from PySide6.QtCore import QUrl

    guide = GuideBrowser(None, _pages(tmp_path / "docs"))
    qtbot.addWidget(guide)
    guide.follow(QUrl("../outside.md"))
    assert guide.note.text() == f"Not shipped with this copy of Delegate Scope: {tmp_path / 'outside.md'}"
    assert guide.browser.source().toLocalFile().endswith("index.md")


def test_without_docs_the_guide_names_the_folder_it_looked_in(qtbot, tmp_path: Path):
    guide = GuideBrowser(None, tmp_path / "nowhere")
    qtbot.addWidget(guide)
    text = guide.browser.toPlainText()
    assert "The user guide is not installed here" in text and str(tmp_path / "nowhere") in text


def test_a_checkout_reads_its_own_docs_folder():
    assert docs_dir() == ROOT / "docs"
    assert start_page(docs_dir()) is not None


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [("Where files go", "where-files-go"), ("Menus: File, Record", "menus-file-record"), ("A/B", "ab")],
)
def test_heading_anchors_follow_githubs_rule(heading: str, anchor: str):
    assert heading_slug(heading) == anchor


def test_back_draws_the_page_as_following_a_link_does(qtbot, tmp_path: Path):
    from PySide6.QtCore import QUrl

    guide = GuideBrowser(None, _pages(tmp_path / "docs"))
    qtbot.addWidget(guide)
    guide.show()
    guide.follow(QUrl("other.md"))
    assert guide.note.text() == str(tmp_path / "docs" / "other.md")
    guide.back()
    assert guide.note.text() == str(tmp_path / "docs" / "index.md")
    assert 0 < _image_widths(guide)[0] < 3000  # fitted again, not drawn at full size
