/*
 * gpu_build_request.c: a GPU backend's kernel_build slot: the front end's bundle
 * for one specialization read once (emit_cuda.py's emit_cuda_bundle), its C part
 * built by the CPU backend (its disk cache makes this cheap) as the kernel's twin.
 *
 * The bundle: a header line with the launch facts, a line with the failure
 * record's names (hex-encoded UTF-8), the CUDA source, a marker line, then the C
 * source of the same specialization. Every fact is checked here, against each
 * other and against the C part, so the launch trusts them.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_kernel.h"

#define BUNDLE_HEADER "// tack-cuda-bundle "
#define BUNDLE_NAMES "// tack-cuda-names"
#define BUNDLE_TWIN "\n// tack-cuda-bundle-cpu\n"
/* More names than a kernel's arrays could have: a corrupt bundle. */
#define MAX_NAMES 4096

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
tack__gpu_kernel_build(const tack_backend *self, const char *name, const char *filename,
                       const char *source, tack_kernel **out, char **log)
{
    int result_kind = 0;
    tack__gpu_kernel probe = {0};
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
    tack__gpu_kernel *k = tack__calloc(sizeof *k);
    size_t n = (size_t)(twin - p);
    if (!k || !(k->source = tack__strndup(p, n))) {
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
