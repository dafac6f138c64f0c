/*
 * test_cuda_abi_signatures.c: every entry point of csrc/backends/cuda/cuda_abi.h has
 * the function type of cudaTypedefs.h's PFN_<name>_v<version> at the version pinned
 * there. Checked at compile time; built only with a CUDA toolkit (tests/c/meson.build).
 *
 * The header's enum- and struct-typed names are bound to cuda.h's own types here (the
 * header leaves them out under TCU_ABI_TYPES_FROM_CUDA_H), so the comparison is exact;
 * test_cuda_abi.c checks that Tack's own definitions have the same sizes and layouts.
 */
#include <cuda.h>
#include <cudaTypedefs.h>

typedef CUresult tcu_result;
typedef CUdevice_attribute tcu_device_attribute;
typedef CUpointer_attribute tcu_pointer_attribute;
typedef CUmemLocationType tcu_mem_location_type;
typedef CUmemAllocationType tcu_mem_allocation_type;
typedef CUmemAllocationHandleType tcu_mem_handle_type;
typedef CUmemAccess_flags tcu_mem_access_flags;
typedef CUmemAllocationGranularity_flags tcu_granularity_flags;
typedef CUdriverProcAddressQueryResult tcu_proc_address_query_result;
typedef CUuuid tcu_uuid;
typedef CUmemLocation tcu_mem_location;
typedef CUmemAllocationProp tcu_mem_allocation_prop;
typedef CUmemAccessDesc tcu_mem_access_desc;
typedef CUmemorytype tcu_memorytype;
typedef CUDA_MEMCPY2D tcu_memcpy2d;
#define TCU_ABI_TYPES_FROM_CUDA_H 1

#include "../../csrc/backends/cuda/cuda_abi.h"

/* ---- function types at the pinned ABI versions
 * ---------------------------------------- */

/* PFN_<name>_v<version> exists only for a real ABI version of that entry point, and the
 * comparison checks every parameter and the result type. */
#define CHECK_ENTRY(name, symbol, version)                                      \
    _Static_assert(                                                             \
        __builtin_types_compatible_p(tcu_fn_##name *, PFN_##name##_v##version), \
        #name " does not match PFN_" #name "_v" #version);
TCU_ENTRY_POINTS(CHECK_ENTRY)
TCU_TEST_ENTRY_POINTS(CHECK_ENTRY)
