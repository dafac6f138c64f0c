/*
 * tack_host.c: a C host using the installed Tack library.
 *
 *   1. makes an array and fills it;
 *   2. exports it as a versioned DLPack tensor, as a consumer would receive it;
 *   3. imports a tensor that the host itself produces (its deleter runs once, when
 *      the last array over it is released);
 *   4. wraps a malloc'd buffer as an array and hands Tack the free().
 *
 * Build against an installed Tack through pkg-config:
 *
 *   cc -std=c11 tack_host.c $(pkg-config --cflags --libs tack) -o tack_host
 *
 * (`make example-c` in the repository installs Tack into build/prefix and does this.)
 * Exits 0 when every step agrees with what it expects, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tack/tack.h>

/* Reports a failed Tack call with the library's detail and jumps to cleanup. */
#define TRY(call)                                                                     \
    do {                                                                              \
        tack_status st_ = (call);                                                     \
        if (st_ != TACK_OK) {                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call, \
                    tack_status_name(st_), tack_last_error());                        \
            goto done;                                                                \
        }                                                                             \
    } while (0)

#define EXPECT(cond)                                                            \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
            goto done;                                                          \
        }                                                                       \
    } while (0)

/* ---- a tensor produced by the host ---------------------------------------------- */

typedef struct host_tensor {
    DLManagedTensorVersioned managed;
    int64_t shape[1];
    int64_t strides[1];
    double values[5];
} host_tensor;

static int host_deleter_calls;

static void
host_tensor_delete(DLManagedTensorVersioned *self)
{
    host_deleter_calls++;
    free(self->manager_ctx);
}

/* Returns: a tensor the caller hands to an importer (which then owns it). */
static DLManagedTensorVersioned *
host_tensor_new(void)
{
    host_tensor *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < 5; i++) {
        t->values[i] = 0.5 * i;
    }
    t->shape[0] = 5;
    t->strides[0] = 1;
    t->managed.version.major = DLPACK_MAJOR_VERSION;
    t->managed.version.minor = DLPACK_MINOR_VERSION;
    t->managed.manager_ctx = t;
    t->managed.deleter = host_tensor_delete;
    t->managed.flags = 0;
    DLTensor *dl = &t->managed.dl_tensor;
    dl->data = t->values;
    dl->device.device_type = kDLCPU;
    dl->device.device_id = 0;
    dl->ndim = 1;
    dl->dtype.code = kDLFloat;
    dl->dtype.bits = 64;
    dl->dtype.lanes = 1;
    dl->shape = t->shape;
    dl->strides = t->strides;
    dl->byte_offset = 0;
    return &t->managed;
}

/* ---- a malloc'd buffer handed to Tack -------------------------------------------- */

static int buffer_freed;

static void
free_buffer(void *ctx)
{
    buffer_freed++;
    free(ctx);
}

int
main(void)
{
    int ok = 0;
    tack_device *cpu = NULL;
    tack_array *made = NULL, *imported = NULL, *wrapped = NULL;
    DLManagedTensorVersioned *exported = NULL;

    printf("Tack %s (headers %s)\n", tack_version(), TACK_VERSION);
    EXPECT(strcmp(tack_version(), TACK_VERSION) == 0);
    TRY(tack_device_open("cpu", 0, NULL, &cpu));

    /* 1. An array of 2 x 3 float32, filled with 1.5. */
    const int64_t shape[2] = {2, 3};
    TRY(tack_array_empty(cpu, TACK_FLOAT32, 2, shape, TACK_BUFFER_WRITABLE, &made));
    const float fill = 1.5f;
    TRY(tack_array_fill(made, &fill, TACK_FLOAT32));

    /* 2. Exported: the consumer reads it through the DLPack structs, then calls the
     * deleter, which releases the export's reference to the array. */
    TRY(tack_dlpack_export_versioned(made, NULL, &exported));
    const DLTensor *dl = &exported->dl_tensor;
    EXPECT(exported->version.major == 1);
    EXPECT(dl->ndim == 2 && dl->shape[0] == 2 && dl->shape[1] == 3);
    EXPECT(dl->strides[0] == 3 && dl->strides[1] == 1);
    EXPECT(dl->dtype.code == kDLFloat && dl->dtype.bits == 32);
    EXPECT(((const float *)dl->data)[5] == 1.5f);
    EXPECT((exported->flags & DLPACK_FLAG_BITMASK_READ_ONLY) == 0);
    printf("exported: DLPack %u.%u, shape (%lld, %lld)\n", exported->version.major,
           exported->version.minor, (long long)dl->shape[0], (long long)dl->shape[1]);
    exported->deleter(exported);
    exported = NULL;

    /* 3. Imported without a copy: the array reads the host's memory. The import
     * consumes the tensor even when it fails, so there is nothing to free here. */
    DLManagedTensorVersioned *produced = host_tensor_new();
    EXPECT(produced != NULL);
    const double *host_values = ((host_tensor *)produced->manager_ctx)->values;
    TRY(tack_dlpack_import_versioned(produced, NULL, &imported));
    EXPECT(tack_array_data(imported) == (const void *)host_values);
    double back[5];
    TRY(tack_array_copy_to_host(imported, back, TACK_FLOAT64));
    EXPECT(back[4] == 2.0);
    EXPECT(host_deleter_calls == 0);
    tack_array_release(imported);
    imported = NULL;
    EXPECT(host_deleter_calls == 1);
    printf("imported: 5 float64 without a copy; deleter ran once\n");

    /* 4. A malloc'd buffer wrapped as a 4-element int32 array; Tack calls free_buffer
     * when the last array over it goes. */
    int32_t *buffer = malloc(4 * sizeof *buffer);
    EXPECT(buffer != NULL);
    for (int32_t i = 0; i < 4; i++) {
        buffer[i] = 10 * i;
    }
    const int64_t n = 4;
    TRY(tack_array_wrap_memory(cpu, buffer, TACK_INT32, 1, &n, true, free_buffer,
                               buffer, &wrapped));
    const int32_t seven = 7;
    TRY(tack_array_fill(wrapped, &seven, TACK_INT32));
    EXPECT(buffer[3] == 7);
    tack_array_release(wrapped);
    wrapped = NULL;
    EXPECT(buffer_freed == 1);
    printf("wrapped: a malloc'd buffer, written through Tack, freed once\n");

    ok = 1;
done:
    if (exported != NULL) {
        exported->deleter(exported);
    }
    tack_array_release(wrapped);
    tack_array_release(imported);
    tack_array_release(made);
    if (cpu != NULL) {
        tack_device_release(cpu);
    }
    return ok ? 0 : 1;
}
