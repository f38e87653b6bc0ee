"""The client cannot drift from the server: every operation of the server's /openapi.json has a client method
named by its operationId, taking the request's fields, and every response model has the schema's fields."""

from __future__ import annotations

import importlib.util
import inspect
import typing
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from chatctx import AsyncClient, Client, models

CLIENT_DIR = Path(__file__).resolve().parents[1]
# Not client methods: MCP clients speak to /mcp with an MCP SDK (the mcp package), not through this client;
# /console is a web page.
NOT_CLIENT_OPERATIONS = {"mcp", "console"}


@pytest.fixture(scope="module")
def doc(server: Any) -> dict[str, Any]:
    return httpx.get(server.url + "/openapi.json", timeout=5).json()


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, ops in doc["paths"].items() for m, op in ops.items()]


def parameters(cls: type, name: str) -> set[str]:
    return {p for p in inspect.signature(getattr(cls, name)).parameters if p != "self"}


# Operations whose body is a platform's payload as it came, and the method argument that carries it.
RAW_BODY = {"telegram_update": "update", "discord_event": "payload", "slack_event": "envelope", "slack_users": "answer"}


def test_every_operation_has_a_method_taking_its_fields(doc: dict[str, Any]) -> None:
    seen = set()
    for method, path, op in operations(doc):
        op_id = op["operationId"]
        seen.add(op_id)
        if op_id in NOT_CLIENT_OPERATIONS:
            continue
        for cls in (Client, AsyncClient):
            assert callable(getattr(cls, op_id, None)), f"{cls.__name__} has no method for {method.upper()} {path}"
        wanted = set()
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
        wanted |= set(body.get("properties", {}))
        wanted |= {p["name"] for p in op.get("parameters", [])}
        takes = parameters(Client, op_id)
        if op_id == "ingest":
            assert takes == {"events"}, takes
        elif op_id in RAW_BODY:
            # The platform's payload is the whole body; the other arguments are query parameters.
            assert takes == wanted | {RAW_BODY[op_id]}, (op_id, takes ^ wanted)
        else:
            assert takes == wanted, f"{op_id}: client takes {sorted(takes)}, the server reads {sorted(wanted)}"
        assert parameters(AsyncClient, op_id) == takes
    assert NOT_CLIENT_OPERATIONS <= seen, "an excluded operation disappeared: update NOT_CLIENT_OPERATIONS"


def model_for(schema: dict[str, Any], op_id: str) -> type[BaseModel] | None:
    from scripts_generate import RESPONSE_NAMES, camel  # type: ignore[import-not-found]

    if "$ref" in schema:
        return getattr(models, schema["$ref"].rsplit("/", 1)[-1])
    if schema.get("type") == "array" and "$ref" in schema.get("items", {}):
        return getattr(models, schema["items"]["$ref"].rsplit("/", 1)[-1])
    if "properties" in schema:
        return getattr(models, RESPONSE_NAMES.get(op_id, camel(op_id) + "Response"))
    return None


def test_every_response_model_has_the_schemas_fields(doc: dict[str, Any]) -> None:
    checked = 0
    for _, _, op in operations(doc):
        content = op["responses"]["200"].get("content", {}).get("application/json", {})
        model = model_for(content.get("schema", {}), op["operationId"])
        if model is None:
            continue
        schema = content["schema"]
        if "$ref" in schema or "items" in schema:
            ref = schema.get("$ref") or schema["items"]["$ref"]
            schema = doc["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        fields = {f.alias or name for name, f in model.model_fields.items()}
        assert fields == set(schema["properties"]), f"{model.__name__}: {sorted(fields ^ set(schema['properties']))}"
        checked += 1
        # And the client method says it answers that model.
        hints = typing.get_type_hints(getattr(Client, op["operationId"]))
        assert model in (hints["return"], *typing.get_args(hints["return"])), op["operationId"]
    assert checked >= 12


def test_models_py_is_what_the_generator_makes_of_this_server(doc: dict[str, Any]) -> None:
    from scripts_generate import generate  # type: ignore[import-not-found]

    committed = (Path(models.__file__)).read_text(encoding="utf-8")
    assert generate(doc) == committed, (
        "chatctx/models.py is stale: run `python clients/python/scripts/generate_models.py "
        "http://127.0.0.1:7878/openapi.json` against the current server"
    )


@pytest.fixture(autouse=True, scope="module")
def _generator_importable() -> None:
    import sys

    spec = importlib.util.spec_from_file_location("scripts_generate", CLIENT_DIR / "scripts" / "generate_models.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["scripts_generate"] = module
