/*
 * conformance_kernels.c: conformance cases for modules and launches (see
 * conformance.c), with the suite's kernel as PTX and its CPU twin for the stand-in.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance.h"

/* tack_fill_index(out, n): out[i] = 3 * i + 1 for i < n (nvcc 13.0, compute_75). */
const char fill_ptx[] =
    ".version 9.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\t// .globl\ttack_fill_index\n"
    ".visible .entry tack_fill_index(\n"
    "\t.param .u64 tack_fill_index_param_0,\n"
    "\t.param .u32 tack_fill_index_param_1\n"
    ")\n"
    "{\n"
    "\t.reg .pred \t%p<2>;\n"
    "\t.reg .b32 \t%r<7>;\n"
    "\t.reg .b64 \t%rd<5>;\n"
    "\tld.param.u64 \t%rd1, [tack_fill_index_param_0];\n"
    "\tld.param.u32 \t%r2, [tack_fill_index_param_1];\n"
    "\tmov.u32 \t%r3, %ctaid.x;\n"
    "\tmov.u32 \t%r4, %ntid.x;\n"
    "\tmov.u32 \t%r5, %tid.x;\n"
    "\tmad.lo.s32 \t%r1, %r3, %r4, %r5;\n"
    "\tsetp.ge.u32 \t%p1, %r1, %r2;\n"
    "\t@%p1 bra \t$L__BB0_2;\n"
    "\tcvta.to.global.u64 \t%rd2, %rd1;\n"
    "\tmad.lo.s32 \t%r6, %r1, 3, 1;\n"
    "\tmul.wide.u32 \t%rd3, %r1, 4;\n"
    "\tadd.s64 \t%rd4, %rd2, %rd3;\n"
    "\tst.global.u32 \t[%rd4], %r6;\n"
    "$L__BB0_2:\n"
    "\tret;\n"
    "}\n";

/* The CPU twin of tack_fill_index, for the stand-in. */
static int
fill_twin(const tack_standin_launch *l, void *user)
{
    (void)user;
    uint64_t out = 0;
    uint32_t n = 0;
    if (l->params_nbytes != 12) {
        return 1;
    }
    memcpy(&out, l->params, 8);
    memcpy(&n, (const unsigned char *)l->params + 8, 4);
    uint64_t threads = (uint64_t)l->grid[0] * l->block[0];
    uint64_t count = n < threads ? n : threads;
    if (count == 0) {
        return 0;
    }
    uint32_t *host = l->translate(l->translate_ctx, out, count * 4);
    if (!host) {
        return 1; /* the kernel would store out of bounds */
    }
    for (uint32_t i = 0; i < count; i++) {
        host[i] = 3 * i + 1;
    }
    return 0;
}

tcu_function
load_fill(void)
{
    if (cu.standin) {
        EXPECT(cu.register_twin("tack_fill_index", fill_twin, NULL) == 0);
    }
    tcu_module m = NULL;
    tcu_function f = NULL;
    OK(cu.cuModuleLoadData(&m, fill_ptx));
    EXPECT_RC(cu.cuModuleGetFunction(&f, m, "tack_no_such_kernel"),
              TCU_ERROR_NOT_FOUND);
    OK(cu.cuModuleGetFunction(&f, m, "tack_fill_index"));
    return f;
}

/* Launches tack_fill_index(out, n) over `grid` blocks of `block` threads on stream s
 * into a zeroed buffer of 256 words, and checks all of them: 3 * i + 1 below n, 0 from
 * there on. Returns the buffer. */
static tcu_deviceptr
launch_and_check_fill(tcu_function f, tcu_stream s, unsigned grid, unsigned block,
                      uint32_t n)
{
    tcu_deviceptr out = alloc((size_t)256 * 4);
    OK(cu.cuMemsetD32Async(out, 0, 256, s));
    void *params[] = {&out, &n};
    OK(cu.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, params, NULL));
    uint32_t host[256];
    OK(cu.cuMemcpyDtoHAsync(host, out, sizeof host, s));
    OK(cu.cuStreamSynchronize(s));
    for (uint32_t i = 0; i < 256; i++) {
        EXPECT_EQ(host[i], i < n ? 3 * i + 1 : 0);
    }
    return out;
}

CASE(launch_runs_the_kernel, 0)
{
    primary_current();
    tcu_function f = load_fill();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    tcu_deviceptr out = launch_and_check_fill(f, s, 4, 64, 200);
    /* The same parameters through `extra`, as one packed buffer. */
    uint32_t n = 10, host[256];
    unsigned char packed[12];
    size_t packed_nbytes = sizeof packed;
    OK(cu.cuMemsetD32Async(out, 0, 256, s));
    memcpy(packed, &out, 8);
    memcpy(packed + 8, &n, 4);
    void *extra[] = {(void *)TCU_LAUNCH_PARAM_BUFFER_POINTER_HANDLE, packed,
                     (void *)TCU_LAUNCH_PARAM_BUFFER_SIZE_HANDLE, &packed_nbytes,
                     (void *)TCU_LAUNCH_PARAM_END_HANDLE};
    OK(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, extra));
    OK(cu.cuMemcpyDtoHAsync(host, out, sizeof host, s));
    OK(cu.cuStreamSynchronize(s));
    EXPECT_EQ(host[9], 28);
    EXPECT_EQ(host[10], 0);
}

/* A launch may name memory whose stream-ordered free is queued behind it: the free
 * takes effect after the work queued before it (an array released right after the
 * kernel call that uses it). */
CASE(launch_before_a_stream_ordered_free, UNVERIFIED)
{
    primary_current();
    tcu_function f = load_fill();
    tcu_stream s = NULL;
    OK(cu.cuStreamCreate(&s, TCU_STREAM_NON_BLOCKING));
    tcu_deviceptr out = 0;
    tcu_deviceptr kept = alloc((size_t)64 * 4);
    OK(cu.cuMemAllocAsync(&out, (size_t)64 * 4, s));
    uint32_t n = 64;
    void *params[] = {&out, &n};
    OK(cu.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, s, params, NULL));
    OK(cu.cuMemcpyDtoDAsync(kept, out, (size_t)64 * 4, s));
    OK(cu.cuMemFreeAsync(out, s));
    uint32_t host[64];
    OK(cu.cuMemcpyDtoHAsync(host, kept, sizeof host, s));
    OK(cu.cuStreamSynchronize(s));
    EXPECT_EQ(host[0], 1);
    EXPECT_EQ(host[63], 3 * 63 + 1);
    OK(cu.cuStreamDestroy(s));
}

CASE(launch_geometry_rules, UNVERIFIED)
{
    primary_current();
    tcu_function f = load_fill();
    tcu_deviceptr out = alloc(64);
    uint32_t n = 16;
    void *params[] = {&out, &n};
    EXPECT_RC(cu.cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL),
              TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, params, NULL),
              TCU_ERROR_INVALID_VALUE);
    EXPECT_RC(cu.cuLaunchKernel(f, 1, 1, 1, 32, 32, 2, 0, NULL, params, NULL),
              TCU_ERROR_INVALID_VALUE);
    OK(cu.cuCtxSynchronize());
}

CASE(occupancy_suggests_a_block_size_and_a_grid, 0)
{
    primary_current();
    tcu_function f = load_fill();
    int grid = 0, block = 0;
    OK(cu.cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, 0, 0));
    EXPECT(block >= 32 && block <= 1024 && block % 32 == 0);
    EXPECT(grid > 0);
    OK(cu.cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, 0, 100));
    EXPECT(block > 0 && block <= 100);
    /* the suggestion launches */
    tcu_deviceptr out = launch_and_check_fill(f, NULL, 1, (unsigned)block, 50);
    (void)out;
    EXPECT_RC(cu.cuOccupancyMaxPotentialBlockSize(NULL, &block, f, NULL, 0, 0),
              TCU_ERROR_INVALID_VALUE);
}

CASE(module_image_checks, UNVERIFIED)
{
    primary_current();
    tcu_module m = NULL;
    char newer[sizeof fill_ptx + 8];
    /* A PTX ISA from the future: ".version 9.0" becomes ".version 99.0". */
    snprintf(newer, sizeof newer, ".version 99.0%s", fill_ptx + strlen(".version 9.0"));
    EXPECT_RC(cu.cuModuleLoadData(&m, newer), TCU_ERROR_UNSUPPORTED_PTX_VERSION);
    EXPECT_RC(cu.cuModuleLoadData(&m, "this is not a kernel image"),
              TCU_ERROR_INVALID_PTX);
}

#ifdef TACK_CUBIN_DIR
/* The contents of TACK_CUBIN_DIR/name, NUL-terminated. Owned by the caller. */
static unsigned char *
read_cubin(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", TACK_CUBIN_DIR, name);
    FILE *f = fopen(path, "rb");
    EXPECT(f != NULL);
    unsigned char *buf = calloc(1, 1 << 20);
    EXPECT(buf != NULL);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    EXPECT(n > 64);
    return buf;
}
#endif

CASE(launch_from_cubin, CUBIN)
{
#ifdef TACK_CUBIN_DIR
    primary_current();
    if (cu.standin) {
        EXPECT(cu.register_twin("tack_fill_index", fill_twin, NULL) == 0);
    }
    unsigned char *image = read_cubin("fill_index_sm90.cubin");
    tcu_module m = NULL;
    tcu_function f = NULL;
    OK(cu.cuModuleLoadData(&m, image));
    free(image); /* the driver keeps its own copy */
    EXPECT_RC(cu.cuModuleGetFunction(&f, m, "tack_no_such_kernel"),
              TCU_ERROR_NOT_FOUND);
    OK(cu.cuModuleGetFunction(&f, m, "tack_fill_index"));
    launch_and_check_fill(f, NULL, 2, 32, 40);
    OK(cu.cuModuleUnload(m));
#endif
}

/* A CUBIN runs only on its own architecture family: sm_75 code on an sm_90 device. */
CASE(cubin_for_another_architecture, CUBIN | UNVERIFIED)
{
#ifdef TACK_CUBIN_DIR
    primary_current();
    unsigned char *image = read_cubin("fill_index_sm75.cubin");
    tcu_module m = NULL;
    EXPECT_RC(cu.cuModuleLoadData(&m, image), TCU_ERROR_NO_BINARY_FOR_GPU);
    free(image);
#endif
}

/* A kernel that stores through a bad pointer: the fault surfaces at synchronization
 * and every later call on the context returns it (a sticky error). */
CASE(device_fault_is_sticky, DEVICE_FAULT)
{
    primary_current();
    tcu_function f = load_fill();
    tcu_deviceptr bad = 0;
    uint32_t n = 64;
    void *params[] = {&bad, &n};
    OK(cu.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    EXPECT_RC(cu.cuCtxSynchronize(), TCU_ERROR_ILLEGAL_ADDRESS);
    tcu_deviceptr p = 0;
    EXPECT_RC(cu.cuMemAlloc(&p, 64), TCU_ERROR_ILLEGAL_ADDRESS);
}
