"""`delegate-scope profile`: which ops of a model cost what on a delegate (app/profile)."""

from __future__ import annotations

import argparse
import json
import sys

from app.cli.options import backend_options
from app.cli.output import warn
from app.errors import UsageError
from app.model.spec import load_model_spec


def cmd_profile(args: argparse.Namespace) -> int:
    from app.profile.model_explorer import node_data
    from app.profile.run import profile_model
    from app.profile.text import render

    spec = load_model_spec(args.model, labels_file=args.labels)
    for warning in spec.warnings:
        warn(warning)
    export = args.model_explorer
    if export is not None and (export.is_dir() or not export.parent.is_dir()):
        raise UsageError(f"--model-explorer: cannot write {export} (not a file in an existing folder)")
    profile = profile_model(spec, args.delegate, backend_options(args), runs=args.runs, fallback=not args.no_fallback)
    if profile.fallback_reason:
        warn(f"fell back to CPU: {profile.fallback_reason}")
    if export is not None:
        exported = node_data(profile)
        try:
            export.write_text(json.dumps(exported.data, indent=2) + "\n")
        except OSError as exc:
            raise UsageError(f"--model-explorer: cannot write {export} ({exc.strerror})") from None
        if exported.skipped_rows:
            warn(
                f"{exported.skipped_rows} row(s) ({exported.skipped_ms:.3f} ms) stand for no single TFLite node "
                "(a GPU partition, an operator XNNPACK added) and are not in the Model Explorer data"
            )
    if args.json:
        json.dump({"model": spec.as_json(), "profile": profile.to_dict()}, sys.stdout, indent=2)
        print()
        return 0
    for line in render(profile, top=args.top):
        print(line)
    return 0
