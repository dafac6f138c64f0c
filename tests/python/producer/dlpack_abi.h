/*
 * dlpack_abi.h: the DLPack 1.3 structs as the test producers see them, a second
 * transcription of the standard, independent of Tack's own headers (so a mistake in
 * one is caught by the other).
 */
#ifndef TACK_TEST_PRODUCER_DLPACK_ABI_H
#define TACK_TEST_PRODUCER_DLPACK_ABI_H

#include <stdint.h>

typedef struct {
    uint32_t major, minor;
} Version;
typedef struct {
    int32_t device_type, device_id;
} Device;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DType;
typedef struct {
    void *data;
    Device device;
    int32_t ndim;
    DType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} Tensor;
typedef struct Legacy {
    Tensor t;
    void *ctx;
    void (*deleter)(struct Legacy *);
} Legacy;
typedef struct Versioned {
    Version version;
    void *ctx;
    void (*deleter)(struct Versioned *);
    uint64_t flags;
    Tensor t;
} Versioned;
typedef struct Header {
    Version version;
    struct Header *prev;
} Header;
typedef struct {
    Header header;
    int (*allocator)(Tensor *, Versioned **, void *,
                     void (*)(void *, const char *, const char *));
    int (*from_py)(void *, Versioned **);
    int (*to_py)(Versioned *, void **);
    int (*dltensor_from_py)(void *, Tensor *);
    int (*current_work_stream)(int32_t, int32_t, void **);
} ExchangeAPI;

_Static_assert(sizeof(Tensor) == 48, "Tensor");
_Static_assert(sizeof(Legacy) == 64, "Legacy");
_Static_assert(sizeof(Versioned) == 80, "Versioned");
_Static_assert(sizeof(ExchangeAPI) == 56, "ExchangeAPI");

#endif /* TACK_TEST_PRODUCER_DLPACK_ABI_H */
