"""dpctl, a real kDLOneAPI peer, with the SYCL and OpenCL runtimes it was built for
(dpctl 0.20.2, Intel's 2025.3 wheels): `make dpctl-peer` installs them into a prefix of
their own, .venv/dpctl-peer, never into the repository and never over .venv's 2026.2.0
OpenCL runtime, which the other Level Zero tests' children use (opencl_cpu_runtime.py).

Only a child that is given child_env() sees the prefix: its site-packages first on
PYTHONPATH, its lib/ alone on LD_LIBRARY_PATH and as OCL_ICD_FILENAMES' runtime (the
shipped .icd file names a placeholder path), and SYCL kept to the OpenCL CPU device, so
that its Level Zero adapter does not drive the stand-in through the same loader.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# TACK_DPCTL_PEER names it for an interpreter of another environment (make sanitize-py).
PREFIX = Path(os.environ.get("TACK_DPCTL_PEER") or Path(sys.prefix) / "dpctl-peer")
LIB = PREFIX / "lib"
SITE = LIB / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
RUNTIME = LIB / "libintelocl.so"


def missing() -> str | None:
    """None when the prefix holds dpctl and its runtime; else what is missing."""
    for path in (SITE / "dpctl" / "__init__.py", RUNTIME):
        if not path.exists():
            return (f"the dpctl peer is not installed ({path} is missing): "
                    "run `make dpctl-peer`, which `make test` runs")
    return None


def child_env() -> dict[str, str]:
    """The variables a child needs to import dpctl on the OpenCL CPU device."""
    return {"PYTHONPATH": os.pathsep.join([str(SITE), *(p for p in sys.path if p)]),
            "LD_LIBRARY_PATH": str(LIB), "OCL_ICD_FILENAMES": str(RUNTIME),
            "ONEAPI_DEVICE_SELECTOR": "opencl:cpu"}
