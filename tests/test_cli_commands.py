"""The command line as a package: every module of app/cli/commands/ is one command that registers
its parser, each command's --help runs (in processes forked from one that imported the app:
tests/helpers/forked_cli.py; the top-level --help in a fresh interpreter, as a user runs it), and the `gui`
options reach GuiOptions by field name."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import pkgutil
from pathlib import Path

import pytest

import app.cli.commands
from app.cli.main import build_parser, commands
from tests.helpers.cli import run_cli
from tests.helpers.forked_cli import ForkedCli

MODULES = sorted(m.name for m in pkgutil.iter_modules(app.cli.commands.__path__))


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_command_module_is_registered_under_its_own_name():
    assert MODULES, "no command modules found"
    for name in MODULES:
        module = importlib.import_module(f"app.cli.commands.{name}")
        assert module.COMMAND.name == name, (name, module.COMMAND.name)
    assert sorted(c.name for c in commands()) == MODULES  # each once
    parsers = _subparsers(build_parser())
    assert sorted(parsers) == MODULES
    for command in commands():  # each parser dispatches to its own module's run
        assert parsers[command.name].get_default("handler") is command.run


@pytest.mark.parametrize("name", MODULES)
def test_help_of_every_command_exits_0(name: str, forked_cli: ForkedCli):
    run = forked_cli.run(name, "--help")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"usage: delegate-scope {name} "), run.stdout[:200]
    assert "--debug" in run.stdout and run.stderr == ""


def test_top_level_help_lists_every_command_in_order():
    run = run_cli("--help", fresh=True)
    assert run.returncode == 0, run.stderr
    listed = [line.split()[0] for line in run.stdout.split("  COMMAND\n", 1)[1].splitlines()
              if line.startswith("    ") and not line.startswith("     ")]  # fmt: skip
    assert listed == [c.name for c in commands()], run.stdout


def test_gui_options_are_guioptions_fields_and_reach_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    import app.ui.app
    from app.ui.window_config import GuiOptions

    gui = _subparsers(build_parser())["gui"]
    dests = {a.dest for a in gui._actions if a.dest not in ("help", "debug")}
    fields = {f.name for f in dataclasses.fields(GuiOptions)}
    # --task, --input-shape and --inputs reach GuiOptions as one ModelOptions (`model_options`), when it has one.
    reading = {"task", "input_shape", "inputs"}
    assert reading <= dests
    assert dests - reading == fields - {"dialogs", "model_options"}  # a new option needs a field, and so on

    received: list[GuiOptions] = []
    monkeypatch.setattr(app.ui.app, "run_gui", lambda options: received.append(options) or 0)
    argv = ["gui", "--source", "synthetic", "--model", "efficientnet_lite0_int8", "--delegate", "cpu",
            "--threads", "3", "--throttle-ms", "2.5", "--settings", str(tmp_path / "s.ini"),
            "--record", str(tmp_path / "r.csv"), "--exit-after", "4", "--screenshot", str(tmp_path / "w.png"),
            "--stats", str(tmp_path / "stats.json"), "--save-settings"]  # fmt: skip
    args = build_parser().parse_args(argv)
    assert args.handler(args) == 0
    assert received == [
        GuiOptions(
            source="synthetic",
            model="efficientnet_lite0_int8",
            delegate="cpu",
            threads=3,
            throttle_ms=2.5,
            settings_file=tmp_path / "s.ini",
            record=tmp_path / "r.csv",
            exit_after=4.0,
            screenshot=tmp_path / "w.png",
            stats_file=tmp_path / "stats.json",
            save_settings=True,
            dialogs=True,
        )
    ]
    args = build_parser().parse_args(["gui"])
    assert args.handler(args) == 0 and received[-1] == GuiOptions()  # nothing given: every default
    if "model_options" in fields:
        from app.model.spec import ModelOptions
        from app.model.task import Task

        argv = ["gui", "--task", "raw", "--input-shape", "x=1x8x8x3", "--inputs", str(tmp_path / "i.npz")]
        args = build_parser().parse_args(argv)
        assert args.handler(args) == 0
        assert received[-1].model_options == ModelOptions(Task.RAW, (("x", (1, 8, 8, 3)),), tmp_path / "i.npz")


def test_the_command_line_starts_numpys_blas_on_one_thread_unless_told(monkeypatch: pytest.MonkeyPatch):
    """OpenBLAS's pool spins a thread per core after start-up (0.2-0.25 s of CPU per process here); the
    variable is read when numpy loads, so main sets it before any command imports numpy, and the children
    it starts inherit it. A user's own value is kept."""
    from app.cli.main import main

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with pytest.raises(SystemExit):
        main(["--version"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    with pytest.raises(SystemExit):
        main(["--version"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"
