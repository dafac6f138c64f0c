/*
 * kernel.c: the device-neutral kernel entry points.
 *
 * A kernel belongs to the backend that built it. Building goes to the backend's
 * kernel_build slot, launching to its kernel_launch slot and releasing to its
 * kernel_release slot (backend.h), read through TACK__BACKEND_SLOT so a table
 * compiled before the slots existed runs no kernels instead of crashing. The one
 * thing done here for every backend is the launch's parameter block: packed from
 * the arguments with the kernel's key words, on this thread's stack unless the
 * arrays have many axes, and handed to the backend as it is (a GPU launch passes
 * the same bytes as its kernel's argument).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Parameter blocks up to this size live on the launching thread's stack. */
#define PARAMS_ON_STACK 2048

tack_status
tack__kernel_build_with(const tack_backend *backend, const char *name,
                        const char *filename, const tack_kernel_request *req,
                        tack_kernel **out, char **log)
{
    TACK__CHECK_ARG(log);
    *log = NULL;
    TACK__CHECK_ARG(backend);
    TACK__CHECK_ARG(name);
    TACK__CHECK_ARG(filename);
    TACK__CHECK_ARG(req);
    TACK__CHECK_ARG(req->source);
    TACK__CHECK_ARG(out);
    tack_status (*build)(const tack_backend *, const char *, const char *,
                         const tack_kernel_request *, tack_kernel **, char **) =
        TACK__BACKEND_SLOT(backend, kernel_build);
    if (!build || !TACK__BACKEND_SLOT(backend, kernel_launch)) {
        return tack__fail(TACK_ERR_UNSUPPORTED,
                          "kernel '%s': this build of Tack runs no kernels on the %s "
                          "backend; pass arrays of a device whose backend runs "
                          "kernels (the CPU does)",
                          name, backend->name);
    }
    tack_kernel *k = NULL;
    tack_status st = build(backend, name, filename, req, &k, log);
    if (st != TACK_OK) {
        return st;
    }
    if (!k || k->backend != backend || k->nparams < 0 ||
        k->nparams > TACK_KERNEL_MAX_PARAMS || (k->nparams > 0 && !k->param_key)) {
        return tack__fail(TACK_ERR_INTERNAL,
                          "the %s backend built kernel '%s' without the fields every "
                          "kernel has",
                          backend->name, name);
    }
    *out = k;
    return TACK_OK;
}

bool
tack_kernel_debug_default(void)
{
    const char *v = getenv("TACK_DEBUG");
    return v && v[0] && strcmp(v, "0") != 0;
}

tack_status
tack_kernel_build_request(int dlpack_device_type, const char *name,
                          const char *filename, const tack_kernel_request *request,
                          tack_kernel **out, char **log)
{
    const tack_backend *backend = tack__backend_for_dlpack_type(dlpack_device_type);
    if (!backend) {
        TACK__CHECK_ARG(log);
        *log = NULL;
        return tack__fail(TACK_ERR_UNSUPPORTED,
                          "kernel '%s': no backend of this build of Tack has DLPack "
                          "device type %d; build for one of its backends (kDLCPU = 1)",
                          name ? name : "?", dlpack_device_type);
    }
    return tack__kernel_build_with(backend, name, filename, request, out, log);
}

tack_status
tack_kernel_build_for(int dlpack_device_type, const char *name, const char *filename,
                      const char *source, tack_kernel **out, char **log)
{
    const tack_kernel_request request = {.source = source};
    return tack_kernel_build_request(dlpack_device_type, name, filename, &request, out,
                                     log);
}

tack_status
tack_kernel_build(const char *name, const char *filename, const char *source,
                  tack_kernel **out, char **log)
{
    return tack_kernel_build_for(kDLCPU, name, filename, source, out, log);
}

/* The calling thread's lock (tack_kernel_set_caller_lock), and whether a launch of
 * this thread dropped it: a launch inside a launch (a GPU backend running its CPU
 * twin) finds it dropped already and leaves it to the outer one. */
static _Thread_local const tack_kernel_lock *caller_lock;
static _Thread_local bool caller_lock_dropped;

void
tack_kernel_set_caller_lock(const tack_kernel_lock *lock)
{
    caller_lock = lock;
    caller_lock_dropped = false;
}

bool
tack__caller_lock_release(void)
{
    const tack_kernel_lock *lock = caller_lock;
    if (!lock || !lock->release || caller_lock_dropped) {
        return false;
    }
    lock->release(lock->ctx);
    caller_lock_dropped = true;
    return true;
}

void
tack__caller_lock_reacquire(bool released)
{
    const tack_kernel_lock *lock = caller_lock;
    if (released) {
        caller_lock_dropped = false;
        if (lock->reacquire) {
            lock->reacquire(lock->ctx);
        }
    }
}

tack_status
tack_kernel_launch_on(tack_device *device, tack_kernel *k, const tack_kernel_arg *args,
                      unsigned flags, tack_kernel_value *result)
{
    TACK__CHECK_ARG(k);
    if (k->nparams > 0) {
        TACK__CHECK_ARG(args);
    }
    if (device && device->backend != k->backend) {
        return tack__fail(TACK_ERR_DEVICE_MISMATCH,
                          "kernel '%s' was built for the %s backend and cannot run on "
                          "%s:%d; launch it on a device of its backend, or build it "
                          "for %s with tack_kernel_build_for",
                          k->name, k->backend->name, device->backend->name,
                          device->ordinal, device->backend->name);
    }
    tack_status (*launch)(void *, tack_kernel *, const void *, size_t, unsigned,
                          tack_kernel_value *) =
        TACK__BACKEND_SLOT(k->backend, kernel_launch);
    if (!launch) {
        return tack__fail(TACK_ERR_UNSUPPORTED,
                          "kernel '%s': the %s backend cannot launch kernels in this "
                          "build of Tack",
                          k->name, k->backend->name);
    }
    /* The parameter block: on the stack unless the arrays have many axes. */
    uint64_t small[PARAMS_ON_STACK / 8];
    size_t nbytes = tack_kernel_params_size(k->nparams, k->param_key);
    void *block = nbytes <= sizeof small ? (void *)small : tack__alloc(nbytes, 8);
    if (!block) {
        return tack__fail(TACK_ERR_NO_MEMORY,
                          "out of memory for the parameters of kernel '%s'", k->name);
    }
    tack_kernel_params_pack(k->nparams, k->param_key, args, block);
    tack_kernel_value ignored; /* the slot writes a result only on success */
    /* The CPU launch drops the caller's lock itself, where the launch is not short. */
    bool released = k->backend != &tack__backend_cpu && tack__caller_lock_release();
    tack_status st = launch(device ? device->state : NULL, k, block, nbytes, flags,
                            result ? result : &ignored);
    tack__caller_lock_reacquire(released);
    if (block != (void *)small) {
        tack__free(block);
    }
    return st;
}

tack_status
tack_kernel_launch_on_stream(tack_device *device, tack_kernel *k,
                             const tack_kernel_arg *args, unsigned flags,
                             int64_t stream, tack_kernel_value *result)
{
    TACK__CHECK_ARG(k);
    tack_status st = tack__stream_follow(device, stream);
    if (st == TACK_OK) {
        st = tack_kernel_launch_on(device, k, args, flags, result);
    }
    return st == TACK_OK ? tack__stream_lead(device, stream) : st;
}

tack_status
tack_kernel_launch_ex(tack_kernel *k, const tack_kernel_arg *args, unsigned flags,
                      tack_kernel_value *result)
{
    return tack_kernel_launch_on(NULL, k, args, flags, result);
}

tack_status
tack_kernel_launch(tack_kernel *k, const tack_kernel_arg *args)
{
    return tack_kernel_launch_on(NULL, k, args, 0, NULL);
}

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
    if (nparams < 0 || nparams > TACK_KERNEL_MAX_PARAMS) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "kernel '%s': %d parameters; a kernel has 0 to %d",
                          kernel_name, nparams, TACK_KERNEL_MAX_PARAMS);
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

int
tack_kernel_dlpack_type(const tack_kernel *k)
{
    return k ? k->backend->dlpack_device_type : 0;
}

void
tack_kernel_release(tack_kernel *k)
{
    if (!k) {
        return;
    }
    void (*release)(tack_kernel *) = TACK__BACKEND_SLOT(k->backend, kernel_release);
    if (release) {
        release(k);
    }
}
