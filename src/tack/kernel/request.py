"""The build request of a GPU backend (kernel.h's tack_kernel_request).

A GPU emitter hands the runtime one request per specialization: the target's source
(and, for Level Zero, the SPIR-V module made from it), the C source of the same plan
(the twin: the CPU build that sizes grids on the host and runs launches under the
stand-in driver), the launch facts and the failure record's names. The binding copies
it field by field into the C struct, and the GPU layer
(csrc/backends/gpu/gpu_build_request.c) checks it once for every CUDA-like backend,
so nothing is spelled as text and parsed back.
"""

from __future__ import annotations

from dataclasses import dataclass

from tack.kernel import lir


@dataclass(frozen=True)
class BuildRequest:
    """What a GPU backend's kernel build takes for one specialization."""

    source: str  # the target's source, one translation unit
    twin_source: str  # the C source of the same plan
    names: tuple[str, ...]  # name n of a failure record is names[n]
    parallel: bool  # the outer loop runs on a grid
    host_trips: bool  # the trip count needs only extents and scalars
    needs_ctx: bool  # launches pass a record (reductions, returns, debug mode)
    restrict_body: bool  # the source also has tack_kernel_body_restrict
    partial_size: int  # bytes of one thread's reduction partials; 0: none
    result_kind: int  # kernel.h's tack_kernel_result_kind
    image: bytes = b""  # the binary made from source (Level Zero: SPIR-V); b"": none


def request_of(plan: lir.Plan, names: list[str], source: str, twin_source: str,
               image: bytes = b"") -> BuildRequest:
    """The request for a plan lowered for a GPU target: its launch facts, with the
    target's source (and image) spelled by that target's emitter, whose failure
    record's names are names."""
    return BuildRequest(
        source=source, twin_source=twin_source, names=tuple(names),
        parallel=plan.parallel, host_trips=plan.host_trips(),
        needs_ctx=plan.needs_ctx(), restrict_body=plan.parallel and plan.restrict,
        partial_size=plan.partial_size(), result_kind=plan.result_kind, image=image)
