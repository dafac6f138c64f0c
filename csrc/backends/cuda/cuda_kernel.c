/*
 * cuda_kernel.c: the CUDA backend's kernel slots (docs/kernels.md, "Kernels on
 * CUDA").
 *
 * The front end hands the build a bundle (emit_cuda.py's emit_cuda_bundle): a header
 * line with the launch facts, a line with the failure record's names (hex-encoded
 * UTF-8), the CUDA source, a marker line, then the C source of the same
 * specialization. The C part is built by the CPU backend (its disk cache
 * makes this cheap) and serves twice: its tack_kernel_trips sizes the grid on the
 * host when the trip count needs only extents and scalars, and under the stand-in
 * driver it is the CPU twin that computes the launch. The CUDA part is compiled by
 * NVRTC at the first launch on a context (a CUBIN for the device's compute
 * capability, PTX for the highest one NVRTC knows below it), loaded with
 * cuModuleLoadData and kept per context for the life of the process.
 *
 * A launch is queued on Tack's stream and returns; a launch with TACK_KERNEL_SHARED
 * (an argument's buffer is shared with another library) synchronizes first. A kernel
 * that reduces, returns a value or runs in debug mode (needs_ctx) gets a context
 * record: one stream-ordered scratch allocation per launch holds the 64-byte record
 * (emit_cuda.py's tk_ctx) and the blocks' partials; the record is set from a host
 * copy on this stack, the body and then tack_kernel_finish run, and the record comes
 * back before the launch returns the value or raises the CPU's error (launch.c
 * words it). So these launches always complete before returning; every path that
 * queued a copy waits for the stream, since the copies use this stack frame.
 *
 * What still differs from the CPU: float reductions are associated by the grid (a
 * tree per block, blocks folded in order) rather than by the CPU's fixed chunks, and
 * the math functions are libdevice's (docs/kernels.md, "What differs on the GPU").
 *
 * NVRTC must be no newer than the driver: a newer major is refused before
 * compiling, a newer minor builds CUBINs only (tack__cuda_nvrtc_fits).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "tack/dtype.h"
#include "tack/nvrtc.h"

#define BUNDLE_HEADER "// tack-cuda-bundle "
#define BUNDLE_NAMES "// tack-cuda-names"
#define BUNDLE_TWIN "\n// tack-cuda-bundle-cpu\n"
#define FIXED_BLOCK 256
/* Dynamic shared memory a block may use without opting in (every CUDA GPU). */
#define SHARED_MAX 49152
/* Body launches of one kernel whose finish the stand-in's twin awaits. */
#define TWIN_SLOTS 64
/* More names than a kernel's arrays could have: a corrupt bundle. */
#define MAX_NAMES 4096

/* The launch record in device memory: emit_cuda.py's tk_ctx, field for field. */
typedef struct cuda_record {
    int32_t failed, claimed, why, line, axis, name;
    int64_t index, extent;
    uint64_t partials; /* device address of grid * partial_size bytes, or 0 */
    int64_t result_i;
    double result_f;
} cuda_record;
_Static_assert(sizeof(cuda_record) == 64, "emit_cuda.py's CTX_SIZE");
_Static_assert(offsetof(cuda_record, index) == 24 &&
                   offsetof(cuda_record, partials) == 40 &&
                   offsetof(cuda_record, result_f) == 56,
               "emit_cuda.py's tk_ctx layout");

/* An entry point of a loaded module and its launch shape. */
typedef struct cuda_entry {
    tack__gpu_function fn; /* NULL when the kernel has no such entry */
    unsigned block;        /* threads per block: the occupancy API's, or FIXED_BLOCK */
    unsigned grid;         /* blocks of that size that fill the device */
} cuda_entry;

/* One context's loaded module of a kernel. */
typedef struct cuda_module {
    tack__gpu_context ctx;
    tack__gpu_module mod;
    cuda_entry body, body_restrict;
    /* NULL unless the kernel reduces or returns in parallel */
    tack__gpu_function finish;
    struct cuda_module *next;
} cuda_module;

typedef struct cuda_kernel {
    tack_kernel pub;   /* impl points back here */
    tack_kernel *cpu;  /* Borrowed: the CPU build of the same plan (kept for life) */
    char *cuda_source; /* Owned */
    int parallel, host_trips, needs_ctx, restrict_body;
    int partial_size; /* bytes of one block's reduction partials; 0: none */
    int nnames;
    char **names;         /* Owned: UTF-8; a record's name is an index into them */
    pthread_mutex_t lock; /* guards modules */
    cuda_module *modules; /* Owned: never unloaded (kernels live for the process) */
    /* The stand-in's twins (run one at a time, under its lock): the records of
     * body launches whose finish has not run yet, with the nblocks it must pass.
     * Every launch with a record waits for it before returning, so at most one
     * per launching thread is pending; the oldest slot is reused. */
    struct {
        uint64_t record; /* 0: free */
        int64_t nblocks;
    } twin_pending[TWIN_SLOTS];
    unsigned twin_next;
} cuda_kernel;

/* Launches under the stand-in register their twin just before cuLaunchKernel; the
 * queued launch keeps the twin it found, and this lock keeps the pair together. */
static pthread_mutex_t twin_lock = PTHREAD_MUTEX_INITIALIZER;

/* The stand-in driver's twin interface (tests/standin/cuda/standin_twin.h, which
 * defines it; the stand-in is not installed with Tack, so the layout is restated). */
typedef struct tack_standin_launch {
    const char *entry;
    unsigned grid[3];
    unsigned block[3];
    const void *params;
    size_t params_nbytes;
    void *(*translate)(void *translate_ctx, uint64_t device_address, size_t nbytes);
    void *translate_ctx;
} tack_standin_launch;
typedef int (*tack_standin_twin_fn)(const tack_standin_launch *launch, void *user);
typedef int (*register_twin_fn)(const char *, tack_standin_twin_fn, void *);
typedef tcu_result (*module_source_fn)(tcu_module, const char *);

/* The stand-in's twin registry, or NULL on a real driver: looked up once (the
 * process has one driver, never unloaded), so a launch pays no dlopen. With it, the
 * stand-in's receiver of a module's CUDA source (its emulated launches run that). */
static register_twin_fn standin_twin_registry;
static module_source_fn standin_module_source;
static pthread_once_t standin_probe = PTHREAD_ONCE_INIT;

static void
probe_standin(void)
{
    const tack__gpu_driver *drv = NULL; /* loaded: a device is open */
    void *h = tack__cuda_driver_get(&drv) == TACK_OK
                  ? dlopen(drv->path, RTLD_NOW | RTLD_NOLOAD)
                  : NULL;
    if (!h) {
        return;
    }
    void *sym = dlsym(h, "tack_standin_cuda_register_twin");
    void *source = dlsym(h, "tack_standin_cuda_module_source");
    dlclose(h);
    memcpy(&standin_twin_registry, &sym, sizeof sym);
    memcpy(&standin_module_source, &source, sizeof source);
}

static register_twin_fn
standin_register(void)
{
    pthread_once(&standin_probe, probe_standin);
    return standin_twin_registry;
}

/* Reads "key=<int>" at *p, then the spaces after it. */
static bool
read_fact(const char **p, const char *key, int *out)
{
    size_t n = strlen(key);
    if (strncmp(*p, key, n) != 0 || (*p)[n] != '=') {
        return false;
    }
    char *end = NULL;
    long v = strtol(*p + n + 1, &end, 10);
    if (end == *p + n + 1 || v < INT_MIN || v > INT_MAX) {
        return false;
    }
    *out = (int)v;
    for (*p = end; **p == ' '; (*p)++) {
    }
    return true;
}

static int
hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void
free_names(char **names, int n)
{
    for (int i = 0; names && i < n; i++) {
        tack__free(names[i]);
    }
    tack__free(names);
}

/* The name of hex digits at q (digits of them, even, no NUL byte), or NULL when
 * they are not such a name (*oom set when memory ran out instead). */
static char *
decode_name(const char *q, size_t digits, bool *oom)
{
    if (digits == 0 || digits % 2 != 0) {
        return NULL;
    }
    char *name = tack__alloc(digits / 2 + 1, TACK__STRUCT_ALIGNMENT);
    if (!name) {
        *oom = true;
        return NULL;
    }
    for (size_t d = 0; d < digits; d += 2) {
        int hi = hex_digit(q[d]), lo = hex_digit(q[d + 1]);
        if (hi < 0 || lo < 0 || (hi | lo) == 0) {
            tack__free(name);
            return NULL;
        }
        name[d / 2] = (char)(hi * 16 + lo);
    }
    name[digits / 2] = '\0';
    return name;
}

/* Reads the names line at *p ("// tack-cuda-names" and one hex-encoded UTF-8 name
 * after each space) up to its newline, and moves *p past it. Returns TACK_OK, or
 * TACK_ERR_INVALID_ARGUMENT (nothing set) for a malformed line, TACK_ERR_NO_MEMORY.
 * Out: *names (Owned: free_names), *n only on success. */
static tack_status
read_names(const char **p, char ***names, int *n)
{
    size_t len = strlen(BUNDLE_NAMES);
    const char *q = *p + len,
               *end = strncmp(*p, BUNDLE_NAMES, len) == 0 ? strchr(q, '\n') : NULL;
    int count = 0;
    for (const char *c = q; end && c < end; c++) {
        count += *c == ' ';
    }
    if (!end || count > MAX_NAMES) {
        return TACK_ERR_INVALID_ARGUMENT;
    }
    char **out = tack__calloc((size_t)count * sizeof *out);
    if (!out) {
        return TACK_ERR_NO_MEMORY;
    }
    bool oom = false;
    for (int i = 0; i < count; i++) {
        size_t digits = 0;
        while (q + 1 + digits < end && q[1 + digits] != ' ') {
            digits++;
        }
        if (*q != ' ' || !(out[i] = decode_name(q + 1, digits, &oom))) {
            free_names(out, i);
            return oom ? TACK_ERR_NO_MEMORY : TACK_ERR_INVALID_ARGUMENT;
        }
        q += 1 + digits;
    }
    *names = out;
    *n = count;
    *p = end + 1;
    return TACK_OK;
}

tack_status
tack__cuda_kernel_build(const tack_backend *self, const char *name,
                        const char *filename, const char *source, tack_kernel **out,
                        char **log)
{
    int result_kind = 0;
    cuda_kernel probe = {0};
    const char *twin = strstr(source, BUNDLE_TWIN);
    const char *p = source + strlen(BUNDLE_HEADER);
    if (strncmp(source, BUNDLE_HEADER, strlen(BUNDLE_HEADER)) != 0 || !twin ||
        !read_fact(&p, "parallel", &probe.parallel) ||
        !read_fact(&p, "host_trips", &probe.host_trips) ||
        !read_fact(&p, "needs_ctx", &probe.needs_ctx) ||
        !read_fact(&p, "restrict", &probe.restrict_body) ||
        !read_fact(&p, "partial_size", &probe.partial_size) ||
        !read_fact(&p, "result_kind", &result_kind) || *p++ != '\n') {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': the CUDA backend builds the bundle of "
                          "tack.kernel's CUDA emitter (CUDA and C source), not plain "
                          "source",
                          name);
    }
    if (probe.partial_size < 0 || probe.partial_size > TACK_KERNEL_MAX_PARTIAL_SIZE ||
        result_kind < TACK_KERNEL_RESULT_NONE ||
        result_kind > TACK_KERNEL_RESULT_BOOL ||
        ((probe.partial_size > 0 || result_kind) && !probe.needs_ctx) ||
        (probe.partial_size > 0 && !probe.parallel)) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': the CUDA bundle's launch facts contradict each "
                          "other (partial_size %d, result_kind %d, needs_ctx %d, "
                          "parallel %d); rebuild it with tack.kernel's CUDA emitter",
                          name, probe.partial_size, result_kind, probe.needs_ctx,
                          probe.parallel);
    }
    tack_status st = read_names(&p, &probe.names, &probe.nnames);
    if (st == TACK_OK && p > twin) {
        free_names(probe.names, probe.nnames);
        st = TACK_ERR_INVALID_ARGUMENT;
    }
    if (st == TACK_ERR_NO_MEMORY) {
        return tack__fail(st, "out of memory building kernel '%s'", name);
    }
    if (st != TACK_OK) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': the CUDA bundle's second line must list the "
                          "kernel's array names (hex-encoded UTF-8); rebuild it with "
                          "tack.kernel's CUDA emitter",
                          name);
    }
    tack_kernel *cpu = NULL;
    st = tack__cpu_kernel_build(&tack__backend_cpu, name, filename,
                                twin + strlen(BUNDLE_TWIN), &cpu, log);
    if (st == TACK_OK && cpu->result_kind != result_kind) {
        st = tack__fail(TACK_ERR_INVALID_ARGUMENT,
                        "kernel '%s': the CUDA bundle's result kind %d is not its C "
                        "part's (%d); rebuild it with tack.kernel's CUDA emitter",
                        name, result_kind, cpu->result_kind);
    }
    if (st != TACK_OK) {
        free_names(probe.names, probe.nnames);
        return st;
    }
    cuda_kernel *k = tack__calloc(sizeof *k);
    size_t n = (size_t)(twin - p);
    if (!k || !(k->cuda_source = tack__strndup(p, n))) {
        tack__free(k);
        free_names(probe.names, probe.nnames);
        return tack__fail(TACK_ERR_NO_MEMORY, "out of memory building kernel '%s'",
                          name);
    }
    k->parallel = probe.parallel;
    k->host_trips = probe.host_trips;
    k->needs_ctx = probe.needs_ctx;
    k->restrict_body = probe.restrict_body;
    k->partial_size = probe.partial_size;
    k->names = probe.names;
    k->nnames = probe.nnames;
    k->cpu = cpu;
    pthread_mutex_init(&k->lock, NULL);
    k->pub = *cpu;
    k->pub.backend = self;
    /* the module's file table is the first of its names (kernel.h) */
    k->pub.files = (const char *const *)k->names;
    k->pub.nfiles = k->nnames;
    k->pub.impl = k;
    *out = &k->pub;
    return TACK_OK;
}

/* The nblocks of a launch's tack_kernel_finish: the body's grid when it left
 * partials; 0 when it ran no block or the kernel returns without reducing. */
static int64_t
finish_blocks(const cuda_kernel *k, int64_t trips, unsigned grid)
{
    return k->partial_size > 0 && trips != 0 ? (int64_t)grid : 0;
}

/* Whether a launch of k ends with tack_kernel_finish: a parallel kernel that
 * reduces or returns a value. */
static bool
needs_finish(const cuda_kernel *k)
{
    return k->parallel && (k->partial_size > 0 || k->pub.result_kind);
}

/* ---- the stand-in's twins --------------------------------------------------- */

/* Bytes before the record's address among an entry's parameters: the block (a
 * kernel without parameters declares 1 byte), then the pointer at its alignment. */
static size_t
record_offset(const cuda_kernel *k)
{
    size_t n = tack_kernel_params_size(k->pub.nparams, k->pub.param_key);
    return n ? n : 8;
}

/* The launch's parameter block with every array's device address turned into host
 * memory, in block (nbytes bytes). False when an
 * address is not the launch's to use. */
static bool
twin_block(const cuda_kernel *k, const tack_standin_launch *l, unsigned char *block,
           size_t nbytes)
{
    memcpy(block, l->params, nbytes);
    unsigned char *p = block;
    for (int i = 0; i < k->pub.nparams; i++) {
        uint32_t key = k->pub.param_key[i];
        if (!(key & TACK_KERNEL_KEY_ARRAY)) {
            p += 8;
            continue;
        }
        uint64_t addr;
        memcpy(&addr, p, 8);
        size_t ndim = key & 0xffu;
        size_t bytes = tack_dtype_get((tack_dtype)((key >> 8) & 0xffu))->itemsize;
        for (size_t d = 0; d < ndim; d++) {
            int64_t e;
            memcpy(&e, p + 8 * (d + 1), 8);
            bytes *= (size_t)e;
        }
        if (bytes > 0) {
            void *host = l->translate(l->translate_ctx, addr, bytes);
            uint64_t h = (uint64_t)(uintptr_t)host;
            if (!host) {
                return false;
            }
            memcpy(p, &h, 8);
        }
        p += 8 * (ndim + 1);
    }
    return true;
}

/* The index of a failure's array name among k's names (0 for none), or -1. */
static int
name_index(const cuda_kernel *k, const char *name)
{
    if (!name) {
        return 0;
    }
    for (int i = 0; i < k->nnames; i++) {
        if (strcmp(k->names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

/* Runs the CPU build over the launch's translated block; with a record (rec, the
 * host memory of the launch's record, or NULL), writes the result and the failure
 * there as the device code would. Returns nonzero for a device fault. */
static int
twin_run(cuda_kernel *k, const tack_standin_launch *l, unsigned char *rec)
{
    size_t nbytes = tack_kernel_params_size(k->pub.nparams, k->pub.param_key);
    uint64_t small[256];
    unsigned char *block =
        nbytes <= sizeof small ? (unsigned char *)small : tack__alloc(nbytes, 0);
    if (!block) {
        return 1;
    }
    tack_kernel_value v;
    tack__kernel_failure f;
    int bad = !twin_block(k, l, block, nbytes) ||
              tack__cpu_kernel_run(k->cpu, block, 0, &v, &f) != TACK_OK;
    if (block != (unsigned char *)small) {
        tack__free(block);
    }
    cuda_record r;
    int name = bad || !f.failed ? 0 : name_index(k, f.name);
    if (bad || name < 0 || !rec) {
        return bad || name < 0;
    }
    memcpy(&r, rec, sizeof r);
    if (f.failed) {
        r.failed = r.claimed = 1;
        r.why = f.why;
        r.line = f.line;
        r.axis = f.axis;
        r.index = f.index;
        r.extent = f.extent;
        r.name = name;
    }
    else {
        r.result_i = v.i;
        r.result_f = v.f;
    }
    memcpy(rec, &r, sizeof r);
    return 0;
}

/* The host memory of the record whose address follows the block, or NULL. */
static unsigned char *
twin_record(const cuda_kernel *k, const tack_standin_launch *l, size_t extra,
            uint64_t *addr)
{
    size_t at = record_offset(k);
    if (l->params_nbytes < at + 8 + extra) {
        return NULL;
    }
    memcpy(addr, (const unsigned char *)l->params + at, 8);
    return l->translate(l->translate_ctx, *addr, sizeof(cuda_record));
}

/* The twin of tack_kernel_body and tack_kernel_body_restrict (standin_twin.h): the
 * CPU build of the same plan computes the whole launch (its own trips, chunks and
 * finish), so a reduction's result is in the record after the body. */
static int
body_twin(const tack_standin_launch *l, void *user)
{
    cuda_kernel *k = user;
    size_t nbytes = tack_kernel_params_size(k->pub.nparams, k->pub.param_key);
    if (l->params_nbytes < nbytes) {
        return 1;
    }
    if (!k->needs_ctx) {
        return twin_run(k, l, NULL);
    }
    uint64_t addr = 0;
    unsigned char *rec = twin_record(k, l, 0, &addr);
    if (!rec) {
        return 1;
    }
    unsigned slot = k->twin_next++ % TWIN_SLOTS;
    k->twin_pending[slot].record = addr;
    k->twin_pending[slot].nblocks = finish_blocks(k, 1, l->grid[0]);
    return twin_run(k, l, rec);
}

/* The twin of tack_kernel_finish: after a body, checks that nblocks is the body's
 * grid (0 without partials) and leaves the body twin's result; alone (no trip: nblocks
 * 0), runs the CPU build, whose finish over no chunk gives the identity or the returned
 * value. */
static int
finish_twin(const tack_standin_launch *l, void *user)
{
    cuda_kernel *k = user;
    uint64_t addr = 0;
    unsigned char *rec = twin_record(k, l, 8, &addr);
    if (!rec || l->grid[0] != 1 || l->block[0] != 1) {
        return 1;
    }
    int64_t nblocks;
    memcpy(&nblocks, (const unsigned char *)l->params + record_offset(k) + 8, 8);
    for (unsigned i = 0; i < TWIN_SLOTS; i++) {
        if (k->twin_pending[i].record == addr) {
            k->twin_pending[i].record = 0;
            return nblocks != k->twin_pending[i].nblocks;
        }
    }
    return nblocks != 0 || twin_run(k, l, rec);
}

/* A device attribute of s's device. Inside a guard. */
static tack_status
attribute(tack__gpu_state *s, tack__gpu_attribute attr, int *out)
{
    return tack__gpu_check(s, s->drv->api.device_attribute(out, attr, s->device),
                           "cuDeviceGetAttribute");
}

/* The entry point `name` of mod and the block size and grid that fill the device
 * with it: cuOccupancyMaxPotentialBlockSize's, or FIXED_BLOCK threads per block and
 * as many blocks as the multiprocessors hold when the driver lacks it. A reduction
 * needs partial_size bytes of shared memory per thread: the block stays within
 * SHARED_MAX of them, a multiple of 32 threads where that fits. Inside a guard. */
static tack_status
entry_of(tack__gpu_state *s, tack__gpu_module mod, const char *name, int partial_size,
         cuda_entry *out)
{
    const tack__gpu_api *api = &s->drv->api;
    tack_status st = tack__gpu_check(s, api->module_get_function(&out->fn, mod, name),
                                     "cuModuleGetFunction");
    int limit = 0; /* none */
    if (partial_size > 0) {
        limit = SHARED_MAX / partial_size;
        limit = limit > 1024 ? 1024 : limit >= 32 ? limit / 32 * 32 : limit;
    }
    int grid = 0, block = 0;
    if (st == TACK_OK && api->occupancy_max_block_size) {
        st = tack__gpu_check(
            s,
            api->occupancy_max_block_size(&grid, &block, out->fn, NULL,
                                          (size_t)limit * (size_t)partial_size, limit),
            "cuOccupancyMaxPotentialBlockSize");
    }
    else if (st == TACK_OK) {
        int sms = 0, threads = 0;
        st = attribute(s, TACK__GPU_ATTRIBUTE_MULTIPROCESSORS, &sms);
        if (st == TACK_OK) {
            st = attribute(s, TACK__GPU_ATTRIBUTE_THREADS_PER_MULTIPROCESSOR, &threads);
        }
        block = limit > 0 && limit < FIXED_BLOCK ? limit : FIXED_BLOCK;
        grid = sms * (threads / block);
    }
    if (block <= 0 || (limit > 0 && block > limit)) {
        block = limit > 0 && limit < FIXED_BLOCK ? limit : FIXED_BLOCK;
    }
    out->block = (unsigned)block;
    out->grid = grid > 0 ? (unsigned)grid : 1;
    return st;
}

tack_status
tack__cuda_nvrtc_fits(const char *kernel, int nvrtc_major, int nvrtc_minor,
                      int driver_version, tack_nvrtc_output kind)
{
    int driver_major = driver_version / 1000, driver_minor = driver_version % 1000 / 10;
    if (1000 * nvrtc_major + 10 * nvrtc_minor <= driver_version ||
        (nvrtc_major == driver_major && kind == TACK_NVRTC_CUBIN)) {
        return TACK_OK;
    }
    return tack__fail(
        TACK_ERR_DEVICE_UNAVAILABLE,
        "kernel '%s': NVRTC %d.%d is newer than the CUDA driver (%d.%d), which cannot "
        "load %s; set TACK_NVRTC to the libnvrtc of a CUDA toolkit no newer than "
        "%d.%d, or install a newer NVIDIA driver",
        kernel, nvrtc_major, nvrtc_minor, driver_major, driver_minor,
        nvrtc_major > driver_major
            ? "anything it compiles"
            : "its PTX (a newer minor version keeps only CUBINs loadable, and NVRTC "
              "has no CUBIN for this GPU)",
        driver_major, driver_minor);
}

/* tack__cuda_nvrtc_fits for the NVRTC Tack loaded and s's driver. */
static tack_status
nvrtc_fits_driver(const tack__gpu_state *s, const char *kernel, tack_nvrtc_output kind)
{
    int major = 0, minor = 0;
    tack_status st = tack_nvrtc_version(&major, &minor);
    return st == TACK_OK
               ? tack__cuda_nvrtc_fits(kernel, major, minor, s->drv->version, kind)
               : st;
}

/* cuModuleLoadData; a PTX newer than the driver reads gets the remedy. */
static tack_status
load_module(tack__gpu_state *s, const char *kernel, const void *image,
            tack__gpu_module *mod)
{
    tack__gpu_result rc = s->drv->api.module_load(mod, image);
    int major = 0, minor = 0;
    if (rc == TCU_ERROR_UNSUPPORTED_PTX_VERSION &&
        tack_nvrtc_version(&major, &minor) == TACK_OK) {
        return tack__fail(TACK_ERR_DEVICE_UNAVAILABLE,
                          "kernel '%s': the CUDA driver (%d.%d) cannot read the PTX of "
                          "NVRTC %d.%d (cuModuleLoadData: "
                          "CUDA_ERROR_UNSUPPORTED_PTX_VERSION); set TACK_NVRTC to the "
                          "libnvrtc of a CUDA toolkit no newer than the driver, or "
                          "install a newer NVIDIA driver",
                          kernel, s->drv->version / 1000, s->drv->version % 1000 / 10,
                          major, minor);
    }
    return tack__gpu_check(s, rc, "cuModuleLoadData");
}

/* Under the stand-in, hands it the CUDA source of k's module, which its emulated
 * launches (TACK_STANDIN_EXEC=emulate) compile for the host and run. Inside a guard. */
static tack_status
give_standin_source(tack__gpu_state *s, const cuda_kernel *k, tack__gpu_module mod)
{
    module_source_fn give = standin_register() ? standin_module_source : NULL;
    return give ? tack__gpu_check(s, give((tcu_module)mod, k->cuda_source),
                                  "tack_standin_cuda_module_source")
                : TACK_OK;
}

/* The module of k on s's context, compiled and loaded at its first launch there.
 * Inside a guard. */
static tack_status
module_of(cuda_kernel *k, tack__gpu_state *s, const cuda_module **out)
{
    const tack__gpu_api *api = &s->drv->api;
    pthread_mutex_lock(&k->lock);
    cuda_module *m = k->modules;
    while (m && m->ctx != s->ctx) {
        m = m->next;
    }
    tack_status st = TACK_OK;
    if (!m) {
        int major = 0, minor = 0, target = 0;
        tack_nvrtc_output kind = TACK_NVRTC_CUBIN;
        void *image = NULL;
        size_t image_nbytes = 0;
        char *log = NULL;
        st = attribute(s, TACK__GPU_ATTRIBUTE_COMPUTE_MAJOR, &major);
        if (st == TACK_OK) {
            st = attribute(s, TACK__GPU_ATTRIBUTE_COMPUTE_MINOR, &minor);
        }
        if (st == TACK_OK) {
            st = tack_nvrtc_choose(major * 10 + minor, &kind, &target);
        }
        if (st == TACK_OK) {
            st = nvrtc_fits_driver(s, k->pub.name, kind);
        }
        if (st == TACK_OK) {
            st = tack_nvrtc_compile(k->cuda_source, k->pub.name, target, kind, &image,
                                    &image_nbytes, &log);
            if (st == TACK_ERR_COMPILE) {
                st = tack__fail(TACK_ERR_COMPILE,
                                "kernel '%s' failed to compile for CUDA:\n%s",
                                k->pub.name, log ? log : "");
            }
            tack_nvrtc_free(log);
        }
        if (st == TACK_OK && !(m = tack__calloc(sizeof *m))) {
            st = tack__fail(TACK_ERR_NO_MEMORY, "out of memory loading kernel '%s'",
                            k->pub.name);
        }
        bool loaded = false;
        if (st == TACK_OK) {
            st = load_module(s, k->pub.name, image, &m->mod);
            loaded = st == TACK_OK;
        }
        if (st == TACK_OK) {
            st = give_standin_source(s, k, m->mod);
        }
        if (st == TACK_OK) {
            st = entry_of(s, m->mod, "tack_kernel_body", k->partial_size, &m->body);
        }
        if (st == TACK_OK && k->restrict_body) {
            st = entry_of(s, m->mod, "tack_kernel_body_restrict", k->partial_size,
                          &m->body_restrict);
        }
        if (st == TACK_OK && needs_finish(k)) {
            st = tack__gpu_check(
                s, api->module_get_function(&m->finish, m->mod, "tack_kernel_finish"),
                "cuModuleGetFunction");
        }
        tack_nvrtc_free(image);
        if (st == TACK_OK) {
            m->ctx = s->ctx;
            m->next = k->modules;
            k->modules = m;
        }
        else {
            /* A module whose entry points could not be looked up is of no use: the
             * next launch loads the kernel afresh. */
            if (loaded) {
                (void)api->module_unload(m->mod);
            }
            tack__free(m);
            m = NULL;
        }
    }
    pthread_mutex_unlock(&k->lock);
    *out = m;
    return st;
}

/* Queues fn on Tack's stream, its stand-in twin registered just before. */
static tack_status
launch_entry(tack__gpu_state *s, cuda_kernel *k, const char *entry,
             tack__gpu_function fn, tack_standin_twin_fn twin, unsigned grid,
             unsigned block, unsigned shared, void **args)
{
    register_twin_fn reg = standin_register();
    tack_status st = TACK_OK;
    if (reg) {
        pthread_mutex_lock(&twin_lock);
        if (reg(entry, twin, k) != 0) {
            st = tack__fail(TACK_ERR_NO_MEMORY, "out of memory for a CPU twin");
        }
    }
    if (st == TACK_OK) {
        st = tack__gpu_check(s,
                             s->drv->api.launch_kernel(fn, grid, 1, 1, block, 1, 1,
                                                       shared, s->stream, args, NULL),
                             "cuLaunchKernel");
    }
    if (reg) {
        pthread_mutex_unlock(&twin_lock);
    }
    return st;
}

/* What a launch's record says, read back: the returned value, or the failure it
 * recorded (checked: the record is device memory the kernel wrote). */
static tack_status
read_record(const cuda_kernel *k, const cuda_record *r, tack_kernel_value *result)
{
    if (r->failed) {
        bool index = r->why == TACK_KERNEL_FAIL_INDEX;
        if ((!index && r->why != TACK_KERNEL_FAIL_ZERO_DIVISION) ||
            (index && (r->name < 0 || r->name >= k->nnames))) {
            return tack__fail(TACK_ERR_BACKEND,
                              "kernel '%s' left a failure record Tack cannot read "
                              "(why %d, name %d of %d); the device memory of the "
                              "launch was overwritten",
                              k->pub.name, r->why, r->name, k->nnames);
        }
        tack__kernel_failure f = {.failed = 1,
                                  .why = r->why,
                                  .line = r->line,
                                  .axis = r->axis,
                                  .index = r->index,
                                  .extent = r->extent,
                                  .name = index ? k->names[r->name] : NULL};
        return tack__kernel_failure_status(&k->pub, &f);
    }
    result->kind = (tack_kernel_result_kind)k->pub.result_kind;
    result->i = r->result_i;
    result->f = r->result_f;
    return TACK_OK;
}

/*
 * A launch with a record (reductions, returned values, debug mode): one scratch
 * allocation on Tack's stream holds the record and the blocks' partials; the record
 * is set from the host, the body runs (unless trips is 0), then the finish, and the
 * record is read back. The host copies of the record live on this stack, so the
 * launch waits for its stream before returning, on every path once a copy is
 * queued. Inside a guard.
 */
static tack_status
launch_with_record(tack__gpu_state *s, cuda_kernel *k, const cuda_module *m,
                   const cuda_entry *e, const char *entry, void *params, unsigned grid,
                   unsigned block, int64_t trips, tack_kernel_value *result)
{
    const tack__gpu_api *api = &s->drv->api;
    size_t partials = (size_t)grid * (size_t)k->partial_size;
    size_t nbytes = sizeof(cuda_record) + partials;
    tack__gpu_ptr scratch = 0;
    tack_status st = tack__gpu_alloc_queued(s, nbytes, &scratch);
    if (st != TACK_OK) {
        return st;
    }
    cuda_record rec;
    memset(&rec, 0, sizeof rec);
    rec.partials = partials ? scratch + sizeof(cuda_record) : 0;
    uint64_t addr = scratch;
    int64_t nblocks = finish_blocks(k, trips, grid);
    void *args[3] = {params, &addr, &nblocks};
    st = tack__gpu_check(s, api->copy_htod_async(scratch, &rec, sizeof rec, s->stream),
                         "cuMemcpyHtoDAsync");
    if (st == TACK_OK && trips != 0) {
        st = launch_entry(s, k, entry, e->fn, body_twin, grid, block,
                          block * (unsigned)k->partial_size, args);
    }
    if (st == TACK_OK && m->finish) {
        st = launch_entry(s, k, "tack_kernel_finish", m->finish, finish_twin, 1, 1, 0,
                          args);
    }
    if (st == TACK_OK) {
        st = tack__gpu_check(s,
                             api->copy_dtoh_async(&rec, scratch, sizeof rec, s->stream),
                             "cuMemcpyDtoHAsync");
    }
    /* Always: the queued copies read and write this stack frame. */
    tack_status synced =
        tack__gpu_check(s, api->stream_synchronize(s->stream), "cuStreamSynchronize");
    st = st == TACK_OK ? synced : st;
    tack__gpu_free_queued(s, scratch);
    return st == TACK_OK ? read_record(k, &rec, result) : st;
}

tack_status
tack__cuda_kernel_launch(void *state, tack_kernel *kernel, const void *params,
                         size_t params_nbytes, unsigned flags,
                         tack_kernel_value *result)
{
    cuda_kernel *k = kernel->impl;
    tack__gpu_state *s = state;
    if (!s) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s' runs on CUDA: launch it on a CUDA device "
                          "(tack_kernel_launch_on)",
                          kernel->name);
    }
    int64_t trips = -1; /* unknown on the host: the grid fills the device */
    if (k->parallel && k->host_trips) {
        /* reads extents and scalars only; a debug-mode setup may fail here */
        tack_status st = tack__cpu_kernel_trips(k->cpu, params, &trips);
        if (st != TACK_OK) {
            return st;
        }
        if (trips <= 0 && !needs_finish(k)) {
            result->kind = TACK_KERNEL_RESULT_NONE;
            return TACK_OK;
        }
        trips = trips < 0 ? 0 : trips;
    }
    tack__gpu_guard g;
    tack_status st = tack__gpu_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    const cuda_module *m = NULL;
    st = module_of(k, s, &m);
    tack_kernel_value value = {TACK_KERNEL_RESULT_NONE, 0, 0.0};
    if (st == TACK_OK) {
        const cuda_entry *e = (flags & TACK_KERNEL_NOALIAS) && m->body_restrict.fn
                                  ? &m->body_restrict
                                  : &m->body;
        const char *entry =
            e == &m->body ? "tack_kernel_body" : "tack_kernel_body_restrict";
        /* a serial kernel runs as one thread; a parallel one on the blocks that fill
         * the device, fewer when the trips need fewer (the loop is grid-stride) */
        unsigned block = k->parallel ? e->block : 1, grid = k->parallel ? e->grid : 1;
        /* whole blocks for the trips, rounded up without overflow near INT64_MAX */
        int64_t blocks = trips / block + (trips % block != 0);
        if (trips > 0 && blocks < (int64_t)grid) {
            grid = (unsigned)blocks;
        }
        uint64_t one = 0; /* a kernel without parameters declares a 1-byte block */
        void *block_arg = params_nbytes ? (void *)params : (void *)&one;
        if (k->needs_ctx) {
            st = launch_with_record(s, k, m, e, entry, block_arg, grid, block, trips,
                                    &value);
        }
        else {
            uint64_t none = 0; /* no record: the kernel never touches it */
            void *args[2] = {block_arg, &none};
            st = launch_entry(s, k, entry, e->fn, body_twin, grid, block, 0, args);
        }
    }
    if (st == TACK_OK && !k->needs_ctx && (flags & TACK_KERNEL_SHARED)) {
        st = tack__gpu_check(s, s->drv->api.stream_synchronize(s->stream),
                             "cuStreamSynchronize");
    }
    tack__gpu_leave(s, &g);
    if (st == TACK_OK) {
        *result = value;
    }
    return st;
}
