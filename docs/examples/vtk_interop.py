"""Runs examples/vtk_interop.py, so that it also runs from docs/examples/.

    python docs/examples/vtk_interop.py [arguments of examples/vtk_interop.py]
"""

import runpy
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
sys.argv[0] = str(EXAMPLES / "vtk_interop.py")
runpy.run_path(sys.argv[0], run_name="__main__")
