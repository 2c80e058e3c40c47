#!/usr/bin/env bash
# Build and test dependencies from Debian/Ubuntu packages (the CUDA toolkit with cuBLAS and NCCL is
# expected to be installed already, under /usr/local/cuda). Used by `make deps` and by CI. The python3-*
# packages are for analysis/ (plots, `make report`, its pytest tests; jsonschema checks docs/schemas/), run with /usr/bin/python3; clang
# with its runtime libraries (libFuzzer, ASan) builds `make fuzz`, llvm's llvm-symbolizer names the
# frames of sanitizer reports.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends make gcc libyaml-dev zlib1g-dev libopenmpi-dev openmpi-bin \
    libcriterion-dev libopenblas-dev \
    python3 python3-matplotlib python3-numpy python3-pytest python3-jsonschema \
    clang libclang-rt-dev llvm
