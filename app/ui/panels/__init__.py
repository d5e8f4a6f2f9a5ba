"""Panels of the window: each takes what it renders and callbacks for what it sends."""
