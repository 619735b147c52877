# Sourced by the shell tests that run tessel on tests/fake_cuda.c, after
# they set $fake (its path) and $tmp (a directory of their own): the fake
# as the CUDA driver (TESSEL_CUDA_DRIVER) and as cuBLAS, under the name
# libcuBLAS is looked for, in a directory put first on LD_LIBRARY_PATH.
case "$fake" in /*) ;; *) fake="$PWD/$fake" ;; esac
mkdir "$tmp/lib" && ln -s "$fake" "$tmp/lib/libcublas.so.13"
export TESSEL_CUDA_DRIVER="$fake"
export LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
