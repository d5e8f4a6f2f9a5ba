"""Headless use cases, one module each: plain functions that the commands and the window call.

classify, bench, A/B bench, sweep, inspect, delegates.
"""
