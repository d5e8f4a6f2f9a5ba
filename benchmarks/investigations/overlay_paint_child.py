"""The window on a photo with a model read as `--task` says, for overlay_paint.py's control leg (the
`gui` command's own --task comes with the CLI's model options): the same inference, another overlay.

    python -m benchmarks.investigations.overlay_paint_child MODEL PHOTO SECONDS THROTTLE_MS STATS SETTINGS TASK
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.model.spec import ModelOptions
from app.model.task import Task
from app.ui.app import run_gui
from app.ui.window_config import GuiOptions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("photo", type=Path)
    parser.add_argument("seconds", type=float)
    parser.add_argument("throttle_ms", type=float)
    parser.add_argument("stats", type=Path)
    parser.add_argument("settings", type=Path)
    parser.add_argument("task", choices=[t.value for t in Task])
    args = parser.parse_args(argv)
    options = GuiOptions(source=f"images:{args.photo}", model=args.model, threads=1, throttle_ms=args.throttle_ms,
                         settings_file=args.settings, exit_after=args.seconds, stats_file=args.stats,
                         model_options=ModelOptions(task=Task(args.task)))  # fmt: skip
    return run_gui(options)


if __name__ == "__main__":
    sys.exit(main())
