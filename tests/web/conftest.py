"""Fixtures of the browser tests: a real uvicorn server in a subprocess, Debian's chromium.

Screenshots go OUTSIDE the repository: to $CALIGO_WEB_ARTIFACTS when set, else to a pytest
temporary directory; the path is printed in the terminal summary.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caligo.cli.cmd_web import serve_argv

_ARTIFACTS: list[Path] = []
_STARTUP_S = 60.0


class Server:
    """`caligo web serve` in a subprocess on a free loopback port (or a given one)."""

    def __init__(
        self,
        db: Path,
        port: int = 0,
        seed: int = 1,
        agent: str = "random",
        first_move_seconds: float | None = None,
        options: tuple[str, ...] = (),
        nofile: int | None = None,
    ) -> None:
        """`options`: more `caligo web serve` options; `nofile`: the server's descriptor
        limit (RLIMIT_NOFILE, set in the child before it starts)."""
        self.db, self.seed, self.agent = db, seed, agent
        self.first_move_seconds = first_move_seconds
        self.options, self.nofile = options, nofile
        self.port = port
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.start()

    def start(self) -> None:
        cmd = serve_argv(
            self.db, self.port, self.agent, self.seed, first_move_seconds=self.first_move_seconds,
            options=self.options,
        )
        nofile = self.nofile

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
            preexec_fn=limit,
        )
        deadline = time.monotonic() + _STARTUP_S
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server exited: {self.proc.wait()}")
            match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            if match:
                self.port = int(match.group(1))
                self.url = match.group(0)
                break
        else:
            raise RuntimeError("server did not print its URL")
        self.output: list[str] = []
        threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True).start()
        self._wait_ready()

    def _drain(self, stream: Any) -> None:
        """Keep reading the server's output (a full pipe would stop it); keep its last lines."""
        try:
            for line in stream:
                self.output.append(line)
                del self.output[:-200]
        except (OSError, ValueError):  # closed by `stop`
            pass

    def _wait_ready(self) -> None:
        import httpx2

        deadline = time.monotonic() + _STARTUP_S
        while time.monotonic() < deadline:
            try:
                if httpx2.get(self.url + "api/info", timeout=2.0).status_code == 200:
                    return
            except httpx2.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("server does not answer")

    def stop(self, kill: bool = False) -> None:
        """Stop the server (SIGKILL: no chance to save anything at exit)."""
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "games.sqlite")
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("Debian's chromium is not installed (apt-get install chromium); see .ci/run")
    return path


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, headless=True, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("CALIGO_WEB_ARTIFACTS")
    path = Path(env) if env else tmp_path_factory.mktemp("web-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    _ARTIFACTS.append(path)
    return path


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for path in _ARTIFACTS:
        terminalreporter.write_line(f"web screenshots: {path}")
