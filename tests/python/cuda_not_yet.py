"""The one place that reads the CUDA backend's refusal of a kernel kind as "not
supported yet": reductions, returned values and debug mode raise TackRuntimeError
with this text on CUDA arrays until their launch side exists (docs/kernels.md,
"Launching on CUDA"). The differential plugin, the benchmark's smoke test and the
racecheck script use it; delete this module and its uses when every kind runs on
CUDA, and a refusal then fails like any other difference.
"""

NOT_YET = "do not run on CUDA arrays yet"


def not_yet(message: object) -> bool:
    """Whether an exception's message (or any text) is that refusal."""
    return NOT_YET in str(message)
