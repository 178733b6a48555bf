# Sourced by scripts/demo.sh: pin the math libraries to their AVX2 code paths, so that two x86-64 CPUs
# (Intel or AMD, with or without AVX-512) run the same kernels and give the same bits. Without these,
# each library picks kernels by CPU vendor and instruction set (benchmarks/determinism.py shows which
# switch changes which result). A value already set in the environment wins; set
# VPEVAL_NATIVE_KERNELS=1 to let every library choose for itself (faster on some CPUs, numbers may move).
# The pins set join every stage's cache key and results.json's `machine` (vpeval.device.kernel_settings).
if [ "${VPEVAL_NATIVE_KERNELS:-0}" != "1" ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-avx2}      # PyTorch's vectorised ATen kernels
    export ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-AVX2}        # oneDNN (torch convolutions, CTranslate2 GEMMs)
    export MKL_CBWR=${MKL_CBWR:-AVX2}                            # MKL's reproducible AVX2 branch (torch linear layers)
    export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}      # numpy/scipy/scikit-learn BLAS kernels
    export CT2_USE_MKL=${CT2_USE_MKL:-0}                         # CTranslate2: oneDNN on Intel too (AMD's default)
    export CT2_FORCE_CPU_ISA=${CT2_FORCE_CPU_ISA:-AVX2}          # CTranslate2's own kernels
fi
