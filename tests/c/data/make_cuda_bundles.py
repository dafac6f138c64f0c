"""Writes the CUDA kernel bundles test_cuda_kernel.c builds (what tack.kernel's CUDA
emitter hands the CUDA backend for one specialization): the reductions tests'
`total` and a debug-mode gather. Run it again when the bundle format or the
generated-code ABI changes:

    .venv/bin/python tests/c/data/make_cuda_bundles.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import tack
from tack.kernel import KDL_CUDA

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "python"))

from test_kernels_reductions import total  # noqa: E402


@tack.kernel(debug=True)
def gather(out, x, idx):
    for i in range(out.shape[0]):
        out[i] = x[idx[i]]


F64 = ("array", "float64", 1)
for kernel, signature in ((total, (F64,)),
                          (gather, (F64, F64, ("array", "int64", 1)))):
    text = kernel.compile.source(signature, None, KDL_CUDA)
    # the kernels' files by name, not by this checkout's path
    for path in (Path(__file__), Path(sys.modules[total.__module__].__file__)):
        text = text.replace(str(path.resolve()), path.name)
    (HERE / f"cuda_{kernel.__name__}.bundle").write_text(text)
