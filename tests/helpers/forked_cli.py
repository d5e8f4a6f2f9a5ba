"""The command line in processes forked from one that has imported the app and every command's module.

A fresh `python -m app` spends most of a refusal's 0.4-0.5 s of CPU importing (numpy, LiteRT, OpenCV, the
app); a table of a hundred refusals paid that a hundred times. Here one server process imports them once,
as `app.cli.main.main` would (OpenBLAS held to one thread first), and forks a child per command line: the
child takes the caller's environment, folder, argv and a stdin of /dev/null, writes stdout and stderr to
files, runs `app` as `python -m app` does, and ends as the interpreter would (non-daemon threads joined,
atexit handlers run, streams flushed), so its exit code, stdout and stderr are read from outside. A run
that needs the first import itself (an environment variable read only at import) is not for this runner:
tests/helpers/cli.py's `run_cli` starts a fresh interpreter, and tests/test_exit_codes.py checks that
both give the same answers."""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.helpers.cli import CliRun
from tests.helpers.paths import ROOT
from tests.helpers.schemas import check_cli_outputs


class ForkedCli:
    """A server process that forks one child per command line (close() ends it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one request at a time on the server's pipe
        self._server = self._start()

    @staticmethod
    def _start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", "from tests.helpers.forked_cli import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )

    def run(self, *args: str | Path, timeout: float = 120, env: dict[str, str] | None = None) -> CliRun:
        """As tests.helpers.cli.run_cli: `python -m app ...` in ROOT with the environment plus `env`."""
        with self._lock:
            return self._run(args, timeout, env)

    def try_run(self, *args: str | Path, timeout: float = 120, env: dict[str, str] | None = None) -> CliRun | None:
        """As run(), or None at once while another thread's run holds the server."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._run(args, timeout, env)
        finally:
            self._lock.release()

    def _run(self, args: tuple[str | Path, ...], timeout: float, env: dict[str, str] | None) -> CliRun:
        if self._server.poll() is not None:  # the server ended: a new one, rather than every later run failing
            self._server = self._start()
        assert self._server.stdin is not None and self._server.stdout is not None
        argv = [str(a) for a in args]
        request = {"argv": argv, "env": {**os.environ, **(env or {})}, "cwd": str(ROOT), "timeout": timeout}
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        line = self._server.stdout.readline()
        assert line, f"the forking server ended (exit {self._server.poll()})"
        reply = json.loads(line)
        if reply.get("timed_out"):
            raise subprocess.TimeoutExpired(["python", "-m", "app", *argv], timeout)
        check_cli_outputs(argv, reply["returncode"], reply["stdout"], ROOT)
        return CliRun(reply["returncode"], reply["stdout"], reply["stderr"])

    def close(self) -> None:
        if self._server.stdin is not None:
            self._server.stdin.close()
        try:
            self._server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()


_shared: ForkedCli | None = None
_shared_lock = threading.Lock()


def shared() -> ForkedCli:
    """This process's one server, started on first use and ended at exit."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ForkedCli()
            atexit.register(_shared.close)
        return _shared


def serve() -> None:
    """Import the app as a command's start would, then answer one JSON line per request on stdin."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as app.cli.main.main sets it before numpy's import
    from app.cli.main import commands

    commands()  # every command's module, and what each imports
    replies = sys.stdout
    for line in sys.stdin:
        replies.write(json.dumps(_forked(json.loads(line))) + "\n")
        replies.flush()


def _forked(request: dict) -> dict:
    # Plain files, not a TemporaryDirectory: its cleanup is an atexit hook, which the child runs as it ends.
    out, err = (Path(tempfile.mkstemp(prefix=f"forked-cli-{name}-")[1]) for name in ("stdout", "stderr"))
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                code = _child(request, out, err)
            finally:
                os._exit(code)
        deadline = time.monotonic() + request["timeout"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                return {"timed_out": True}
            time.sleep(0.005)
        return {
            "returncode": os.waitstatus_to_exitcode(status),
            "stdout": out.read_text(encoding="utf-8", errors="replace"),
            "stderr": err.read_text(encoding="utf-8", errors="replace"),
        }
    finally:
        out.unlink(missing_ok=True)
        err.unlink(missing_ok=True)


def _child(request: dict, out: Path, err: Path) -> int:
    import atexit
    import runpy
    import threading

    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = [str(ROOT / "app" / "__main__.py"), *request["argv"]]
    try:
        runpy.run_module("app", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("text"): printed, exit 1, as the interpreter does
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    # What the interpreter does as it ends: wait for non-daemon threads, run atexit handlers, flush.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        code = 120
    return code
