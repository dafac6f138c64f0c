// fill_index.cu: the kernel of the conformance suite's launch cases. Its PTX (nvcc 13.0,
// -arch=compute_75) is embedded in conformance.c, so the suite needs no toolkit; where
// meson finds nvcc it also builds CUBINs of it (tests/standin/meson.build) for the
// CUBIN cases.
extern "C" __global__ void tack_fill_index(unsigned *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = i * 3u + 1u;
    }
}
