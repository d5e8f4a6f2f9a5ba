"""Delegate Scope: see where and how fast an on-device TFLite model really runs."""
