/*
 * standin_module.c: modules, functions and launches on the stand-in driver, and the
 * registry of CPU twins (standin_twin.h).
 *
 * cuModuleLoadData accepts what the driver accepts, checked as far as the stand-in can:
 * PTX text (its `.version` must be one a CUDA 13.0 driver reads, at most 9.0, and its
 * `.target` an architecture a compute capability 9.0 device runs), or a CUBIN (a 64-bit
 * ELF for EM_CUDA built for sm_90). Each entry's parameter layout is read from the
 * image (PTX `.param` declarations, or the CUBIN's .nv.info.<entry> section), so a
 * launch packs exactly the bytes the kernel would see. Fat binaries are refused with
 * CUDA_ERROR_NOT_SUPPORTED: the stand-in does not unpack them.
 *
 * A launch runs its entry's CPU twin, or under TACK_STANDIN_EXEC=emulate the module's
 * CUDA source compiled for the host (standin_emulate.c), given beside the image with
 * tack_standin_cuda_module_source.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_layer.h"

#define MAX_PARAMS 128
#define STANDIN_PTX_MAX_MAJOR 9 /* PTX ISA 9.0 comes with CUDA 13.0 */
#define STANDIN_PTX_MAX_MINOR 0
#define STANDIN_SM 90
#define EM_CUDA 190

struct CUmod_st {
    struct standin_context *ctx;
    bool alive;
    bool cubin;
    unsigned char *image; /* a private copy */
    size_t image_nbytes;
    char *source; /* its CUDA source, for emulated launches
                     (tack_standin_cuda_module_source) */
    struct CUmod_st *next;
};

struct CUfunc_st {
    struct CUmod_st *mod;
    char *name;
    unsigned nparams;
    size_t offset[MAX_PARAMS], size[MAX_PARAMS];
    size_t params_nbytes;
    void *emulated; /* its host-compiled entry (emulated launches), once looked up */
    struct CUfunc_st *next;
};

typedef struct standin_launch_op {
    char *entry;
    struct standin_context *ctx;
    struct standin_queue *stream; /* the stream it was queued on */
    tack_standin_twin_fn fn;
    void *user;
    void *emulated; /* instead of fn: the module's own code (standin_emulate.c) */
    unsigned grid[3], block[3];
    unsigned shared;
    unsigned char *params;
    size_t params_nbytes;
    const standin_stamp *use; /* while it runs: where it was queued */
} standin_launch_op;

typedef struct twin {
    char *entry;
    tack_standin_twin_fn fn;
    void *user;
    struct twin *next;
} twin;

static struct CUmod_st *modules;
static struct CUfunc_st *functions;
static twin *twins;

/* ---- the twin registry ----------------------------------------------------------- */

STANDIN_EXPORT int
tack_standin_cuda_register_twin(const char *entry, tack_standin_twin_fn fn, void *user)
{
    pthread_mutex_lock(&standin_lock);
    int rc = -1;
    twin *t = NULL;
    for (t = twins; t && strcmp(t->entry, entry) != 0; t = t->next) {
    }
    if (t) {
        t->fn = fn;
        t->user = user;
        rc = 0;
    }
    else if ((t = calloc(1, sizeof *t)) && (t->entry = strdup(entry))) {
        t->fn = fn;
        t->user = user;
        t->next = twins;
        twins = t;
        rc = 0;
    }
    else {
        free(t);
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

static const twin *
twin_of(const char *entry)
{
    for (const twin *t = twins; t; t = t->next) {
        if (strcmp(t->entry, entry) == 0) {
            return t;
        }
    }
    return NULL;
}

/* The twin's translate: addresses as the launch's stream sees them when it runs. */
static void *
launch_translate(void *launch, uint64_t device_address, size_t nbytes)
{
    const standin_launch_op *l = launch;
    return standin_queued_translate(l->ctx, l->use, device_address, nbytes);
}

bool
standin_launch_run(standin_launch_op *l, const standin_stamp *use)
{
    l->use = use;
    if (l->emulated) {
        standin_launch_args a = {.entry = l->entry,
                                 .ctx = l->ctx,
                                 .use = use,
                                 .grid = {l->grid[0], l->grid[1], l->grid[2]},
                                 .block = {l->block[0], l->block[1], l->block[2]},
                                 .shared = l->shared,
                                 .params = l->params,
                                 .params_nbytes = l->params_nbytes};
        return standin_emulate_run(l->emulated, &a);
    }
    tack_standin_launch launch = {
        .entry = l->entry,
        .grid = {l->grid[0], l->grid[1], l->grid[2]},
        .block = {l->block[0], l->block[1], l->block[2]},
        .params = l->params,
        .params_nbytes = l->params_nbytes,
        .translate = launch_translate,
        .translate_ctx = l,
    };
    /* The twin runs with the stand-in's lock held: it must not call the CUDA API. */
    return l->fn(&launch, l->user) == 0;
}

void
standin_launch_free(standin_launch_op *l)
{
    if (l) {
        free(l->entry);
        free(l->params);
        free(l);
    }
}

/* ---- reading images -------------------------------------------------------------- */

static uint64_t
read_le(const unsigned char *p, unsigned nbytes)
{
    uint64_t v = 0;
    for (unsigned k = nbytes; k-- > 0;) {
        v = (v << 8) | p[k];
    }
    return v;
}

/* The PTX text with comments blanked, or NULL. Owned by the caller. */
static char *
ptx_without_comments(const char *text, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) {
        return NULL;
    }
    memcpy(s, text, n);
    s[n] = '\0';
    for (char *p = s; *p; p++) {
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') {
                *p++ = ' ';
            }
            if (!*p) {
                break;
            }
        }
        else if (p[0] == '/' && p[1] == '*') {
            char *end = strstr(p + 2, "*/");
            char *stop = end ? end + 2 : p + strlen(p);
            memset(p, ' ', (size_t)(stop - p));
            p = stop - 1;
        }
    }
    return s;
}

/* Reads the decimal number at p, after blanks. Returns the end, or NULL. */
static const char *
read_number(const char *p, long *out)
{
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    if (!isdigit((unsigned char)*p)) {
        return NULL;
    }
    char *end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno != 0) {
        return NULL;
    }
    *out = v;
    return end;
}

/* Copies the next token of p (up to a blank, ',' or ')') into word. Returns the end of
 * the token, or NULL at the end of the list. */
static const char *
read_token(const char *p, const char *stop, char *word, size_t word_nbytes)
{
    while (p < stop && isspace((unsigned char)*p)) {
        p++;
    }
    size_t n = 0;
    while (p < stop && !isspace((unsigned char)*p) && *p != ',' && *p != ')') {
        if (n + 1 < word_nbytes) {
            word[n++] = *p;
        }
        p++;
    }
    word[n] = '\0';
    return n ? p : NULL;
}

static standin_rc
check_ptx(const char *text)
{
    const char *v = strstr(text, ".version");
    long major = 0, minor = 0;
    const char *p = v ? read_number(v + strlen(".version"), &major) : NULL;
    if (!p || *p != '.' || !read_number(p + 1, &minor)) {
        return TCU_ERROR_INVALID_PTX;
    }
    if (major > STANDIN_PTX_MAX_MAJOR ||
        (major == STANDIN_PTX_MAX_MAJOR && minor > STANDIN_PTX_MAX_MINOR)) {
        return TCU_ERROR_UNSUPPORTED_PTX_VERSION; /* newer than this driver reads */
    }
    const char *t = strstr(text, ".target");
    long sm = 0;
    if (t) {
        t += strlen(".target");
        while (*t == ' ' || *t == '\t') {
            t++;
        }
    }
    if (!t || strncmp(t, "sm_", 3) != 0 || !read_number(t + 3, &sm)) {
        return TCU_ERROR_INVALID_PTX;
    }
    /* PTX for an older architecture is compiled up; a newer one cannot run here
     * (as documented, unverified on hardware: the driver's code for this case). */
    return sm <= STANDIN_SM ? STANDIN_OK : TCU_ERROR_INVALID_PTX;
}

/* A CUBIN's section header table entry k: name offset, file offset and size. */
typedef struct section {
    uint32_t name;
    uint64_t offset, size;
} section;

static bool
cubin_section(const unsigned char *img, size_t n, unsigned k, section *out)
{
    uint64_t shoff = read_le(img + 0x28, 8);
    unsigned shentsize = (unsigned)read_le(img + 0x3A, 2);
    uint64_t at = shoff + (uint64_t)k * shentsize;
    if (shentsize < 0x40 || at > n || n - at < 0x40) {
        return false;
    }
    out->name = (uint32_t)read_le(img + at, 4);
    out->offset = read_le(img + at + 0x18, 8);
    out->size = read_le(img + at + 0x20, 8);
    return out->offset <= n && out->size <= n - out->offset;
}

/* Finds section `name` in a checked CUBIN. */
static bool
cubin_find(const unsigned char *img, size_t n, const char *name, section *out)
{
    unsigned shnum = (unsigned)read_le(img + 0x3C, 2);
    unsigned shstrndx = (unsigned)read_le(img + 0x3E, 2);
    section strings;
    if (shstrndx >= shnum || !cubin_section(img, n, shstrndx, &strings)) {
        return false;
    }
    size_t len = strlen(name);
    for (unsigned k = 0; k < shnum; k++) {
        section s;
        if (cubin_section(img, n, k, &s) && s.name < strings.size &&
            strings.size - s.name > len &&
            memcmp(img + strings.offset + s.name, name, len + 1) == 0) {
            *out = s;
            return true;
        }
    }
    return false;
}

static standin_rc
check_cubin(const unsigned char *img, size_t n)
{
    if (n < 0x40 || img[4] != 2 /* ELFCLASS64 */ || img[5] != 1 /* little-endian */ ||
        read_le(img + 0x12, 2) != EM_CUDA) {
        return TCU_ERROR_INVALID_IMAGE;
    }
    uint32_t flags = (uint32_t)read_le(img + 0x30, 4);
    unsigned abi = img[8];
    /* ELF ABI version 8 (CUDA 12.8 on) keeps the SM in bits 8-15, older ones in 0-7. */
    unsigned sm = abi >= 8 ? (flags >> 8) & 0xFF : flags & 0xFF;
    /* A CUBIN runs on its own major architecture, at its minor or a newer one. */
    if (sm / 10 != STANDIN_SM / 10 || sm > STANDIN_SM) {
        return TCU_ERROR_NO_BINARY_FOR_GPU;
    }
    return STANDIN_OK;
}

/* The size, in bytes, of a PTX parameter type such as .u64, .b8 or .f32. */
static size_t
ptx_type_size(const char *type)
{
    long bits = 0;
    if (type[0] == '.' && type[1] && strchr("subf", type[1]) &&
        read_number(type + 2, &bits) && bits % 8 == 0 && bits > 0) {
        return (size_t)bits / 8;
    }
    if (strncmp(type, ".pred", 5) == 0) {
        return 1;
    }
    return 0;
}

/* Reads the `.param` list of `.entry name(...)` into f. */
static standin_rc
ptx_params(const char *text, struct CUfunc_st *f)
{
    size_t len = strlen(f->name);
    const char *p = text;
    while ((p = strstr(p, ".entry")) != NULL) {
        p += 6;
        while (isspace((unsigned char)*p)) {
            p++;
        }
        if (strncmp(p, f->name, len) == 0 &&
            (p[len] == '(' || isspace((unsigned char)p[len]))) {
            break;
        }
    }
    if (!p) {
        return STANDIN_ERR_NOT_FOUND;
    }
    const char *open = strchr(p, '('), *close = open ? strchr(open, ')') : NULL;
    const char *body = strchr(p, '{');
    if (!open || !close || (body && body < open)) {
        return STANDIN_OK; /* no parameter list */
    }
    size_t at = 0;
    for (const char *q = open; (q = strstr(q, ".param")) && q < close; q += 6) {
        size_t align = 0, elem = 0, count = 1;
        const char *r = q + 6;
        char word[64];
        const char *next = NULL;
        while ((next = read_token(r, close, word, sizeof word)) != NULL) {
            r = next;
            long a = 0;
            const char *after = strcmp(word, ".align") == 0 ? read_number(r, &a) : NULL;
            if (after && a > 0) {
                align = (size_t)a;
                r = after;
            }
            else if (word[0] == '.' && !elem) {
                elem = ptx_type_size(word);
            }
            else if (word[0] != '.') {
                const char *bracket = strchr(word, '[');
                if (bracket) {
                    count = (size_t)strtoull(bracket + 1, NULL, 10);
                }
                break; /* the name ends the declaration */
            }
        }
        if (!elem || f->nparams == MAX_PARAMS) {
            return TCU_ERROR_INVALID_PTX;
        }
        align = align ? align : elem;
        at = (at + align - 1) / align * align;
        f->offset[f->nparams] = at;
        f->size[f->nparams] = elem * count;
        at += elem * count;
        f->nparams++;
    }
    f->params_nbytes = at;
    return STANDIN_OK;
}

/* Reads EIATTR_KPARAM_INFO (0x17) records of .nv.info.<name>: one per parameter, with
 * its ordinal, offset and size; EIATTR_CBANK_PARAM_SIZE (0x19) gives the total. */
static standin_rc
cubin_params(const unsigned char *img, size_t n, struct CUfunc_st *f)
{
    char name[512];
    section s;
    if ((size_t)snprintf(name, sizeof name, ".text.%s", f->name) >= sizeof name ||
        !cubin_find(img, n, name, &s)) {
        return STANDIN_ERR_NOT_FOUND;
    }
    snprintf(name, sizeof name, ".nv.info.%s", f->name);
    if (!cubin_find(img, n, name, &s)) {
        return STANDIN_OK; /* a kernel without parameters */
    }
    const unsigned char *p = img + s.offset, *end = p + s.size;
    while (end - p >= 4) {
        unsigned format = p[0], attr = p[1];
        size_t value = (size_t)read_le(p + 2, 2);
        size_t record = format == 4 ? 4 + value : 4;
        if ((size_t)(end - p) < record) {
            return TCU_ERROR_INVALID_IMAGE;
        }
        if (format == 4 && attr == 0x17 && value >= 12) {
            unsigned ordinal = (unsigned)read_le(p + 8, 2);
            size_t offset = (size_t)read_le(p + 10, 2);
            size_t size = (size_t)(read_le(p + 12, 4) >> 18) & 0x3FFF;
            if (ordinal >= MAX_PARAMS) {
                return TCU_ERROR_INVALID_IMAGE;
            }
            f->offset[ordinal] = offset;
            f->size[ordinal] = size;
            f->nparams = ordinal + 1 > f->nparams ? ordinal + 1 : f->nparams;
        }
        else if (format == 3 && attr == 0x19) {
            f->params_nbytes = value;
        }
        p += record;
    }
    return STANDIN_OK;
}

/* ---- modules and functions ------------------------------------------------------- */

static standin_rc
load_image(struct standin_context *ctx, const unsigned char *img, struct CUmod_st **out)
{
    bool cubin = img[0] == 0x7F && img[1] == 'E' && img[2] == 'L' && img[3] == 'F';
    if (read_le(img, 4) == 0xBA55ED50u) {
        return STANDIN_ERR_NOT_SUPPORTED; /* a fat binary */
    }
    size_t n = 0;
    standin_rc rc;
    if (cubin) {
        /* An ELF image carries its size in its headers: the section table ends it. */
        uint64_t shoff = read_le(img + 0x28, 8);
        n = (size_t)(shoff + read_le(img + 0x3C, 2) * read_le(img + 0x3A, 2));
        rc = check_cubin(img, n);
    }
    else {
        n = strlen((const char *)img) + 1;
        char *text = ptx_without_comments((const char *)img, n - 1);
        rc = text ? check_ptx(text) : STANDIN_ERR_OUT_OF_MEMORY;
        free(text);
    }
    if (rc != STANDIN_OK) {
        return rc;
    }
    struct CUmod_st *m = calloc(1, sizeof *m);
    unsigned char *copy = malloc(n);
    if (!m || !copy) {
        free(m);
        free(copy);
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    memcpy(copy, img, n);
    m->image = copy;
    m->image_nbytes = n;
    m->cubin = cubin;
    m->ctx = ctx;
    m->alive = true;
    m->next = modules; /* modules are kept for the life of the process */
    modules = m;
    *out = m;
    return STANDIN_OK;
}

STANDIN_EXPORT tcu_result
cuModuleLoadData(tcu_module *module, const void *image)
{
    standin_rc rc = standin_enter("cuModuleLoadData");
    struct standin_context *ctx = NULL;
    struct CUmod_st *m = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK) {
        rc = module && image ? load_image(ctx, image, &m) : STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *module = m;
    }
    return standin_leave(rc, "cuModuleLoadData", "kind=%s, bytes=%zu, module=%p",
                         m ? (m->cubin ? "cubin" : "ptx") : "-",
                         m ? m->image_nbytes : 0, (void *)m);
}

static struct CUmod_st *
known_module(tcu_module handle, const struct standin_context *ctx)
{
    for (struct CUmod_st *m = modules; m; m = m->next) {
        if (m == handle) {
            return m->alive && m->ctx == ctx ? m : NULL;
        }
    }
    return NULL;
}

STANDIN_EXPORT tcu_result
cuModuleUnload(tcu_module hmod)
{
    standin_rc rc = standin_enter("cuModuleUnload");
    struct standin_context *ctx = NULL;
    struct CUmod_st *m = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && !(m = known_module(hmod, ctx))) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    if (rc == STANDIN_OK) {
        m->alive = false; /* launches already queued keep what they need */
        free(m->image);
        m->image = NULL;
        free(m->source);
        m->source = NULL;
    }
    return standin_leave(rc, "cuModuleUnload", "module=%p", (void *)hmod);
}

/* The stand-in's own entry point (standin_twin.h): the CUDA source the module was
 * built from, for emulated launches. A later call replaces it. */
STANDIN_EXPORT int
tack_standin_cuda_module_source(struct CUmod_st *module, const char *cuda_source)
{
    standin_rc rc = standin_enter("tack_standin_cuda_module_source");
    struct standin_context *ctx = NULL;
    struct CUmod_st *m = NULL;
    char *copy = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && !cuda_source) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK && !(m = known_module(module, ctx))) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    if (rc == STANDIN_OK && !(copy = strdup(cuda_source))) {
        rc = STANDIN_ERR_OUT_OF_MEMORY;
    }
    if (rc == STANDIN_OK) {
        free(m->source);
        m->source = copy;
    }
    return standin_leave(rc, "tack_standin_cuda_module_source", "module=%p, bytes=%zu",
                         (void *)module, copy ? strlen(copy) : 0);
}

STANDIN_EXPORT tcu_result
cuModuleGetFunction(tcu_function *hfunc, tcu_module hmod, const char *name)
{
    standin_rc rc = standin_enter("cuModuleGetFunction");
    struct standin_context *ctx = NULL;
    struct CUmod_st *m = NULL;
    struct CUfunc_st *f = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && (!hfunc || !name)) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK && !(m = known_module(hmod, ctx))) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    if (rc == STANDIN_OK &&
        (!(f = calloc(1, sizeof *f)) || !(f->name = strdup(name)))) {
        rc = STANDIN_ERR_OUT_OF_MEMORY;
    }
    if (rc == STANDIN_OK) {
        if (m->cubin) {
            rc = cubin_params(m->image, m->image_nbytes, f);
        }
        else {
            char *text =
                ptx_without_comments((const char *)m->image, m->image_nbytes - 1);
            rc = text ? ptx_params(text, f) : STANDIN_ERR_OUT_OF_MEMORY;
            free(text);
        }
    }
    if (rc == STANDIN_OK) {
        f->mod = m;
        f->next = functions;
        functions = f;
        *hfunc = f;
    }
    else if (f) {
        free(f->name);
        free(f);
    }
    return standin_leave(rc, "cuModuleGetFunction", "name=%s, params=%u, bytes=%zu",
                         name ? name : "(null)", rc == STANDIN_OK ? f->nparams : 0,
                         rc == STANDIN_OK ? f->params_nbytes : 0);
}

/* ---- launches -------------------------------------------------------------------- */

static struct CUfunc_st *
known_function(tcu_function handle)
{
    for (struct CUfunc_st *f = functions; f; f = f->next) {
        if (f == handle) {
            return f->mod->alive ? f : NULL;
        }
    }
    return NULL;
}

static standin_rc
check_geometry(const unsigned grid[3], const unsigned block[3], unsigned shared)
{
    static const unsigned grid_max[3] = {2147483647u, 65535u, 65535u};
    static const unsigned block_max[3] = {1024u, 1024u, 64u};
    unsigned long long threads = 1;
    for (int k = 0; k < 3; k++) {
        if (grid[k] == 0 || block[k] == 0 || grid[k] > grid_max[k] ||
            block[k] > block_max[k]) {
            return STANDIN_ERR_INVALID_VALUE;
        }
        threads *= block[k];
    }
    if (threads > 1024 || shared > 49152) {
        return STANDIN_ERR_INVALID_VALUE;
    }
    return STANDIN_OK;
}

/* Packs the parameters as the kernel sees them, from either form cuLaunchKernel takes.
 */
static standin_rc
pack_params(const struct CUfunc_st *f, void **kernelParams, void **extra,
            unsigned char **out)
{
    if (kernelParams && extra) {
        return STANDIN_ERR_INVALID_VALUE; /* one form or the other */
    }
    unsigned char *buf = calloc(1, f->params_nbytes ? f->params_nbytes : 1);
    if (!buf) {
        return STANDIN_ERR_OUT_OF_MEMORY;
    }
    standin_rc rc = STANDIN_OK;
    if (extra) {
        const void *from = NULL;
        size_t size = (size_t)-1;
        for (size_t k = 0; (uintptr_t)extra[k] != TCU_LAUNCH_PARAM_END_HANDLE; k += 2) {
            uintptr_t key = (uintptr_t)extra[k];
            if (key == TCU_LAUNCH_PARAM_BUFFER_POINTER_HANDLE) {
                from = extra[k + 1];
            }
            else if (key == TCU_LAUNCH_PARAM_BUFFER_SIZE_HANDLE && extra[k + 1]) {
                memcpy(&size, extra[k + 1], sizeof size);
            }
            else {
                rc = STANDIN_ERR_INVALID_VALUE;
                break;
            }
        }
        if (rc == STANDIN_OK && (!from || size != f->params_nbytes)) {
            rc = STANDIN_ERR_INVALID_VALUE;
        }
        if (rc == STANDIN_OK) {
            memcpy(buf, from, size);
        }
    }
    else if (f->nparams > 0) {
        for (unsigned k = 0; k < f->nparams && rc == STANDIN_OK; k++) {
            if (!kernelParams || !kernelParams[k]) {
                rc = STANDIN_ERR_INVALID_VALUE;
            }
            else {
                memcpy(buf + f->offset[k], kernelParams[k], f->size[k]);
            }
        }
    }
    if (rc != STANDIN_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    return STANDIN_OK;
}

/* The first bytes of the packed parameters in hex, for the call log. */
static void
params_hex(const unsigned char *params, size_t n, char *out, size_t out_nbytes)
{
    size_t shown = n < (out_nbytes - 4) / 2 ? n : (out_nbytes - 4) / 2;
    for (size_t k = 0; k < shown; k++) {
        snprintf(out + 2 * k, 3, "%02x", params[k]);
    }
    memcpy(out + 2 * shown, shown < n ? "..." : "", shown < n ? 4 : 1);
}

static standin_rc
launch(struct standin_context *ctx, struct CUfunc_st *f, const unsigned grid[3],
       const unsigned block[3], unsigned shared, tcu_stream hStream,
       void **kernelParams, void **extra, char *hex, size_t hex_nbytes)
{
    struct standin_queue *s = NULL;
    standin_rc rc = cuda_stream(ctx, hStream, &s);
    if (rc == STANDIN_OK && f->mod->ctx != ctx) {
        rc = STANDIN_ERR_INVALID_HANDLE; /* a function of another context */
    }
    if (rc == STANDIN_OK) {
        rc = check_geometry(grid, block, shared);
    }
    unsigned char *params = NULL;
    if (rc == STANDIN_OK) {
        rc = pack_params(f, kernelParams, extra, &params);
    }
    if (rc == STANDIN_OK) {
        params_hex(params, f->params_nbytes, hex, hex_nbytes);
    }
    const twin *t = rc == STANDIN_OK && !standin.emulate ? twin_of(f->name) : NULL;
    if (rc == STANDIN_OK && standin.emulate && !f->emulated) {
        f->emulated = standin_emulate_entry(f->mod->source, f->name);
    }
    if (rc == STANDIN_OK && (standin.emulate ? !f->emulated : !t)) {
        rc = STANDIN_ERR_NOT_SUPPORTED; /* nothing could compute it (reason logged) */
    }
    standin_launch_op *l = NULL;
    standin_op *op = NULL;
    if (rc == STANDIN_OK &&
        (!(l = calloc(1, sizeof *l)) || !(l->entry = strdup(f->name)) ||
         !(op = standin_op_new(OP_LAUNCH)))) {
        rc = STANDIN_ERR_OUT_OF_MEMORY;
    }
    if (rc != STANDIN_OK) {
        free(params);
        standin_launch_free(l);
        return rc;
    }
    l->ctx = ctx;
    l->stream = s;
    if (t) {
        l->fn = t->fn;
        l->user = t->user;
    }
    l->emulated = t ? NULL : f->emulated;
    l->shared = shared;
    memcpy(l->grid, grid, sizeof l->grid);
    memcpy(l->block, block, sizeof l->block);
    l->params = params;
    l->params_nbytes = f->params_nbytes;
    op->launch = l;
    standin_enqueue(s, op);
    return STANDIN_OK;
}

STANDIN_EXPORT tcu_result
cuLaunchKernel(tcu_function f, unsigned int gridDimX, unsigned int gridDimY,
               unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
               unsigned int blockDimZ, unsigned int sharedMemBytes, tcu_stream hStream,
               void **kernelParams, void **extra)
{
    standin_rc rc = standin_enter("cuLaunchKernel");
    struct standin_context *ctx = NULL;
    struct CUfunc_st *fn = NULL;
    const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
    const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
    char hex[100] = "";
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    if (rc == STANDIN_OK && !(fn = known_function(f))) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    if (rc == STANDIN_OK) {
        rc = launch(ctx, fn, grid, block, sharedMemBytes, hStream, kernelParams, extra,
                    hex, sizeof hex);
    }
    return standin_leave(rc, "cuLaunchKernel",
                         "fn=%s, grid=%ux%ux%u, block=%ux%ux%u, shared=%u, stream=%p, "
                         "params=%zu bytes %s",
                         fn ? fn->name : "?", gridDimX, gridDimY, gridDimZ, blockDimX,
                         blockDimY, blockDimZ, sharedMemBytes, (void *)hStream,
                         fn ? fn->params_nbytes : 0, hex);
}

/* ---- occupancy ------------------------------------------------------------------- */

/* A stand-in's answer, as the driver gives one for a kernel of few registers: the
 * largest block (1024 threads, or the largest multiple of 32 under blockSizeLimit),
 * and the blocks of that size that fill every multiprocessor (132 of 2048 threads). */
STANDIN_EXPORT tcu_result
cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, tcu_function func,
                                 tcu_occupancy_b2d_size blockSizeToDynamicSMemSize,
                                 size_t dynamicSMemSize, int blockSizeLimit)
{
    standin_rc rc = standin_enter("cuOccupancyMaxPotentialBlockSize");
    struct standin_context *ctx = NULL;
    if (rc == STANDIN_OK) {
        rc = standin_current(&ctx);
    }
    const struct CUfunc_st *f = rc == STANDIN_OK ? known_function(func) : NULL;
    if (rc == STANDIN_OK && (!minGridSize || !blockSize || blockSizeLimit < 0)) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    else if (rc == STANDIN_OK && (!f || f->mod->ctx != ctx)) {
        rc = STANDIN_ERR_INVALID_HANDLE;
    }
    int block = 1024;
    if (rc == STANDIN_OK && blockSizeLimit > 0 && blockSizeLimit < block) {
        block = blockSizeLimit >= 32 ? blockSizeLimit / 32 * 32 : blockSizeLimit;
    }
    size_t dynamic = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(block)
                                                : dynamicSMemSize;
    if (rc == STANDIN_OK && dynamic > 49152) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    if (rc == STANDIN_OK) {
        *blockSize = block;
        *minGridSize = 132 * (2048 / block);
    }
    return standin_leave(rc, "cuOccupancyMaxPotentialBlockSize",
                         "fn=%s, limit=%d, block=%d, grid=%d", f ? f->name : "?",
                         blockSizeLimit, rc == STANDIN_OK ? *blockSize : 0,
                         rc == STANDIN_OK ? *minGridSize : 0);
}
