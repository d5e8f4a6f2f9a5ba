"""Every JSON output the suite produces is checked against the schema that ships in the package
(app/schemas, docs/json.md): `run_cli` checks what a command printed and the files its options named,
and tests/conftest.py's autouse fixture checks each versioned JSON file a test left in its tmp_path."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource

from app.recording.ab import COMPARISON_FORMAT
from app.recording.writer import sidecar_path
from app.schemas import SCHEMA_VERSION, OutputKind
from app.tasks.bench_compare import side_recording

# What `--json` prints on stdout, per command.
STDOUT_KINDS = {
    "classify": OutputKind.CLASSIFY,
    "predict": OutputKind.PREDICT,
    "inspect": OutputKind.INSPECT,
    "delegates": OutputKind.DELEGATES,
    "profile": OutputKind.PROFILE,
    "compare": OutputKind.COMPARE,
    "numerics": OutputKind.NUMERICS,
}


RECORDING_FORMATS = ("delegate-scope-session", COMPARISON_FORMAT)


@cache
def _registry() -> Registry:
    folder = resources.files("app.schemas")
    docs = [json.loads(f.read_text("utf-8")) for f in folder.iterdir() if f.name.endswith(".schema.json")]
    return Registry().with_resources((d["$id"], Resource.from_contents(d)) for d in docs)


@cache
def _validator(kind: OutputKind) -> Draft202012Validator:
    from app.schemas import schema

    document = schema(kind)
    Draft202012Validator.check_schema(document)  # a schema that is not valid draft 2020-12 is a bug here
    return Draft202012Validator(document, registry=_registry())


def validate(document: object, kind: OutputKind, where: str = "") -> None:
    """AssertionError naming the output, the place in it and what is wrong, when it breaks its schema."""
    errors = sorted(_validator(kind).iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        shown = "; ".join(_said(e) for e in errors[:5])
        raise AssertionError(f"{where or 'output'} breaks {kind.schema_file}: {shown}")


def _said(error: ValidationError) -> str:
    path = "/".join(map(str, error.absolute_path)) or "(top)"
    return f"at {path}: {error.message[:300]}"


def kind_of_file(path: Path, document: object) -> OutputKind | None:
    """Which output a JSON file is: by its name (recording and profile sidecars), else by its keys;
    None for a file that carries no schema_version (a test's own data, a Model Explorer export)."""
    if not isinstance(document, dict) or "schema_version" not in document:
        return None
    if path.name.endswith(".meta.json") or document.get("format") in RECORDING_FORMATS:
        return OutputKind.RECORDING  # by name, or a sidecar under the NAME.json older recordings used
    if path.name.endswith(".profile.json"):
        return OutputKind.PROFILE_SIDECAR
    keys = set(document)
    if document.get("mode") == "compare":
        return OutputKind.BENCH_COMPARE
    for kind, marks in (
        (OutputKind.NUMERICS, {"rows", "end_to_end", "first_breaking"}),
        (OutputKind.SWEEP, {"rows", "frame_size"}),
        (OutputKind.BENCH, {"metrics", "events", "config"}),
        (OutputKind.WINDOW_STATS, {"frames_displayed", "session"}),
        (OutputKind.INSPECT, {"coverage", "coreml_pieces"}),
        (OutputKind.PROFILE, {"profile", "model"}),
        (OutputKind.PREDICT, {"model", "delegate", "inputs", "results"}),
        (OutputKind.CLASSIFY, {"model", "delegate", "results"}),
        (OutputKind.DELEGATES, {"delegates"}),
        (OutputKind.COMPARE, {"gates"}),
        (OutputKind.COMPARE, {"bench_against_sweep"}),
    ):
        if marks <= keys:
            return kind
    raise AssertionError(f"{path}: a versioned JSON output of no known kind (keys {sorted(keys)}): give it a schema")


def validate_file(path: Path, kind: OutputKind | None = None) -> OutputKind | None:
    """Check one JSON file; the kind is found from the file when not given. None: not one of ours."""
    document = json.loads(path.read_text(encoding="utf-8"))
    kind = kind or kind_of_file(path, document)
    if kind is not None:
        validate(document, kind, str(path))
    return kind


def versioned_files(folder: Path) -> list[Path]:
    """The JSON files under a folder that parse and carry schema_version (what the app writes now)."""
    found = []
    for path in sorted(folder.rglob("*.json")):
        try:
            # Regular files only (a fuzz test leaves a FIFO named Manifest.json), and none of a fuzzer's giants.
            if not path.is_file() or path.is_symlink() or path.stat().st_size > 64 * 2**20:
                continue
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue  # a damaged or foreign file is the test's business
        if isinstance(document, dict) and document.get("schema_version") == SCHEMA_VERSION:
            found.append(path)
    return found


def check_cli_outputs(args: Sequence[str], returncode: int, stdout: str, cwd: Path) -> None:
    """What one command run produced: its --json stdout, the files its --json/--stats options named
    and the sidecars of the recordings its --csv/--record options named."""
    command = args[0] if args else "gui"
    if command in STDOUT_KINDS and "--json" in args and stdout.strip():
        try:
            document = json.loads(stdout)
        except ValueError:
            if returncode in (0, 7):  # a result was printed: it must be JSON
                raise AssertionError(f"{command} --json printed something that is not JSON") from None
            return
        validate(document, STDOUT_KINDS[command], f"{command} --json")

    def named(option: str) -> Path | None:
        if option not in args or args.index(option) + 1 >= len(args):
            return None
        path = Path(args[args.index(option) + 1])
        return path if path.is_absolute() else cwd / path

    kinds = {"bench": OutputKind.BENCH, "sweep": OutputKind.SWEEP}
    file_kind = kinds.get(command)
    if command == "bench" and ({"--compare-with", "--compare-model"} & set(args)):
        file_kind = OutputKind.BENCH_COMPARE
    out = named("--json")
    if file_kind is not None and out is not None and out.is_file():
        validate_file(out, file_kind)
    stats = named("--stats")
    if command == "gui" and stats is not None and stats.is_file():
        validate_file(stats, OutputKind.WINDOW_STATS)
    for option in ("--csv", "--record"):
        recording = named(option)
        if recording is None:
            continue
        for path in (recording, *(side_recording(recording, side) for side in ("a", "b"))):  # A/B: each side's
            if sidecar_path(path).is_file():
                validate_file(sidecar_path(path), OutputKind.RECORDING)
