"""A network camera for the source tests: an MJPEG stream over TCP (the format IP cameras use), sent from
the test's own process, that can stall, go away and come back."""

from __future__ import annotations

import socket
import threading

import cv2

from tests.helpers.paths import PHOTOS


class MjpegSender:
    """A network camera: JPEG frames of a real photo, back to back over TCP, at `fps`."""

    def __init__(self, size: tuple[int, int], fps: float = 30.0, port: int = 0, stall_after: int | None = None) -> None:
        photo = cv2.imread(str(PHOTOS / "grace_hopper.jpg"))
        self.jpeg = cv2.imencode(".jpg", cv2.resize(photo, size))[1].tobytes()
        self.fps, self.stall_after = fps, stall_after
        self.server = socket.create_server(("127.0.0.1", port))
        self.port = self.server.getsockname()[1]
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        self.server.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                while not self._stop.is_set():
                    if self.stall_after is not None and self.sent >= self.stall_after:
                        self._stop.wait(0.05)  # connected, silent: a hung camera
                        continue
                    try:
                        conn.sendall(self.jpeg)
                    except OSError:
                        break
                    self.sent += 1
                    self._stop.wait(1 / self.fps)

    def stop(self) -> None:
        """The camera goes away: the connection drops and new ones are refused."""
        self._stop.set()
        self.server.close()
        self._thread.join(5)
