"""Take a profile of one model on one delegate, falling back to the CPU the way every command does."""

from __future__ import annotations

from dataclasses import replace

from app.backends import open_session
from app.backends.options import BackendOptions, Delegate
from app.errors import BackendUnavailable
from app.model.spec import ModelSpec
from app.profile.cpu import profile_cpu
from app.profile.types import Profile

DEFAULT_RUNS = 20


def profile_model(
    spec: ModelSpec, requested: str, options: BackendOptions, runs: int = DEFAULT_RUNS, fallback: bool = True
) -> Profile:
    """A profile of `spec` on `requested`; on a delegate that cannot run here, the CPU's, with the reason
    (BackendUnavailable instead when `fallback` is False)."""
    if runs < 1:
        raise ValueError("runs must be at least 1")
    threads = options.cpu_threads
    if requested == Delegate.CPU:
        return profile_cpu(spec, threads, runs)
    session = open_session(spec, requested, options, fallback=fallback)
    reason = session.report.fallback_reason
    try:
        if session.report.used == Delegate.GPU:
            from app.profile.gpu import profile_gpu

            return profile_gpu(spec, session, threads, runs)
        if session.report.used == Delegate.COREML:
            from app.profile.coreml_plan import profile_coreml

            try:
                return profile_coreml(spec, session, options.compute_units, runs)
            except BackendUnavailable as exc:
                if not fallback:
                    raise
                reason = str(exc)
    finally:
        session.close()
    return replace(profile_cpu(spec, threads, runs), requested=requested, fallback_reason=reason)
