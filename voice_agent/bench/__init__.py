"""Benchmarks: real runs that print figures and write machine-readable results. Not tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_results(out_dir: Path, suite: str, results: dict[str, Any], report: str,
                  plot: Callable[[dict[str, Any], Path], Path] | None = None) -> None:
    """Write ``SUITE.json``, ``SUITE.md`` and (with ``plot``) ``SUITE.png`` to ``out_dir``, and print
    the Markdown report."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{suite}.json").write_text(json.dumps(results, indent=2) + "\n")
    if plot is not None:
        image = plot(results, out_dir / f"{suite}.png")
        report += f"\n\n![{suite}]({image.name})"
    (out_dir / f"{suite}.md").write_text(report + "\n")
    print(report)
