"""Fixtures: the `chatctx` server the installed package carries, started on a free port for the tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

VENV_BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[3]


def installed_binary() -> Path:
    """The `chatctx` command the wheel installed next to this Python: the tests run that one, never a
    cargo-built binary, so a wheel without its server fails here."""
    exe = VENV_BIN / ("chatctx.exe" if os.name == "nt" else "chatctx")
    assert exe.is_file(), f"{exe} is missing: install the package (pip install clients/python) into this venv"
    return exe


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def no_toolchain_env() -> dict[str, str]:
    """The environment the server runs in: no cargo or rustup on PATH, only the venv and the system."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CARGO", "RUSTUP", "CHATCTX_"))}
    env["PATH"] = os.pathsep.join([str(VENV_BIN), "/usr/bin", "/bin"])
    return env


class Server:
    def __init__(self, *args: str) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="chatctx-py-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(Path(self.dir.name) / "serve.log", "wb")  # noqa: SIM115 - closed in stop()
        store = f"sqlite://{self.dir.name}/chatctx.db"
        cmd = [str(installed_binary()), "serve", "--listen", f"127.0.0.1:{self.port}", "--store", store, *args]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=no_toolchain_env())
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chatctx serve exited: {self.logs()}")
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"chatctx serve did not become ready: {self.logs()}")

    def logs(self) -> str:
        self.log.flush()
        return (Path(self.dir.name) / "serve.log").read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        self.dir.cleanup()


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """One server with the group-bot preset, shared by the tests (each uses chats of its own)."""
    s = Server("--preset", "group-bot")
    yield s
    s.stop()
