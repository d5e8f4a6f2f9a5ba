"""Where the test data lives: the checkout, its test photos and tiny test models (the third-party
fixtures are reached through the `coral` fixture, tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PHOTOS = ROOT / "tests" / "data" / "photos"
TEST_MODELS = ROOT / "tests" / "data" / "models"
