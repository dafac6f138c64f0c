/*
 * cuda_kernel.c: the CUDA backend's kernel slots (docs/kernels.md, "Kernels on
 * CUDA").
 *
 * The front end hands the build a bundle (emit_cuda.py's emit_cuda_bundle): a header
 * line with the launch facts, the CUDA source, a marker line, then the C source of
 * the same specialization. The C part is built by the CPU backend (its disk cache
 * makes this cheap) and serves twice: its tack_kernel_trips sizes the grid on the
 * host when the trip count needs only extents and scalars, and under the stand-in
 * driver it is the CPU twin that computes the launch. The CUDA part is compiled by
 * NVRTC at the first launch on a context (a CUBIN for the device's compute
 * capability, PTX for the highest one NVRTC knows below it), loaded with
 * cuModuleLoadData and kept per context for the life of the process.
 *
 * A launch is queued on Tack's stream and returns; a launch with TACK_KERNEL_SHARED
 * (an argument's buffer is shared with another library) synchronizes first.
 * Reductions, returned values and debug mode are refused for now
 * (TACK_ERR_UNSUPPORTED): their device side exists, their launch side does not.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "tack/dtype.h"
#include "tack/nvrtc.h"

#define BUNDLE_HEADER "// tack-cuda-bundle "
#define BUNDLE_TWIN "\n// tack-cuda-bundle-cpu\n"
#define FIXED_BLOCK 256

/* An entry point of a loaded module and its launch shape. */
typedef struct cuda_entry {
    tcu_function fn; /* NULL when the kernel has no such entry */
    unsigned block;  /* threads per block: the occupancy API's, or FIXED_BLOCK */
    unsigned grid;   /* blocks of that size that fill the device */
} cuda_entry;

/* One context's loaded module of a kernel. */
typedef struct cuda_module {
    tcu_context ctx;
    tcu_module mod;
    cuda_entry body, body_restrict;
    struct cuda_module *next;
} cuda_module;

typedef struct cuda_kernel {
    tack_kernel pub;   /* impl points back here */
    tack_kernel *cpu;  /* Borrowed: the CPU build of the same plan (kept for life) */
    char *cuda_source; /* Owned */
    int parallel, host_trips, needs_ctx, restrict_body;
    pthread_mutex_t lock; /* guards modules */
    cuda_module *modules; /* Owned: never unloaded (kernels live for the process) */
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

/* The stand-in's twin registry, or NULL on a real driver: looked up once (the
 * process has one driver, never unloaded), so a launch pays no dlopen. */
static register_twin_fn standin_twin_registry;
static pthread_once_t standin_probe = PTHREAD_ONCE_INIT;

static void
probe_standin(void)
{
    const tack__cuda_driver *drv = NULL; /* loaded: a device is open */
    void *h = tack__cuda_driver_get(&drv) == TACK_OK
                  ? dlopen(drv->path, RTLD_NOW | RTLD_NOLOAD)
                  : NULL;
    if (!h) {
        return;
    }
    void *sym = dlsym(h, "tack_standin_cuda_register_twin");
    dlclose(h);
    memcpy(&standin_twin_registry, &sym, sizeof sym);
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

tack_status
tack__cuda_kernel_build(const tack_backend *self, const char *name,
                        const char *filename, const char *source, tack_kernel **out,
                        char **log)
{
    int partial_size = 0, result_kind = 0;
    cuda_kernel probe = {0};
    const char *twin = strstr(source, BUNDLE_TWIN);
    const char *p = source + strlen(BUNDLE_HEADER);
    if (strncmp(source, BUNDLE_HEADER, strlen(BUNDLE_HEADER)) != 0 || !twin ||
        !read_fact(&p, "parallel", &probe.parallel) ||
        !read_fact(&p, "host_trips", &probe.host_trips) ||
        !read_fact(&p, "needs_ctx", &probe.needs_ctx) ||
        !read_fact(&p, "restrict", &probe.restrict_body) ||
        !read_fact(&p, "partial_size", &partial_size) ||
        !read_fact(&p, "result_kind", &result_kind)) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': the CUDA backend builds the bundle of "
                          "tack.kernel's CUDA emitter (CUDA and C source), not plain "
                          "source",
                          name);
    }
    if (partial_size > 0 || result_kind != 0 || probe.needs_ctx) {
        return tack__fail(TACK_ERR_UNSUPPORTED,
                          "kernel '%s': reductions, returned values and debug mode "
                          "(TACK_DEBUG=1) do not run on CUDA arrays yet; run this "
                          "kernel on CPU arrays (tack.array(x.numpy()) copies one "
                          "to the host), or without debug mode",
                          name);
    }
    tack_kernel *cpu = NULL;
    tack_status st = tack__cpu_kernel_build(&tack__backend_cpu, name, filename,
                                            twin + strlen(BUNDLE_TWIN), &cpu, log);
    if (st != TACK_OK) {
        return st;
    }
    cuda_kernel *k = calloc(1, sizeof *k);
    const char *body = strchr(source, '\n');
    size_t n = (size_t)(twin - body);
    if (!k || !(k->cuda_source = malloc(n + 1))) {
        free(k);
        return tack__fail(TACK_ERR_NO_MEMORY, "out of memory building kernel '%s'",
                          name);
    }
    memcpy(k->cuda_source, body, n);
    k->cuda_source[n] = '\0';
    k->parallel = probe.parallel;
    k->host_trips = probe.host_trips;
    k->restrict_body = probe.restrict_body;
    k->cpu = cpu;
    pthread_mutex_init(&k->lock, NULL);
    k->pub = *cpu;
    k->pub.backend = self;
    k->pub.impl = k;
    *out = &k->pub;
    return TACK_OK;
}

/* The CPU twin (standin_twin.h): the parameter block with device addresses turned
 * into host memory, run by the CPU build of the same plan. */
static int
run_twin(const tack_standin_launch *l, void *user)
{
    cuda_kernel *k = user;
    size_t nbytes = tack_kernel_params_size(k->pub.nparams, k->pub.param_key);
    if (l->params_nbytes < nbytes) {
        return 1;
    }
    uint64_t small[256];
    unsigned char *block =
        nbytes <= sizeof small ? (unsigned char *)small : malloc(nbytes);
    if (!block) {
        return 1;
    }
    memcpy(block, l->params, nbytes);
    int bad = 0;
    unsigned char *p = block;
    for (int i = 0; i < k->pub.nparams && !bad; i++) {
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
            bad = host == NULL;
            memcpy(p, &h, 8);
        }
        p += 8 * (ndim + 1);
    }
    tack_kernel_value ignored;
    if (!bad) {
        bad = tack__cpu_kernel_launch(NULL, k->cpu, block, nbytes, 0, &ignored) !=
              TACK_OK;
    }
    if (block != (unsigned char *)small) {
        free(block);
    }
    return bad;
}

/* A device attribute of s's device. Inside a guard. */
static tack_status
attribute(tack__cuda_state *s, tcu_device_attribute attr, int *out)
{
    return tack__cuda_check(s, s->drv->api.cuDeviceGetAttribute(out, attr, s->device),
                            "cuDeviceGetAttribute");
}

/* The entry point `name` of mod and the block size and grid that fill the device
 * with it: cuOccupancyMaxPotentialBlockSize's, or FIXED_BLOCK threads per block and
 * as many blocks as the multiprocessors hold when the driver lacks it. Inside a
 * guard. */
static tack_status
entry_of(tack__cuda_state *s, tcu_module mod, const char *name, cuda_entry *out)
{
    const tack__cuda_api *api = &s->drv->api;
    tack_status st = tack__cuda_check(s, api->cuModuleGetFunction(&out->fn, mod, name),
                                      "cuModuleGetFunction");
    int grid = 0, block = 0;
    if (st == TACK_OK && api->cuOccupancyMaxPotentialBlockSize) {
        st = tack__cuda_check(
            s,
            api->cuOccupancyMaxPotentialBlockSize(&grid, &block, out->fn, NULL, 0, 0),
            "cuOccupancyMaxPotentialBlockSize");
    }
    else if (st == TACK_OK) {
        int sms = 0, threads = 0;
        st = attribute(s, TCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms);
        if (st == TACK_OK) {
            st = attribute(s, TCU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                           &threads);
        }
        block = FIXED_BLOCK;
        grid = sms * (threads / FIXED_BLOCK);
    }
    out->block = block > 0 ? (unsigned)block : FIXED_BLOCK;
    out->grid = grid > 0 ? (unsigned)grid : 1;
    return st;
}

/* The module of k on s's context, compiled and loaded at its first launch there.
 * Inside a guard. */
static tack_status
module_of(cuda_kernel *k, tack__cuda_state *s, const cuda_module **out)
{
    const tack__cuda_api *api = &s->drv->api;
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
        st = attribute(s, TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major);
        if (st == TACK_OK) {
            st = attribute(s, TCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor);
        }
        if (st == TACK_OK) {
            st = tack_nvrtc_choose(major * 10 + minor, &kind, &target);
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
        if (st == TACK_OK && !(m = calloc(1, sizeof *m))) {
            st = tack__fail(TACK_ERR_NO_MEMORY, "out of memory loading kernel '%s'",
                            k->pub.name);
        }
        if (st == TACK_OK) {
            st = tack__cuda_check(s, api->cuModuleLoadData(&m->mod, image),
                                  "cuModuleLoadData");
        }
        if (st == TACK_OK) {
            st = entry_of(s, m->mod, "tack_kernel_body", &m->body);
        }
        if (st == TACK_OK && k->restrict_body) {
            st = entry_of(s, m->mod, "tack_kernel_body_restrict", &m->body_restrict);
        }
        tack_nvrtc_free(image);
        if (st == TACK_OK) {
            m->ctx = s->ctx;
            m->next = k->modules;
            k->modules = m;
        }
        else {
            free(m); /* a loaded module of a failed lookup stays with its context */
            m = NULL;
        }
    }
    pthread_mutex_unlock(&k->lock);
    *out = m;
    return st;
}

tack_status
tack__cuda_kernel_launch(void *state, tack_kernel *kernel, const void *params,
                         size_t params_nbytes, unsigned flags,
                         tack_kernel_value *result)
{
    cuda_kernel *k = kernel->impl;
    tack__cuda_state *s = state;
    if (!s) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s' runs on CUDA: launch it on a CUDA device "
                          "(tack_kernel_launch_on)",
                          kernel->name);
    }
    int64_t trips = -1; /* unknown on the host: the grid fills the device */
    if (k->parallel && k->host_trips) {
        tack_kernel_ctx ctx;
        memset(&ctx, 0, sizeof ctx);
        tack__cpu_kernel *cpu = k->cpu->impl;
        trips = cpu->trips(params, &ctx); /* reads extents and scalars only */
        if (trips <= 0) {
            result->kind = TACK_KERNEL_RESULT_NONE;
            return TACK_OK;
        }
    }
    tack__cuda_guard g;
    tack_status st = tack__cuda_enter(s, &g);
    if (st != TACK_OK) {
        return st;
    }
    const cuda_module *m = NULL;
    st = module_of(k, s, &m);
    if (st == TACK_OK) {
        const cuda_entry *e = (flags & TACK_KERNEL_NOALIAS) && m->body_restrict.fn
                                  ? &m->body_restrict
                                  : &m->body;
        /* a serial kernel runs as one thread; a parallel one on the blocks that fill
         * the device, fewer when the trips need fewer (the loop is grid-stride) */
        unsigned block = k->parallel ? e->block : 1, grid = k->parallel ? e->grid : 1;
        if (trips > 0 && (trips + block - 1) / block < (int64_t)grid) {
            grid = (unsigned)((trips + block - 1) / block);
        }
        uint64_t none = 0; /* the context record: these kernels need none */
        uint64_t one = 0;  /* a kernel without parameters declares a 1-byte block */
        void *args[2] = {params_nbytes ? (void *)params : (void *)&one, &none};
        register_twin_fn reg = standin_register();
        if (reg) {
            pthread_mutex_lock(&twin_lock);
            const char *entry =
                e == &m->body ? "tack_kernel_body" : "tack_kernel_body_restrict";
            if (reg(entry, run_twin, k) != 0) {
                st = tack__fail(TACK_ERR_NO_MEMORY, "out of memory for a CPU twin");
            }
        }
        if (st == TACK_OK) {
            st = tack__cuda_check(
                s,
                s->drv->api.cuLaunchKernel(e->fn, grid, 1, 1, block, 1, 1, 0, s->stream,
                                           args, NULL),
                "cuLaunchKernel");
        }
        if (reg) {
            pthread_mutex_unlock(&twin_lock);
        }
    }
    if (st == TACK_OK && (flags & TACK_KERNEL_SHARED)) {
        st = tack__cuda_check(s, s->drv->api.cuStreamSynchronize(s->stream),
                              "cuStreamSynchronize");
    }
    tack__cuda_leave(s, &g);
    if (st == TACK_OK) {
        result->kind = TACK_KERNEL_RESULT_NONE;
    }
    return st;
}
