"""The window. The only package of app that imports Qt (PySide6, pyqtgraph): what it shows comes
from app.live.controller.LiveController, which, like the rest of app, runs headless (tests/test_import_rule.py)."""
