"""What a type checker sees: `await` on every AsyncClient call, plain values from Client, the models' types.
The stub (_client.pyi) is generated from the source; mypy runs on the installed package."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import chatctx

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

GOOD = '''
import chatctx
from chatctx import models


async def answer() -> str:
    async with chatctx.AsyncClient("http://127.0.0.1:7878") as c:
        ctx: models.HistoryContext = await c.get_chat_history_context(chat_id=-100500, current_message_id=502)
        res = await c.resolve_reference_target(chat_id="-100500", current_message_id=502, sender_user_id=43)
        ready: bool = await c.ready()
        scoped: chatctx.AsyncClient = await c.scoped(-100500)
        await scoped.aclose()
        return f"{ready} {res.status} {len(ctx.items)}"


def sync() -> int:
    with chatctx.Client() as c:
        return len(c.history(-100500).items) + c.get_scenario(chat_id=1).revision
'''

BAD = '''
import chatctx


async def forgot_await() -> int:
    async with chatctx.AsyncClient() as c:
        return len(c.get_chat_history_context(chat_id=1).items)
'''


def mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    sample = tmp_path / "sample.py"
    sample.write_text(source)
    cmd = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(sample)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)


def test_mypy_accepts_awaited_async_calls_and_plain_sync_ones(tmp_path: Path) -> None:
    run = mypy(tmp_path, GOOD)
    assert run.returncode == 0, run.stdout + run.stderr


def test_mypy_catches_a_missing_await(tmp_path: Path) -> None:
    run = mypy(tmp_path, BAD)
    assert run.returncode == 1 and "items" in run.stdout, run.stdout + run.stderr


def test_the_package_itself_passes_mypy_strict(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path), "-p", "chatctx"]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_stub_is_what_the_generator_makes_of_the_source() -> None:
    spec = importlib.util.spec_from_file_location("generate_stubs", SCRIPTS / "generate_stubs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (Path(chatctx.__file__).parent / "_client.pyi").read_text(encoding="utf-8")
    assert module.generate() == committed, "run `python clients/python/scripts/generate_stubs.py` and commit"
