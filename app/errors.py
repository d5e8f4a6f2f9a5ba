"""Typed errors that the CLI maps to exit codes and the UI to status lines.

Every message is written for the user: one plain line that says what was wrong
with which file, never a traceback.
"""

from __future__ import annotations


class DelegateScopeError(Exception):
    """Base class; `exit_code` is what the CLI returns for it."""

    exit_code = 1


class UsageError(DelegateScopeError):
    exit_code = 2


class ModelError(DelegateScopeError):
    """Model missing, empty, truncated, not TFLite, not a classifier, refused by the runtime."""

    exit_code = 3


class RunFailed(ModelError):
    """An open session failed to run (a lost GPU device, a dead accelerator process): on an
    accelerator the caller goes on on the CPU; on the CPU it is the model's problem (exit 3)."""


class ImageError(DelegateScopeError):
    """Image missing or unreadable."""

    exit_code = 4


class BackendUnavailable(DelegateScopeError):
    """The requested backend cannot run on this machine (the reason says why)."""

    exit_code = 5


class SourceError(DelegateScopeError):
    """A frame source that cannot open or stops delivering (camera gone, video unreadable)."""

    exit_code = 6


class SourceSpecError(SourceError):
    """A source string that names no source (`bogus:thing`, `camera:x`): the user's typing, a usage
    error (exit 2), though the window and the pipeline handle it as any source problem."""

    exit_code = 2


class SourceLost(SourceError):
    """An open source stopped delivering frames; the pipeline retries with back-off."""


class CheckFailed(DelegateScopeError):
    """A gate the user asked for did not hold (`inspect --require`, `bench`/`sweep --budget`):
    the run itself worked, so this is neither a usage nor a model error; CI jobs test for 7."""

    exit_code = 7


class InternalError(DelegateScopeError):
    """A bug: an exception the app did not expect, kept with its type name for the report."""

    exit_code = 1


_BY_EXIT_CODE: dict[int, type[DelegateScopeError]] = {
    cls.exit_code: cls
    for cls in (UsageError, ModelError, ImageError, BackendUnavailable, SourceError, CheckFailed, InternalError)
}


def error_for(exit_code: int, message: str) -> DelegateScopeError:
    """The typed error for an exit code carried by a status (a pipeline thread's final error)."""
    return _BY_EXIT_CODE.get(exit_code, InternalError)(message)
