"""A pipeline's run log: an ERROR is the run's last word (app/pipeline/run_log.py)."""

from __future__ import annotations

from app.pipeline.run_log import RunLog
from app.pipeline.types import State, Status


def test_a_status_reported_after_an_error_does_not_hide_it():
    """The race bench hung on: the inference thread fails to open the model (ERROR, exit 3), then the
    capture thread, whose source opened meanwhile, reports RUNNING; bench read RUNNING and waited."""
    log = RunLog(Status(State.STARTING, "starting"))
    log.fail("the model needs the custom op 'X' (node 1)", 3)
    log.set_status(Status(State.RUNNING, "synthetic 640x480"))
    log.set_status(Status(State.RECONNECTING, "reconnecting"))
    status = log.status()
    assert status.state == State.ERROR and status.exit_code == 3 and "custom op" in status.message
    error = status.error()
    assert error is not None and error.exit_code == 3
    log.set_status(Status(State.STOPPED, "stopped"))  # the user's stop() still says the run is over
    assert log.status().state == State.STOPPED
