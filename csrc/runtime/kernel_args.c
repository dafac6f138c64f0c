/*
 * kernel_args.c: what a launch checks and builds from its arguments before a
 * backend sees them, the same for every backend: the checks of the arrays (live, on
 * a backend that runs kernels, of one memory domain, writable where stored to, apart
 * where the kernel needs it) and of a build against the call, the specialization
 * key, and the parameter block that kernel.c hands to the backend's kernel_launch
 * slot.
 *
 * The key (kernel.h) is one word per parameter and a two-word tail; the block is the
 * parameters in order, 8 bytes a word: an array is its data pointer and its extents,
 * a scalar its int64 or double. The key alone fixes the block's size and layout, so
 * a kernel built for a key reads any block packed with it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The one range of nparams every check here accepts, tested before nparams indexes
 * anything. kernel_name is not NULL (the caller checked it: the message names it). */
static tack_status
check_nparams(const char *kernel_name, int nparams)
{
    if (nparams < 0 || nparams > TACK_KERNEL_MAX_PARAMS) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': %d parameters; a kernel has 0 to %d",
                          kernel_name, nparams, TACK_KERNEL_MAX_PARAMS);
    }
    return TACK_OK;
}

/* The opening of a check: the kernel's name, then the count. A macro, so that a NULL
 * name is reported as an argument of the public function (TACK__CHECK_ARG names
 * __func__). */
#define CHECK_NAME_AND_COUNT(kernel_name, nparams)                   \
    do {                                                             \
        TACK__CHECK_ARG(kernel_name);                                \
        tack_status count_st_ = check_nparams(kernel_name, nparams); \
        if (count_st_ != TACK_OK) {                                  \
            return count_st_;                                        \
        }                                                            \
    } while (0)

/* ---- checks --------------------------------------------------------------------- */

/* A device as a message names it: backend:ordinal, and the adopted context's handle
 * (two devices of one ordinal differ only there). */
static void
describe_device(const tack_device *dev, char *buf, size_t cap)
{
    if (dev->external_context) {
        (void)snprintf(buf, cap, "%s:%d, external_context=%#" PRIxPTR,
                       dev->backend->name, dev->ordinal, dev->external.context);
    }
    else {
        (void)snprintf(buf, cap, "%s:%d", dev->backend->name, dev->ordinal);
    }
}

tack_status
tack_kernel_check_arrays(const char *kernel_name, int nparams,
                         const tack_array *const *arrays,
                         const char *const *param_names, const bool *stored)
{
    CHECK_NAME_AND_COUNT(kernel_name, nparams);
    if (nparams > 0) {
        TACK__CHECK_ARG(arrays);
        TACK__CHECK_ARG(param_names);
        TACK__CHECK_ARG(stored);
    }
    const tack_device *first = NULL;
    int first_k = -1;
    for (int k = 0; k < nparams; k++) {
        const tack_array *a = arrays[k];
        if (!a) {
            continue;
        }
        if (TACK__UNLIKELY(
                atomic_load_explicit(&a->buffer->reclaimed, memory_order_relaxed))) {
            char what[128];
            (void)snprintf(what, sizeof what, "kernel '%.60s', parameter '%.40s'",
                           kernel_name, param_names[k]);
            return tack__array_reclaimed(a, what);
        }
        const tack_device *dev = a->buffer->device;
        if (!TACK__BACKEND_SLOT(dev->backend, kernel_build) ||
            !TACK__BACKEND_SLOT(dev->backend, kernel_launch)) {
            return tack__fail_remedy(TACK_ERR_DEVICE_MISMATCH, TACK_REMEDY_TO_CPU,
                                     "kernel '%s': parameter '%s' is an array on "
                                     "%s:%d, but this build of Tack runs no kernels "
                                     "on the %s backend",
                                     kernel_name, param_names[k], dev->backend->name,
                                     dev->ordinal, dev->backend->name);
        }
        if (!first) {
            first = dev;
            first_k = k;
        }
        else if (dev->memory_domain != first->memory_domain) {
            char one[96], two[96];
            describe_device(first, one, sizeof one);
            describe_device(dev, two, sizeof two);
            return tack__fail(TACK_ERR_DEVICE_MISMATCH,
                              "kernel '%s': parameters '%s' (on %s) and '%s' (on %s) "
                              "are arrays of different memory domains, which no "
                              "launch can join; copy one to the other's device first",
                              kernel_name, param_names[first_k], one, param_names[k],
                              two);
        }
        if (stored[k] && !a->writable) {
            return tack__fail_remedy(TACK_ERR_INVALID_ARGUMENT,
                                     TACK_REMEDY_WRITABLE_COPY,
                                     "kernel '%s' may store to parameter '%s', but the "
                                     "array passed for it is read-only",
                                     kernel_name, param_names[k]);
        }
    }
    return TACK_OK;
}

/* ---- the specialization key --------------------------------------------------- */

uint32_t
tack_kernel_key_array(const tack_array *array)
{
    if (!array) {
        return 0; /* the word of no argument */
    }
    return TACK_KERNEL_KEY_ARRAY | (uint32_t)array->dtype << 8 | (uint32_t)array->ndim;
}

void
tack_kernel_key_tail(int nparams, const tack_array *const *arrays, bool debug,
                     uint32_t tail[2])
{
    if (!tail) {
        return;
    }
    int backend = kDLCPU;
    for (int k = 0; arrays && k < nparams; k++) {
        if (arrays[k]) {
            backend = arrays[k]->buffer->device->backend->dlpack_device_type;
            break;
        }
    }
    tail[0] = debug;
    tail[1] = (uint32_t)backend;
}

/* ---- the parameter block -------------------------------------------------------- */

size_t
tack_kernel_params_size(int nparams, const uint32_t *key)
{
    size_t n = 0;
    for (int k = 0; key && k < nparams; k++) {
        n += 1 + ((key[k] & TACK_KERNEL_KEY_ARRAY) ? (key[k] & 0xffu) : 0);
    }
    return n * 8;
}

void
tack_kernel_params_pack(int nparams, const uint32_t *key, const tack_kernel_arg *args,
                        void *block)
{
    if (!key || !args || !block) {
        return;
    }
    unsigned char *out = block;
    for (int k = 0; k < nparams; k++) {
        if (key[k] & TACK_KERNEL_KEY_ARRAY) {
            uint64_t ptr = (uint64_t)(uintptr_t)args[k].data;
            memcpy(out, &ptr, 8);
            out += 8;
            size_t ndim = key[k] & 0xffu;
            memcpy(out, args[k].shape, ndim * 8);
            out += ndim * 8;
        }
        else if (key[k] == TACK_KERNEL_KEY_FLOAT || key[k] == TACK_KERNEL_KEY_FLOAT32) {
            memcpy(out, &args[k].f, 8);
            out += 8;
        }
        else {
            memcpy(out, &args[k].i, 8);
            out += 8;
        }
    }
}

bool
tack_kernel_args_shared(int nparams, const tack_array *const *arrays)
{
    for (int k = 0; arrays && k < nparams; k++) {
        if (arrays[k] && (tack_buffer_flags(arrays[k]->buffer) & TACK_BUFFER_SHARED)) {
            return true;
        }
    }
    return false;
}

static bool
overlap(const tack_array *a, const tack_array *b)
{
    size_t na = tack_array_nbytes(a), nb = tack_array_nbytes(b);
    if (na == 0 || nb == 0) {
        return false;
    }
    uintptr_t pa = (uintptr_t)tack_array_data(a), pb = (uintptr_t)tack_array_data(b);
    return pa < pb + nb && pb < pa + na;
}

bool
tack_kernel_args_disjoint(int nparams, const tack_array *const *arrays,
                          const bool *stored)
{
    if (nparams > 0 && (!arrays || !stored)) {
        return false; /* nothing to check: no promise */
    }
    for (int k = 0; k < nparams; k++) {
        if (!arrays[k] || !stored[k]) {
            continue;
        }
        for (int j = 0; j < nparams; j++) {
            if (j != k && arrays[j] && overlap(arrays[k], arrays[j])) {
                return false;
            }
        }
    }
    return true;
}

tack_status
tack_kernel_check_read_first(const char *kernel_name, int nparams,
                             const tack_array *const *arrays,
                             const char *const *param_names, const bool *read_first,
                             const bool *stored)
{
    CHECK_NAME_AND_COUNT(kernel_name, nparams);
    if (nparams > 0) {
        TACK__CHECK_ARG(arrays);
        TACK__CHECK_ARG(param_names);
        TACK__CHECK_ARG(read_first);
        TACK__CHECK_ARG(stored);
    }
    for (int k = 0; k < nparams; k++) {
        if (!arrays[k] || !read_first[k]) {
            continue;
        }
        for (int j = 0; j < nparams; j++) {
            if (j != k && arrays[j] && stored[j] && overlap(arrays[k], arrays[j])) {
                return tack__fail(
                    TACK_ERR_INVALID_ARGUMENT,
                    "kernel '%s' reads '%s' before its parallel loop, and '%s' "
                    "overlaps it but is stored to by the loop: every chunk of the "
                    "loop reads '%s' again and could see those stores; pass "
                    "arrays that do not overlap (a copy of '%s')",
                    kernel_name, param_names[k] ? param_names[k] : "?",
                    param_names[j] ? param_names[j] : "?",
                    param_names[k] ? param_names[k] : "?",
                    param_names[k] ? param_names[k] : "?");
            }
        }
    }
    return TACK_OK;
}

/* ---- the build against the call ------------------------------------------------ */

/* One key word in words, with its article ("an int8 array of 2 dimensions"). */
static void
describe_key_word(uint32_t word, char *buf, size_t size)
{
    if (word & TACK_KERNEL_KEY_ARRAY) {
        unsigned dt = (word >> 8) & 0xffu, ndim = word & 0xffu;
        const char *name = dt < TACK_DTYPE_COUNT ? tack_dtype_get((tack_dtype)dt)->name
                                                 : "unknown-dtype";
        snprintf(buf, size, "%s %s array of %u dimension%s",
                 name[0] == 'i' ? "an" : "a", name, ndim, ndim == 1 ? "" : "s");
        return;
    }
    const char *scalar = word == TACK_KERNEL_KEY_INT       ? "an int"
                         : word == TACK_KERNEL_KEY_FLOAT   ? "a float"
                         : word == TACK_KERNEL_KEY_BOOL    ? "a bool"
                         : word == TACK_KERNEL_KEY_FLOAT32 ? "a float32 scalar"
                                                           : NULL;
    if (scalar) {
        snprintf(buf, size, "%s", scalar);
    }
    else {
        snprintf(buf, size, "key word 0x%x", (unsigned)word);
    }
}

tack_status
tack_kernel_check_build(const tack_kernel *k, const char *kernel_name, int nparams,
                        const char *const *param_names, const uint32_t *key,
                        const bool *stored)
{
    TACK__CHECK_ARG(k);
    TACK__CHECK_ARG(kernel_name);
    TACK__CHECK_ARG(key);
    tack_status st = check_nparams(kernel_name, nparams);
    if (st != TACK_OK) {
        return st;
    }
    if (nparams > 0) {
        TACK__CHECK_ARG(param_names);
        TACK__CHECK_ARG(stored);
    }
    const char *remedy = "build the specialization of the call's own signature";
    if (k->nparams != nparams) {
        return tack__fail(TACK_ERR_BAD_TYPE,
                          "kernel '%s': the build takes %d parameters but this call "
                          "passes %d; %s",
                          kernel_name, k->nparams, nparams, remedy);
    }
    /* The tail's second word: the DLPack device type the call's arrays live on. */
    if ((uint32_t)k->backend->dlpack_device_type != key[nparams + 1]) {
        return tack__fail(TACK_ERR_BAD_TYPE,
                          "kernel '%s': the build is for the %s backend (DLPack device "
                          "type %d) but this call runs on DLPack device type %u; %s",
                          kernel_name, k->backend->name, k->backend->dlpack_device_type,
                          (unsigned)key[nparams + 1], remedy);
    }
    for (int i = 0; i < nparams; i++) {
        if (k->param_key[i] != key[i]) {
            char built[96], passed[96];
            describe_key_word(k->param_key[i], built, sizeof built);
            describe_key_word(key[i], passed, sizeof passed);
            return tack__fail(TACK_ERR_BAD_TYPE,
                              "kernel '%s': parameter '%s' of the build is %s but this "
                              "call passes %s; %s",
                              kernel_name, param_names[i], built, passed, remedy);
        }
    }
    for (int i = 0; i < nparams; i++) {
        bool built = k->param_stored ? k->param_stored[i] != 0
                                     : (key[i] & TACK_KERNEL_KEY_ARRAY) != 0;
        if (built != stored[i]) {
            return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                              built ? "kernel '%s': the build stores to parameter '%s' "
                                      "but the kernel's stored flags say it does not; "
                                      "the flags must name exactly the parameters the "
                                      "kernel stores to"
                                    : "kernel '%s': the kernel's stored flags say it "
                                      "stores to parameter '%s' but the build never "
                                      "does; the flags must name exactly the "
                                      "parameters the kernel stores to",
                              kernel_name, param_names[i]);
        }
    }
    return TACK_OK;
}
