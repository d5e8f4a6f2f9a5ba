"""Help → User guide: the docs/ pages rendered in the window (Markdown, their images and the links between
them), from wherever this copy of the app keeps them: the checkout's docs/, the wheel's
share/delegate-scope/docs or the bundle's docs/ (app/system/paths.py)."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QImageReader, QTextCursor
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPushButton, QTextBrowser, QVBoxLayout, QWidget

from app.system.paths import resource_dir

# The first page that exists opens the guide: the index names every page.
START_PAGES = ("index.md", "guide.md", "window.md")
WEB_SCHEMES = ("http", "https", "mailto")


def docs_dir() -> Path:
    """Where this copy of the app reads its pages from (it may not exist: then the guide says so)."""
    return resource_dir("docs")


def start_page(folder: Path) -> Path | None:
    return next((folder / name for name in START_PAGES if (folder / name).is_file()), None)


def heading_slug(text: str) -> str:
    """The anchor GitHub gives a heading ("Where files go" → "where-files-go"): the docs link to those."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


class GuideBrowser(QDialog):
    """The docs as one browsable window: Back, Forward and Contents; local pages open here, web links in the
    system browser, a link to a file this copy does not ship is said on the line below."""

    def __init__(self, parent: QWidget | None, folder: Path) -> None:
        super().__init__(parent)
        self.setWindowTitle("Delegate Scope — User guide")
        self.setWindowFlags(self.windowFlags() | Qt.WindowType.WindowMinMaxButtonsHint)  # pages read better tall
        self.folder, self.home = folder, start_page(folder)
        self.browser = QTextBrowser()
        self.browser.setOpenLinks(False)  # every click comes to follow(): local, web or missing
        self.browser.anchorClicked.connect(self.follow)
        self.browser.setSearchPaths([str(folder)])
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setLayout(self._layout())
        self.resize(900, 700)
        if self.home is None:
            self.browser.setMarkdown(missing_docs_text(folder))
        self.go_home()

    def _layout(self) -> QVBoxLayout:
        bar = QHBoxLayout()
        for text, slot in (("◀ Back", self.back), ("Forward ▶", self.forward)):
            button = QPushButton(text)
            button.clicked.connect(slot)
            bar.addWidget(button)
        contents = QPushButton("Contents")
        contents.clicked.connect(self.go_home)
        bar.addWidget(contents)
        bar.addStretch(1)
        layout = QVBoxLayout()
        layout.addLayout(bar)
        layout.addWidget(self.browser, 1)
        layout.addWidget(self.note)
        return layout

    def back(self) -> None:
        self.browser.backward()
        self._shown(self.browser.source())  # history is restored past open_page

    def forward(self) -> None:
        self.browser.forward()
        self._shown(self.browser.source())

    def go_home(self) -> None:
        if self.home is not None:
            self.open_page(QUrl.fromLocalFile(str(self.home)))

    def follow(self, url: QUrl) -> None:
        if url.scheme() in WEB_SCHEMES:
            QDesktopServices.openUrl(url)
            return
        if not url.path():  # an anchor on this page
            self.scroll_to(url.fragment())
            return
        target = self.browser.source().resolved(url)
        if Path(target.toLocalFile()).is_file():
            self.open_page(target)
        else:
            self.note.setText(f"Not shipped with this copy of Delegate Scope: {target.toLocalFile()}")

    def open_page(self, url: QUrl) -> None:
        fragment = url.fragment()
        url = QUrl.fromLocalFile(url.toLocalFile())  # the page alone: its anchor is scrolled to below
        self.browser.setSource(url)
        self._shown(url)
        if fragment:
            self.scroll_to(fragment)

    def _shown(self, url: QUrl) -> None:
        self.note.setText(url.toLocalFile())  # where the pages are read from, whole
        fit_images(self.browser)

    def scroll_to(self, fragment: str) -> None:
        """Qt's Markdown reader gives headings no anchors: find the heading whose GitHub anchor is `fragment`."""
        block = self.browser.document().begin()
        while block.isValid():
            if block.blockFormat().headingLevel() and heading_slug(block.text()) == fragment:
                self.browser.setTextCursor(QTextCursor(block))
                self.browser.ensureCursorVisible()
                bar = self.browser.verticalScrollBar()
                bar.setValue(min(bar.maximum(), self.browser.cursorRect().top() + bar.value()))
                return
            block = block.next()


def fit_images(browser: QTextBrowser) -> None:
    """Screenshots are wider than the page: each image drawn at most the view's width (aspect kept)."""
    width = max(200, browser.viewport().width() - 40)
    block = browser.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().isImageFormat():
                image = fragment.charFormat().toImageFormat()
                natural = QImageReader(browser.source().resolved(QUrl(image.name())).toLocalFile()).size()
                if natural.width() > width:
                    image.setWidth(width)
                    image.setHeight(natural.height() * width / natural.width())
                    cursor = QTextCursor(browser.document())
                    cursor.setPosition(fragment.position())
                    cursor.setPosition(fragment.position() + fragment.length(), QTextCursor.MoveMode.KeepAnchor)
                    cursor.setCharFormat(image)
            it += 1
        block = block.next()


def missing_docs_text(folder: Path) -> str:
    return (
        "# The user guide is not installed here\n\n"
        f"This copy of Delegate Scope has no pages in `{folder}`.\n\n"
        "Read them online in the project's `docs/` folder, or install from a source checkout "
        "(`pip install .` ships them to `share/delegate-scope/docs`).\n"
    )
