"""Synthesizing the CDK app in tests: offline, on the machine's Node.js, into a temporary directory."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

NODE = shutil.which("node")
if NODE is None and not os.environ.get("CI"):
    pytest.skip("the CDK app runs on Node.js; install nodejs (CI has it)", allow_module_level=True)


def synthesize(outdir: Path, **context) -> dict[str, dict]:
    """The app's templates by stack name, synthesized with this context (cdk-nag passing)."""
    assert NODE, "CI needs Node.js for the CDK app: install Debian's nodejs package"
    from infra.app import synthesize as synth

    assembly = synth(outdir, context)
    return {stack.stack_name: json.loads(Path(outdir, stack.template_file).read_text()) for stack in assembly.stacks}


def resources(template: dict, kind: str) -> dict[str, dict]:
    return {name: body for name, body in template["Resources"].items() if body["Type"] == kind}
