/*
 * kernel.c: the device-neutral kernel entry points.
 *
 * A kernel belongs to the backend that built it. Building goes to the backend's
 * kernel_build slot, launching to its kernel_launch slot and releasing to its
 * kernel_release slot (backend.h), read through TACK__BACKEND_SLOT so a table
 * compiled before the slots existed runs no kernels instead of crashing. Two things
 * are done here for every backend: the launch's parameter block, packed from the
 * arguments with the kernel's key words (kernel_args.c lays it out), on this
 * thread's stack unless the arrays have many axes, and handed to the backend as it
 * is (a GPU launch passes the same bytes as its kernel's argument); and the wording
 * of a failure that generated code recorded (tack__kernel_failure_status).
 */
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
 * twin) finds it dropped already and leaves it to the outer one. One thread-local
 * record, so that each use costs one look-up of the thread's block (a call in a
 * shared library), and a launch that keeps the lock looks it up only to set it. */
static _Thread_local struct {
    const tack_kernel_lock *lock;
    bool dropped;
} caller;

void
tack_kernel_set_caller_lock(const tack_kernel_lock *lock)
{
    caller.lock = lock;
    caller.dropped = false;
}

bool
tack__caller_lock_release(void)
{
    const tack_kernel_lock *lock = caller.lock;
    if (!lock || !lock->release || caller.dropped) {
        return false;
    }
    lock->release(lock->ctx);
    caller.dropped = true;
    return true;
}

void
tack__caller_lock_reacquire(bool released)
{
    if (released) {
        const tack_kernel_lock *lock = caller.lock;
        caller.dropped = false;
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

tack_status
tack__kernel_failure_status(const tack_kernel *k, const tack__kernel_failure *f)
{
    /* the line word: a func's file above the shift (kernel.h) */
    int line = (int)((unsigned)f->line & ((1u << TACK_KERNEL_LINE_FILE_SHIFT) - 1));
    int file = (int)((unsigned)f->line >> TACK_KERNEL_LINE_FILE_SHIFT);
    const char *filename = file > 0 && file <= k->nfiles && k->files[file - 1]
                               ? k->files[file - 1]
                               : k->filename;
    if (f->why == TACK_KERNEL_FAIL_ZERO_DIVISION) {
        return tack__fail(TACK_ERR_ZERO_DIVISION,
                          "integer division or modulo by zero in kernel '%s' (%s, "
                          "line %d)",
                          k->name, filename, line);
    }
    return tack__fail(TACK_ERR_INDEX,
                      "index %lld is out of bounds for axis %d of '%s' with size %lld "
                      "in kernel '%s' (%s, line %d)",
                      (long long)f->index, f->axis, f->name ? f->name : "?",
                      (long long)f->extent, k->name, filename, line);
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
