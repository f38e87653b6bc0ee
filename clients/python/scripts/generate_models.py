"""Writes python/chatctx/models.py from the server's OpenAPI document.

    python scripts/generate_models.py http://127.0.0.1:7878/openapi.json   # or a saved openapi.json

Every schema of `components/schemas` becomes a pydantic model (objects) or a type alias (enums, unions), and
each operation's inline response object becomes a model named after the operation. The output is
deterministic, so tests/test_openapi.py regenerates it from a running server and compares: a server change
that the client does not follow fails there.
"""

from __future__ import annotations

import json
import keyword
import sys
import urllib.request
from typing import Any

HEADER = '''"""Response models, generated from chatctx's /openapi.json by scripts/generate_models.py. Do not edit.

Every model keeps fields it does not know (a newer server's additions) and converts to plain data with
`.model_dump()` (`.model_dump(mode="json")` for JSON-ready values).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    """The base of every response model."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
'''

# Inline response objects of these operations get these names; any other gets `<OperationId>Response`.
RESPONSE_NAMES = {"create_scope": "Scope", "delete_chat": "Deleted", "revoke_scope": "Revoked"}


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def is_model(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" and "properties" in schema


def py_type(schema: dict[str, Any]) -> tuple[str, bool]:
    """The annotation for `schema`, and whether it admits null."""
    if "$ref" in schema:
        return ref_name(schema["$ref"]), False
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts = [s for s in schema[key] if s.get("type") != "null"]
            nullable = len(parts) < len(schema[key])
            if all("const" in s for s in parts):
                return "str", nullable
            names = [py_type(s)[0] for s in parts]
            return (names[0] if len(names) == 1 else f"Union[{', '.join(names)}]"), nullable
    kinds = schema.get("type", "object")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    nullable = "null" in kinds
    kinds = [k for k in kinds if k != "null"]
    names = []
    for k in kinds:
        if k == "string":
            names.append("datetime" if schema.get("format") == "date-time" else "str")
        elif k == "integer":
            names.append("int")
        elif k == "number":
            names.append("float")
        elif k == "boolean":
            names.append("bool")
        elif k == "array":
            names.append(f"list[{py_type(schema.get('items', {}))[0]}]")
        else:
            names.append("dict[str, Any]")
    return (names[0] if len(names) == 1 else f"Union[{', '.join(names)}]"), nullable


def doc_line(text: str) -> str:
    return " ".join(text.split()).replace('"""', "'''").replace("\\", "\\\\")


def model(name: str, schema: dict[str, Any]) -> str:
    out = [f"class {name}(Model):", f'    """{doc_line(schema.get("description", name))}"""', ""]
    required = set(schema.get("required", []))
    for field in sorted(schema["properties"]):
        prop = schema["properties"][field]
        annotation, nullable = py_type(prop)
        attr = field + "_" if keyword.iskeyword(field) else field
        alias = f'alias="{field}", ' if attr != field else ""
        desc = doc_line(prop.get("description", ""))
        if field in required and not nullable:
            default = f"Field({alias}description={json.dumps(desc, ensure_ascii=False)})" if desc or alias else None
        else:
            annotation = f"Optional[{annotation}]"
            default = f"Field(None, {alias}description={json.dumps(desc, ensure_ascii=False)})"
        out.append(f"    {attr}: {annotation}" + (f" = {default}" if default else ""))
    return "\n".join(out)


def generate(doc: dict[str, Any]) -> str:
    schemas = dict(doc["components"]["schemas"])
    for path, ops in sorted(doc["paths"].items()):
        for op in ops.values():
            ok = op.get("responses", {}).get("200", {}).get("content", {}).get("application/json", {})
            schema = ok.get("schema", {})
            if is_model(schema):
                op_id = op["operationId"]
                described = {"description": f"`{op_id}` response.", **schema}
                schemas[RESPONSE_NAMES.get(op_id, camel(op_id) + "Response")] = described
    model_names = {name for name, schema in schemas.items() if is_model(schema)}
    models, plain, of_models = [], [], []
    for name in sorted(schemas):
        schema = schemas[name]
        if name in model_names:
            models.append(model(name, schema))
            continue
        annotation = py_type(schema)[0]
        alias = f"{name} = {annotation}\n\"\"\"{doc_line(schema.get('description', name))}\"\"\""
        # An alias naming a model is evaluated at import, so it follows the models; the others precede them.
        names = set(annotation.replace("[", " ").replace("]", " ").replace(",", " ").split())
        (of_models if names & model_names else plain).append(alias)
    body = "\n\n".join(plain) + "\n\n\n" + "\n\n\n".join(models) + "\n\n\n" + "\n\n".join(of_models)
    rebuild = "\n".join(f"{name}.model_rebuild()" for name in sorted(model_names))
    return HEADER + "\n\n" + body + "\n\n" + rebuild + "\n"


def read(source: str) -> dict[str, Any]:
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source, timeout=10) as r:
            return json.load(r)
    with open(source, encoding="utf-8") as f:
        return json.load(f)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    target = __file__.rsplit("/scripts/", 1)[0] + "/python/chatctx/models.py"
    with open(target, "w", encoding="utf-8") as f:
        f.write(generate(read(sys.argv[1])))
    print(f"wrote {target}")
