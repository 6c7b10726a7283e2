"""Tables in ``docs/`` that are generated from the code, so the docs cannot drift from it: the
configuration (from the settings tables), the caller events' fields (from their JSON Schema) and
both protocols' error codes.

A generated table sits between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``.
``python -m voice_agent.dev.doc_tables`` rewrites them; a test checks that they are current.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _row(*cells: Any) -> str:
    return "| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", " ") for cell in cells) + " |"


def _settings(cls: type) -> str:
    from settings_table import table

    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for variable, _, default, doc in table(cls):
        shown = "unset" if default is None else f"`{default}`" if default != "" else "empty"
        rows.append(_row(f"`{variable}`", shown, doc))
    return "\n".join(rows)


def agent_configuration() -> str:
    from agent.config import AgentSettings

    return _settings(AgentSettings)


def tts_configuration() -> str:
    from tts_server.settings import ServerSettings

    return _settings(ServerSettings)


def caller_events() -> str:
    from caller_protocol import events

    rows = ["| event | field | type | meaning |", "|---|---|---|---|"]
    for variant in events.schema()["oneOf"]:
        kind = variant["properties"]["type"]["const"]
        for name, spec in variant["properties"].items():
            if name in ("type", "seq"):
                continue
            rows.append(_row(f"`{kind}`", f"`{name}`", _type(spec), spec.get("description", "")))
            inner_specs = spec.get("properties") or spec.get("items", {}).get("properties", {})
            for inner, inner_spec in inner_specs.items():
                path = f"{name}[].{inner}" if spec.get("type") == "array" else f"{name}.{inner}"
                rows.append(_row(f"`{kind}`", f"`{path}`", _type(inner_spec),
                                 inner_spec.get("description", "")))
    return "\n".join(rows)


def _type(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        return {"#/$defs/ms": "number (ms) or null", "#/$defs/seq": "integer"}[spec["$ref"]]
    if "enum" in spec:
        return " / ".join(f"`{value}`" for value in spec["enum"])
    kind = spec.get("type", "")
    return " or ".join(kind) if isinstance(kind, list) else kind


def caller_error_codes() -> str:
    from caller_protocol import events

    return "\n".join(["| code | meaning |", "|---|---|",
                      *(_row(f"`{code}`", meaning) for code, meaning in events.ERROR_CODES.items())])


def tts_error_codes() -> str:
    import tts_protocol

    return "\n".join(["| code | meaning |", "|---|---|",
                      *(_row(f"`{code}`", meaning) for code, meaning in tts_protocol.ERROR_CODES.items())])


TABLES: dict[str, tuple[str, Callable[[], str]]] = {
    "agent-configuration": ("configuration.md", agent_configuration),
    "tts-configuration": ("configuration.md", tts_configuration),
    "caller-events": ("caller-protocol.md", caller_events),
    "caller-error-codes": ("caller-protocol.md", caller_error_codes),
    "tts-error-codes": ("tts-protocol.md", tts_error_codes),
}


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {name} -->\n)(.*?)(<!-- end: {name} -->)", re.DOTALL)


def current(name: str) -> str | None:
    """The table as the doc holds it now, or None when the doc has no such block."""
    page, _ = TABLES[name]
    found = _block(name).search((DOCS / page).read_text(encoding="utf-8"))
    return found.group(2).removesuffix("\n") if found else None


def write() -> list[str]:
    """Rewrite every generated table; returns the names of those that changed."""
    changed = []
    for name, (page, make) in TABLES.items():
        path = DOCS / page
        text = path.read_text(encoding="utf-8")
        made = make()
        updated = _block(name).sub(lambda match, made=made: match.group(1) + made + "\n" + match.group(3), text)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            changed.append(name)
    return changed


if __name__ == "__main__":
    print("rewrote: " + (", ".join(write()) or "nothing (all current)"))
    sys.exit(0)
