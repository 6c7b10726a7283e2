"""The local model's llama.cpp is built for a stated portable baseline, never for the building CPU.

A library built with native detection on a CPU that advertises AMX or AVX-512 runs those
instructions, and faults where the operating system does not grant them to the process (seen:
``ldtilecfg`` in libggml-cpu.so, a general protection fault on the first matrix multiply). The
checks read the installed library itself: the features it reports, and its machine code."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from agent.llm.local import build_features

pytestmark = pytest.mark.skipif(os.environ.get("VOICE_AGENT_LLAMA_NATIVE") == "1",
                                reason="a native llama.cpp build was asked for (VOICE_AGENT_LLAMA_NATIVE=1)")

X86_BASELINE = {"AVX", "AVX2", "FMA", "F16C"}
"""What the default x86-64 build is for: every x86-64 server CPU of the last decade has these."""
NATIVE_ONLY = ("AVX512", "AVX_VNNI", "AMX")
"""Feature names (prefixes) that only a native build or an explicit flag turns on."""
AMX_INSTRUCTIONS = ("ldtilecfg", "sttilecfg", "tileloadd", "tilestored", "tdpb", "tilezero", "tilerelease")


def reported_features() -> set[str]:
    """The CPU features llama.cpp says it was compiled with."""
    features = set()
    for part in build_features().replace("\n", "|").split("|"):
        name, _, value = part.rpartition("=")
        name = name.split(":")[-1].strip()
        if name and value.strip() == "1":
            features.add(name)
    return features


def cpu_library() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llama_cpp")
    assert spec is not None and spec.origin
    found = sorted(Path(spec.origin).parent.glob("lib/libggml-cpu*.so*"))
    assert found, "llama_cpp ships its CPU backend as lib/libggml-cpu.so"
    return found[0]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the x86-64 baseline")
def test_the_build_has_the_x86_64_baseline_and_no_native_only_features():
    features = reported_features()
    assert X86_BASELINE <= features, f"the build lacks part of the baseline: {sorted(features)}"
    native = sorted(name for name in features if name.startswith(NATIVE_ONLY))
    assert native == [], f"built with features the baseline does not include: {native}"


@pytest.mark.skipif(platform.machine() != "aarch64", reason="the arm64 baseline")
def test_the_arm64_build_is_generic():
    features = reported_features()
    assert not any(name.startswith(("SVE", "SME")) for name in features), sorted(features)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 machine code")
def test_the_cpu_backend_contains_no_amx_or_avx512_instruction():
    """What would fault on a CPU that advertises AMX without the OS granting it: any AMX tile
    instruction, or any use of the AVX-512 ``zmm`` registers, anywhere in the library."""
    disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(cpu_library())], capture_output=True,
                                 text=True, timeout=300, check=True).stdout
    assert len(disassembly) > 100_000, "the library was disassembled"
    found = {word for line in disassembly.splitlines() if "\t" in line
             for word in [line.split("\t")[-1].split(" ")[0]] if word.startswith(AMX_INSTRUCTIONS)}
    assert found == set(), f"AMX instructions in {cpu_library().name}: {sorted(found)}"
    zmm = [line for line in disassembly.splitlines() if "%zmm" in line][:5]
    assert zmm == [], f"AVX-512 instructions in {cpu_library().name}: {zmm}"
