/*
 * cpu_backend.c: the CPU backend. Memory comes from the runtime's allocation hook
 * (64-byte aligned), launches are synchronous, so synchronize has nothing to wait for.
 */
#define _DEFAULT_SOURCE /* madvise */
#include <assert.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "../../runtime/internal.h"

/* The CPU has no state; open returns this address so state is never NULL. */
static int cpu_state;

/* Wide enough for AVX-512 loads of any element. */
#define CPU_ALIGNMENT 64u

static tack_status
cpu_open(const tack_backend *self, int ordinal, const tack_device_options *options,
         void **state)
{
    (void)self;
    (void)options;
    if (ordinal != 0) {
        return tack__fail(TACK_ERR_UNKNOWN_DEVICE,
                          "the cpu device has ordinal 0 only, not %d", ordinal);
    }
    *state = &cpu_state;
    return TACK_OK;
}

/* From this size on, ask Linux for transparent huge pages (where its policy is
 * "madvise", as on most distributions): the first touch of a large array then faults
 * a 2 MiB page at a time instead of 4 KiB, which NumPy does too and which makes a
 * first write to fresh memory several times faster. */
#define CPU_HUGE_PAGE_THRESHOLD ((size_t)4 << 20)

static void
advise_huge_pages(void *p, size_t nbytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t page = 4096;
    uintptr_t start = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t)p + nbytes) & ~(page - 1);
    if (end > start) {
        (void)madvise((void *)start, end - start, MADV_HUGEPAGE); /* advice only */
    }
#else
    (void)p;
    (void)nbytes;
#endif
}

static tack_status
cpu_alloc(void *state, size_t nbytes, bool exportable, void **ptr)
{
    (void)state;
    (void)exportable; /* export_memory refuses CPU arrays whatever the flag says */
    void *p = tack__alloc(nbytes, CPU_ALIGNMENT);
    if (!p) {
        return tack__fail(TACK_ERR_NO_MEMORY,
                          "out of memory allocating %zu bytes on the cpu", nbytes);
    }
    if (nbytes >= CPU_HUGE_PAGE_THRESHOLD) {
        advise_huge_pages(p, nbytes);
    }
    *ptr = p;
    return TACK_OK;
}

static void
cpu_free(void *state, void *ptr)
{
    (void)state;
    tack__free(ptr);
}

static tack_status
cpu_copy(void *state, void *dst, const void *src, size_t nbytes, tack_copy_kind kind)
{
    (void)state;
    (void)kind;
    memmove(dst, src, nbytes);
    return TACK_OK;
}

/* count copies of a pattern of W bytes, stored one element at a time: a loop the
 * compiler turns into wide stores, which never read the destination back. */
#define FILL_WORDS(W, T)                                                         \
    static void fill_##W(unsigned char *d, const unsigned char *p, size_t count) \
    {                                                                            \
        T v;                                                                     \
        memcpy(&v, p, sizeof v);                                                 \
        for (size_t k = 0; k < count; k++) {                                     \
            memcpy(d + k * sizeof v, &v, sizeof v);                              \
        }                                                                        \
    }
FILL_WORDS(2, uint16_t)
FILL_WORDS(4, uint32_t)
FILL_WORDS(8, uint64_t)
#undef FILL_WORDS

/* count copies of a pattern of n bytes (12: vec3, 16: vec4), stored in 48-byte
 * units of per_unit whole patterns (48 is a multiple of both), each unit a
 * fixed-size copy the compiler spells as vector stores; then the tail. */
enum { FILL_UNIT_NBYTES = 48 };
static void
fill_units(unsigned char *d, const unsigned char *p, size_t n, size_t per_unit,
           size_t count)
{
    enum { UNIT_NBYTES = FILL_UNIT_NBYTES };
    unsigned char unit[UNIT_NBYTES];
    assert(per_unit > 0 && per_unit * n == UNIT_NBYTES);
    for (size_t k = 0; k < per_unit; k++) {
        memcpy(unit + k * n, p, n);
    }
    size_t units = count / per_unit;
    for (size_t k = 0; k < units; k++) {
        memcpy(d + k * UNIT_NBYTES, unit, UNIT_NBYTES);
    }
    for (size_t k = units * per_unit; k < count; k++) {
        memcpy(d + k * n, p, n);
    }
}

static tack_status
cpu_fill(void *state, void *dst, const void *pattern, size_t pattern_nbytes,
         size_t count)
{
    (void)state;
    unsigned char *d = dst;
    const unsigned char *p = pattern;
    bool uniform = true;
    for (size_t k = 1; k < pattern_nbytes; k++) {
        uniform = uniform && p[k] == p[0];
    }
    /* Only stores: a fill that read its own output back (copies of the part already
     * filled) moved twice the bytes once the array outgrew the caches. */
    if (uniform) {
        memset(d, p[0], pattern_nbytes * count);
        return TACK_OK;
    }
    switch (pattern_nbytes) {
    case 2: fill_2(d, p, count); return TACK_OK;
    case 4: fill_4(d, p, count); return TACK_OK;
    case 8: fill_8(d, p, count); return TACK_OK;
    case 12: fill_units(d, p, 12, FILL_UNIT_NBYTES / 12, count); return TACK_OK;
    case 16: fill_units(d, p, 16, FILL_UNIT_NBYTES / 16, count); return TACK_OK;
    default: break;
    }
    for (size_t k = 0; k < count; k++) { /* no dtype has another size */
        memcpy(d + k * pattern_nbytes, p, pattern_nbytes);
    }
    return TACK_OK;
}

static tack_status
cpu_memory_space(void *state, const void *ptr, tack_memory_space *out)
{
    (void)state;
    /* The CPU cannot tell one host allocation from another, but a GPU's device
     * pointer wrapped here would crash the first host access: ask the GPU devices
     * open in this process. */
    *out = tack__device_foreign_space(ptr);
    return TACK_OK;
}

static tack_status
cpu_synchronize(void *state)
{
    (void)state;
    return TACK_OK;
}

static uint64_t
cpu_memory_domain(void *state, int ordinal)
{
    (void)state;
    (void)ordinal;
    return 0; /* one host memory for the whole process */
}

static const char *const cpu_options[] = {NULL};

const tack_backend tack__backend_cpu = {
    .size = sizeof(tack_backend),
    .name = "cpu",
    .dlpack_device_type = kDLCPU,
    .option_names = cpu_options,
    .open = cpu_open,
    .close = NULL,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .fill = cpu_fill,
    .memory_space = cpu_memory_space,
    .synchronize = cpu_synchronize,
    .memory_domain = cpu_memory_domain,
    /* kernels: C through the system compiler (jit.c), the thread pool (launch.c) */
    .kernel_build = tack__cpu_kernel_build_request,
    .kernel_launch = tack__cpu_kernel_launch,
    .kernel_release = NULL, /* shared objects are never unloaded */
};
