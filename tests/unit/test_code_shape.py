"""The source stays in the shape a newcomer can read: no module over 400 lines, no function over 60,
and nothing outside the tests imports a test module."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _source_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    files = [ROOT / name for name in listed if not name.startswith("tests/") and (ROOT / name).exists()]
    assert len(files) > 50, "the source tree was not found"
    return files


def test_no_module_or_function_outside_the_tests_is_too_long_to_read():
    too_long = []
    for path in _source_files():
        source = path.read_text()
        if len(source.splitlines()) > MAX_MODULE_LINES:
            too_long.append(f"{path.relative_to(ROOT)}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines")
    assert not too_long, "\n".join(too_long)


def test_nothing_outside_the_tests_imports_a_test_module():
    importers = []
    for path in _source_files():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            importers += [f"{path.relative_to(ROOT)} imports {name}" for name in names if name.split(".")[0] == "tests"]
    assert not importers, "\n".join(importers)
