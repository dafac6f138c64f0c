/*
 * gpu_twin.c: the stand-in driver's CPU twins of a GPU kernel's entry points
 * (gpu_twin.h is the ABI both sides include).
 *
 * Under the stand-in, every launch registers the twin of its entry just before it
 * is queued; when the stand-in runs the queued launch, the twin computes it with the
 * CPU build of the same specialization over the launch's parameter block, its device
 * addresses turned into host memory, and writes a record's result or failure as the
 * device code would. On a real driver the stand-in's entry points are absent (the
 * driver's loader found none: tack__gpu_standin) and nothing here runs.
 */
#include <string.h>

#include "gpu_kernel.h"
#include "tack/dtype.h"

/* Launches under the stand-in register their twin just before they are queued; the
 * queued launch keeps the twin it found, and this lock keeps the pair together. */
static pthread_mutex_t twin_lock = PTHREAD_MUTEX_INITIALIZER;

/* Bytes before the record's address among an entry's parameters: the block (a
 * kernel without parameters declares 1 byte), then the pointer at its alignment. */
static size_t
record_offset(const tack__gpu_kernel *k)
{
    size_t n = tack_kernel_params_size(k->pub.nparams, k->pub.param_key);
    return n ? n : 8;
}

/* The launch's parameter block with every array's device address turned into host
 * memory, in block (nbytes bytes). False when an
 * address is not the launch's to use. */
static bool
twin_block(const tack__gpu_kernel *k, const tack_standin_launch *l,
           unsigned char *block, size_t nbytes)
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
name_index(const tack__gpu_kernel *k, const char *name)
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
twin_run(tack__gpu_kernel *k, const tack_standin_launch *l, unsigned char *rec)
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
    tack__gpu_record r;
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
twin_record(const tack__gpu_kernel *k, const tack_standin_launch *l, size_t extra,
            uint64_t *addr)
{
    size_t at = record_offset(k);
    if (l->params_nbytes < at + 8 + extra) {
        return NULL;
    }
    memcpy(addr, (const unsigned char *)l->params + at, 8);
    return l->translate(l->translate_ctx, *addr, sizeof(tack__gpu_record));
}

/* The twin of tack_kernel_body and tack_kernel_body_restrict (standin_twin.h): the
 * CPU build of the same plan computes the whole launch (its own trips, chunks and
 * finish), so a reduction's result is in the record after the body. */
int
tack__gpu_twin_body(const tack_standin_launch *l, void *user)
{
    tack__gpu_kernel *k = user;
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
    unsigned slot = k->twin_next++ % TACK__GPU_TWIN_SLOTS;
    k->twin_pending[slot].record = addr;
    k->twin_pending[slot].nblocks = tack__gpu_finish_blocks(k, 1, l->grid[0]);
    return twin_run(k, l, rec);
}

/* The twin of tack_kernel_finish: after a body, checks that nblocks is the body's
 * grid (0 without partials) and leaves the body twin's result; alone (no trip: nblocks
 * 0), runs the CPU build, whose finish over no chunk gives the identity or the returned
 * value. */
int
tack__gpu_twin_finish(const tack_standin_launch *l, void *user)
{
    tack__gpu_kernel *k = user;
    uint64_t addr = 0;
    unsigned char *rec = twin_record(k, l, 8, &addr);
    if (!rec || l->grid[0] != 1 || l->block[0] != 1) {
        return 1;
    }
    int64_t nblocks;
    memcpy(&nblocks, (const unsigned char *)l->params + record_offset(k) + 8, 8);
    for (unsigned i = 0; i < TACK__GPU_TWIN_SLOTS; i++) {
        if (k->twin_pending[i].record == addr) {
            k->twin_pending[i].record = 0;
            return nblocks != k->twin_pending[i].nblocks;
        }
    }
    return nblocks != 0 || twin_run(k, l, rec);
}

tack_status
tack__gpu_twin_begin(const tack__gpu_state *s, const char *entry,
                     tack_standin_twin_fn twin, tack__gpu_kernel *k, bool *held)
{
    return tack__gpu_twin_register(s->drv->standin.register_twin, entry, twin, k, held);
}

tack_status
tack__gpu_twin_register(tack_standin_register_twin_fn reg, const char *entry,
                        tack_standin_twin_fn twin, tack__gpu_kernel *k, bool *held)
{
    *held = reg != NULL;
    if (!reg) {
        return TACK_OK;
    }
    pthread_mutex_lock(&twin_lock);
    return reg(entry, twin, k) == 0
               ? TACK_OK
               : tack__fail(TACK_ERR_NO_MEMORY, "out of memory for a CPU twin");
}

void
tack__gpu_twin_end(bool held)
{
    if (held) {
        pthread_mutex_unlock(&twin_lock);
    }
}

tack_status
tack__gpu_twin_give_source(tack__gpu_state *s, const tack__gpu_kernel *k,
                           tack__gpu_module mod)
{
    const tack__gpu_standin *standin = &s->drv->standin;
    return standin->register_twin && standin->module_source
               ? tack__gpu_check(s, standin->module_source(mod, k->source),
                                 standin->module_source_name)
               : TACK_OK;
}
