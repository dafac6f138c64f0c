/*
 * dlpack_abi.h: the DLPack 1.3 ABI, written by Tack from the standard's description
 * (the official dlpack.h of release 1.3; a verbatim copy for the tests is in
 * tests/c/vendor/dlpack-1.3/dlpack/dlpack.h) so that Tack needs no third-party
 * header. The names and layouts are the standard's; a C host that already included
 * the official dlpack.h gets its definitions, and the static asserts below check
 * that both agree on every size and offset that crosses a library boundary.
 *
 * Two layouts that are easy to confuse:
 *   DLManagedTensor (legacy, capsule "dltensor"): dl_tensor FIRST, no version, no
 *     flags, so it cannot say "read-only".
 *   DLManagedTensorVersioned (capsule "dltensor_versioned"): version, manager_ctx,
 *     deleter and flags first (frozen for every 1.x and beyond, so a consumer can
 *     always call the deleter), dl_tensor LAST.
 * Strides count elements, not bytes. byte_offset is unsigned and in bytes.
 *
 * Living beside the official header. A C or C++ host may include the official
 * dlpack.h of any release from 1.0 on, before or after this one:
 *   - official header first: its definitions win; what a 1.0 or 1.1 header lacks
 *     (the typedef name DLManagedTensorVersioned, which those releases declare only
 *     as a struct tag, and the exchange API types of 1.2) is added below;
 *   - this header first: it defines the official header's include guard and every
 *     macro that header provides, so an official dlpack.h included later is skipped
 *     and the host sees the 1.3 definitions below, a superset of 1.0 and 1.1.
 * tests/c/test_dlpack_header.c compiles both orders against the official 1.1 and
 * 1.3 headers (vendored under tests/c/vendor/).
 */
#ifndef TACK_DLPACK_ABI_H
#define TACK_DLPACK_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version Tack implements and writes into the tensors it exports. */
#define TACK_DLPACK_MAJOR 1
#define TACK_DLPACK_MINOR 3

/* Capsule names of the Python protocol. Consumed capsules carry the used_ name. */
#define TACK_DLPACK_CAPSULE_LEGACY "dltensor"
#define TACK_DLPACK_CAPSULE_VERSIONED "dltensor_versioned"
#define TACK_DLPACK_CAPSULE_LEGACY_USED "used_dltensor"
#define TACK_DLPACK_CAPSULE_VERSIONED_USED "used_dltensor_versioned"
#define TACK_DLPACK_CAPSULE_EXCHANGE_API "dlpack_exchange_api"

#if !defined(DLPACK_DLPACK_H_)
#define TACK__DLPACK_OWN 1
#elif !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION != 1
#error \
    "Tack needs the DLPack 1.x ABI; the dlpack.h included before tack/tack.h is older (0.x) or newer (2.x): include a 1.x release, or include tack/tack.h alone"
#elif DLPACK_MINOR_VERSION < 2
#define TACK__DLPACK_BEFORE_1_2 1
#endif

#ifdef TACK__DLPACK_OWN
/* The official header's guard and macros, so that it is skipped when included after. */
#define DLPACK_DLPACK_H_
#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif
#if defined(_WIN32) && defined(DLPACK_EXPORTS)
#define DLPACK_DLL __declspec(dllexport)
#elif defined(_WIN32)
#define DLPACK_DLL __declspec(dllimport)
#else
#define DLPACK_DLL
#endif

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 3

#define DLPACK_FLAG_BITMASK_READ_ONLY (1ULL << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1ULL << 1)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1ULL << 2)

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* An int-sized enum in C (the static asserts hold us to 4 bytes) and int32_t in C++,
 * as in the official header; values 5 and 6 are retired. */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
    kDLMAIA = 17,
    kDLTrn = 18
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

/* Values of DLDataType.code (a uint8_t, deliberately not the enum type). */
typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U,
    kDLFloat8_e3m4 = 7U,
    kDLFloat8_e4m3 = 8U,
    kDLFloat8_e4m3b11fnuz = 9U,
    kDLFloat8_e4m3fn = 10U,
    kDLFloat8_e4m3fnuz = 11U,
    kDLFloat8_e5m2 = 12U,
    kDLFloat8_e5m2fnuz = 13U,
    kDLFloat8_e8m0fnu = 14U,
    kDLFloat6_e2m3fn = 15U,
    kDLFloat6_e3m2fn = 16U,
    kDLFloat4_e2m1fn = 17U
} DLDataTypeCode;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data; /* device address (the first element is at data + byte_offset) */
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;   /* ndim extents; may be NULL when ndim == 0 */
    int64_t *strides; /* ndim element strides; NULL means C-contiguous (pre-1.2) */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self); /* may be NULL */
} DLManagedTensor;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self); /* may be NULL */
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif /* TACK__DLPACK_OWN */

#ifdef TACK__DLPACK_BEFORE_1_2
/* 1.0 and 1.1 declare the versioned tensor only as a struct tag. */
typedef struct DLManagedTensorVersioned DLManagedTensorVersioned;
#endif

#if defined(TACK__DLPACK_OWN) || defined(TACK__DLPACK_BEFORE_1_2)
/* ---- the C exchange API (DLPack 1.2, published as a capsule since 1.3) ---------- */

/* Every function returns 0 on success and -1 on failure. py_object is a PyObject*. */
typedef int (*DLPackManagedTensorAllocator)(
    DLTensor *prototype, DLManagedTensorVersioned **out, void *error_ctx,
    void (*SetError)(void *error_ctx, const char *kind, const char *message));
typedef int (*DLPackManagedTensorFromPyObjectNoSync)(void *py_object,
                                                     DLManagedTensorVersioned **out);
typedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned *tensor,
                                                   void **out_py_object);
typedef int (*DLPackDLTensorFromPyObjectNoSync)(void *py_object, DLTensor *out);
typedef int (*DLPackCurrentWorkStream)(DLDeviceType device_type, int32_t device_id,
                                       void **out_current_stream);

typedef struct DLPackExchangeAPIHeader {
    DLPackVersion version;                    /* check major before anything else */
    struct DLPackExchangeAPIHeader *prev_api; /* an older table, or NULL */
} DLPackExchangeAPIHeader;

typedef struct DLPackExchangeAPI {
    DLPackExchangeAPIHeader header;
    DLPackManagedTensorAllocator managed_tensor_allocator;
    DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync;
    DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;
    DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync; /* optional */
    DLPackCurrentWorkStream current_work_stream;
} DLPackExchangeAPI;
#endif /* the exchange API */
#undef TACK__DLPACK_OWN
#undef TACK__DLPACK_BEFORE_1_2

/* The layout is an ABI shared with every other DLPack library: hold it fixed. */
#if defined(__cplusplus)
#define TACK__ABI_ASSERT static_assert
#else
#define TACK__ABI_ASSERT _Static_assert
#endif
TACK__ABI_ASSERT(sizeof(DLPackVersion) == 8, "DLPackVersion");
TACK__ABI_ASSERT(sizeof(DLDeviceType) == 4, "DLDeviceType is int-sized");
TACK__ABI_ASSERT(sizeof(DLDevice) == 8, "DLDevice");
TACK__ABI_ASSERT(sizeof(DLDataType) == 4, "DLDataType");
TACK__ABI_ASSERT(offsetof(DLDataType, lanes) == 2, "DLDataType.lanes");
#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu /* LP64 and LLP64 */
TACK__ABI_ASSERT(sizeof(DLTensor) == 48, "DLTensor");
TACK__ABI_ASSERT(offsetof(DLTensor, device) == 8, "DLTensor.device");
TACK__ABI_ASSERT(offsetof(DLTensor, ndim) == 16, "DLTensor.ndim");
TACK__ABI_ASSERT(offsetof(DLTensor, dtype) == 20, "DLTensor.dtype");
TACK__ABI_ASSERT(offsetof(DLTensor, shape) == 24, "DLTensor.shape");
TACK__ABI_ASSERT(offsetof(DLTensor, strides) == 32, "DLTensor.strides");
TACK__ABI_ASSERT(offsetof(DLTensor, byte_offset) == 40, "DLTensor.byte_offset");
TACK__ABI_ASSERT(sizeof(DLManagedTensor) == 64, "DLManagedTensor");
TACK__ABI_ASSERT(offsetof(DLManagedTensor, manager_ctx) == 48, "legacy manager_ctx");
TACK__ABI_ASSERT(offsetof(DLManagedTensor, deleter) == 56, "legacy deleter");
TACK__ABI_ASSERT(sizeof(DLManagedTensorVersioned) == 80, "DLManagedTensorVersioned");
TACK__ABI_ASSERT(offsetof(DLManagedTensorVersioned, manager_ctx) == 8, "manager_ctx");
TACK__ABI_ASSERT(offsetof(DLManagedTensorVersioned, deleter) == 16, "deleter");
TACK__ABI_ASSERT(offsetof(DLManagedTensorVersioned, flags) == 24, "flags");
TACK__ABI_ASSERT(offsetof(DLManagedTensorVersioned, dl_tensor) == 32, "dl_tensor");
TACK__ABI_ASSERT(sizeof(DLPackExchangeAPIHeader) == 16, "DLPackExchangeAPIHeader");
TACK__ABI_ASSERT(sizeof(DLPackExchangeAPI) == 56, "DLPackExchangeAPI");
TACK__ABI_ASSERT(offsetof(DLPackExchangeAPI, managed_tensor_allocator) == 16,
                 "DLPackExchangeAPI.managed_tensor_allocator");
TACK__ABI_ASSERT(offsetof(DLPackExchangeAPI, current_work_stream) == 48,
                 "DLPackExchangeAPI.current_work_stream");
#endif
#undef TACK__ABI_ASSERT

#ifdef __cplusplus
}
#endif

#endif /* TACK_DLPACK_ABI_H */
