"""`delegate-scope gui`: the window's options checked and handed over (Qt is imported only when it runs)."""

from __future__ import annotations

import argparse

from app.errors import UsageError


def cmd_gui(args: argparse.Namespace) -> int:
    from app.ui.app import run_gui  # Qt is imported only for the window
    from app.ui.window_config import GuiOptions

    if args.screenshot is not None and args.exit_after is None:
        raise UsageError("--screenshot is taken just before --exit-after closes the window: give both")
    options = GuiOptions(
        source=args.source,
        model=args.model,
        delegate=args.delegate,
        threads=args.threads,
        throttle_ms=args.throttle_ms,
        settings_file=args.settings_file,
        record=args.record,
        exit_after=args.exit_after,
        screenshot=args.screenshot,
        stats_file=args.stats_file,
        save_settings=args.save_settings,
    )
    return run_gui(options)
