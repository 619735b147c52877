#!/usr/bin/env bash
# Installs what tessel needs to build and test on a Debian-like machine:
# a C compiler, meson, ninja, pkg-config, jansson (records of runs), cmocka
# and valgrind, libclang (the column of a refused primitive's call),
# OpenMPI (tune across hosts), NVML's header (the clocks in run records;
# optional), and
# PLplot with its cairo driver (tessel plot; optional to
# a build, installed so that the tests draw plots) with libpng (the tests
# decode the plots).  The CUDA toolkit (headers; NVRTC for compiling
# kernels) is expected under /usr/local/cuda.
set -euo pipefail
need=()
command -v cc >/dev/null || need+=(gcc)
command -v meson >/dev/null || need+=(meson)
command -v ninja >/dev/null || need+=(ninja-build)
command -v pkg-config >/dev/null || need+=(pkg-config)
pkg-config --exists cmocka 2>/dev/null || need+=(libcmocka-dev)
pkg-config --exists jansson 2>/dev/null || need+=(libjansson-dev)
pkg-config --exists plplot 2>/dev/null || need+=(libplplot-dev)
dpkg -s plplot-driver-cairo >/dev/null 2>&1 || need+=(plplot-driver-cairo)
pkg-config --exists libpng 2>/dev/null || need+=(libpng-dev)
command -v valgrind >/dev/null || need+=(valgrind)
# libclang: the column and the underlined call of a refused primitive
# (loaded at run time; optional to tessel, installed so that the tests
# check both ways of finding the call).
ldconfig -p | grep -q 'libclang[-.0-9]*\.so' || need+=(libclang1-14)
# OpenMPI: tune across hosts under mpirun (the unit suite runs it on one).
pkg-config --exists ompi-c 2>/dev/null || need+=(libopenmpi-dev)
command -v mpirun >/dev/null || need+=(openmpi-bin)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
[ -f /usr/local/cuda/include/nvrtc.h ] || [ -n "${CUDA_HOME:-}" ] || {
  echo "setup: the CUDA toolkit is not under /usr/local/cuda; set CUDA_HOME" >&2
  exit 1
}
# NVML's header, for the GPU's clocks in run records (the library comes with
# the driver): the toolkit here may lack it, so it is taken from NVIDIA's
# nvidia-nvml-dev wheel on PyPI into .deps/.  Optional: without it a record
# says the clocks are unknown.
cd "$(dirname "$0")/.."
toolkit="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$toolkit/include/nvml.h" ] && [ ! -f .deps/nvml/include/nvml.h ]; then
  tmp=$(mktemp -d)
  if python3 -m pip download -q --no-deps -d "$tmp" nvidia-nvml-dev-cu12 &&
     mkdir -p .deps/nvml/include &&
     python3 -c 'import glob, sys, zipfile
w = glob.glob(sys.argv[1] + "/nvidia_nvml_dev*.whl")[0]
sys.stdout.buffer.write(zipfile.ZipFile(w).read("nvidia/nvml_dev/include/nvml.h"))' \
       "$tmp" > .deps/nvml/include/nvml.h.part; then
    mv .deps/nvml/include/nvml.h.part .deps/nvml/include/nvml.h
  else
    rm -f .deps/nvml/include/nvml.h.part
    echo "setup: nvml.h not fetched; run records will not hold the GPU's clocks" >&2
  fi
  rm -rf "$tmp"
fi
