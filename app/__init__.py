"""Delegate Scope: see where and how fast an on-device TFLite model really runs."""

__version__ = "0.1.0"
