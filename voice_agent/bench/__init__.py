"""Benchmarks: real runs that print figures and write machine-readable results. Not tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_results(out_dir: Path, suite: str, results: dict[str, Any], report: str) -> None:
    """Write ``SUITE.json`` and ``SUITE.md`` to ``out_dir`` and print the Markdown report."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{suite}.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / f"{suite}.md").write_text(report + "\n")
    print(report)
