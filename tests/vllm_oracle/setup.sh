#!/usr/bin/env bash
# A virtual environment of its own for recording vLLM's scheduler (never the project's venv):
# vLLM 0.33.0 without its dependencies, on the CPU build of torch, plus the small pure-Python
# packages that importing the scheduler, its configs and its request type needs (found by
# trying the import until it ran). No GPU package, no kernel library: the scheduler runs none.
#
#   bash tests/vllm_oracle/setup.sh [VENV]        (default /tmp/vllm-venv)
set -euo pipefail

VENV="${1:-/tmp/vllm-venv}"
PY="${PYTHON:-python3}"

"$PY" -m venv "$VENV"
PIP=("$VENV/bin/pip" install --quiet)

# torch's CPU wheel (the one on this machine's disk when it has one)
"${PIP[@]}" "torch==2.13.0"
# vLLM, the two grammar back-ends it imports at module level and xgrammar's FFI, without their
# dependencies (which would pull a CUDA torch and the nvidia-* wheels)
"${PIP[@]}" --no-deps "vllm==0.33.0" "xgrammar==0.2.8" "llguidance>=1.7.0,<1.8.0" "apache-tvm-ffi==0.1.11"
# what the import chain of vllm.v1.core.sched and vllm.config needs, nothing more
"${PIP[@]}" \
    packaging pydantic regex numpy cbor2 psutil pyzmq urllib3 requests aiohttp \
    "transformers>=5.16.1,<5.21.0" openai openai-harmony pillow pybase64 cachetools msgspec \
    cloudpickle uvloop py-cpuinfo prometheus_client fastapi partial-json-parser einops

# refuse an environment that pulled a GPU stack after all
if "$VENV/bin/pip" list 2>/dev/null | grep -qiE '^(nvidia-|triton )'; then
    echo "setup.sh: a GPU package was installed into $VENV; refusing to use it" >&2
    exit 1
fi
HF_HUB_OFFLINE=1 "$VENV/bin/python" -c \
    "import vllm.v1.core.sched.async_scheduler, vllm.config; print('vllm', __import__('vllm').__version__, 'ready')"
