/*
 * test_cuda_abi.c: csrc/backends/cuda/cuda_abi.h against the CUDA toolkit's own cuda.h
 * and cudaTypedefs.h. Almost everything is checked at compile time: a constant, struct
 * size or field offset that drifts from CUDA 13.0 stops the build (function types are
 * checked in test_cuda_abi_signatures.c). The run-time part checks the special handles
 * and the exported symbol names, which are macros in cuda.h.
 *
 * Built only where meson finds a toolkit (through nvcc); see tests/c/meson.build.
 */
#include <cuda.h>

#include "../../csrc/backends/cuda/cuda_abi.h"
#include "harness.h"

#if CUDA_VERSION < 13000
#error "the ABI test pins CUDA 13.0 layouts; this toolkit is older"
#endif

/* ---- constants ----------------------------------------------------------------------
 */

#define CHECK_RESULT(name, value)                                                    \
    _Static_assert((int)TCU_##name == (int)CUDA_##name && value == (int)CUDA_##name, \
                   #name);
TCU_RESULT_LIST(CHECK_RESULT)

#define CHECK_ATTRIBUTE(name, value)                                           \
    _Static_assert(                                                            \
        (int)TCU_DEVICE_ATTRIBUTE_##name == (int)CU_DEVICE_ATTRIBUTE_##name && \
            value == (int)CU_DEVICE_ATTRIBUTE_##name,                          \
        #name);
TCU_DEVICE_ATTRIBUTE_LIST(CHECK_ATTRIBUTE)

#define CHECK_CONSTANT(name, value) \
    _Static_assert((int)TCU_##name == (int)CU_##name && value == (int)CU_##name, #name);
TCU_CONSTANT_LIST(CHECK_CONSTANT)

/* ---- sizes of the enum-typed and handle types
 * ---------------------------------------- */

#define CHECK_INT_SIZED(type) \
    _Static_assert(sizeof(type) == sizeof(int), #type " is not int-sized");
CHECK_INT_SIZED(CUresult)
CHECK_INT_SIZED(CUdevice_attribute)
CHECK_INT_SIZED(CUpointer_attribute)
CHECK_INT_SIZED(CUmemLocationType)
CHECK_INT_SIZED(CUmemAllocationType)
CHECK_INT_SIZED(CUmemAllocationHandleType)
CHECK_INT_SIZED(CUmemAccess_flags)
CHECK_INT_SIZED(CUmemAllocationGranularity_flags)
CHECK_INT_SIZED(CUdriverProcAddressQueryResult)
CHECK_INT_SIZED(CUmemorytype)

#define CHECK_SAME_TYPE(ours, theirs)                          \
    _Static_assert(__builtin_types_compatible_p(ours, theirs), \
                   #ours " is not " #theirs);
CHECK_SAME_TYPE(tcu_device, CUdevice)
CHECK_SAME_TYPE(tcu_deviceptr, CUdeviceptr)
CHECK_SAME_TYPE(tcu_mem_handle, CUmemGenericAllocationHandle)
CHECK_SAME_TYPE(tcu_context, CUcontext)
CHECK_SAME_TYPE(tcu_stream, CUstream)
CHECK_SAME_TYPE(tcu_event, CUevent)
CHECK_SAME_TYPE(tcu_module, CUmodule)
CHECK_SAME_TYPE(tcu_function, CUfunction)
CHECK_SAME_TYPE(tcu_ctx_create_params, CUctxCreateParams)
CHECK_SAME_TYPE(tcu_array, CUarray)
CHECK_SAME_TYPE(uint64_t, cuuint64_t)

/* ---- struct layouts
 * -------------------------------------------------------------------- */

#define CHECK_STRUCT(ours, theirs)                                            \
    _Static_assert(                                                           \
        sizeof(ours) == sizeof(theirs) && _Alignof(ours) == _Alignof(theirs), \
        #ours " size or alignment");
#define CHECK_FIELD(ours, theirs, field)                                           \
    _Static_assert(offsetof(ours, field) == offsetof(theirs, field) &&             \
                       sizeof(((ours *)0)->field) == sizeof(((theirs *)0)->field), \
                   #ours "." #field);
CHECK_STRUCT(tcu_uuid, CUuuid)
CHECK_FIELD(tcu_uuid, CUuuid, bytes)
CHECK_STRUCT(tcu_mem_location, CUmemLocation)
CHECK_FIELD(tcu_mem_location, CUmemLocation, type)
CHECK_FIELD(tcu_mem_location, CUmemLocation, id)
CHECK_STRUCT(tcu_mem_allocation_prop, CUmemAllocationProp)
CHECK_FIELD(tcu_mem_allocation_prop, CUmemAllocationProp, type)
CHECK_FIELD(tcu_mem_allocation_prop, CUmemAllocationProp, requestedHandleTypes)
CHECK_FIELD(tcu_mem_allocation_prop, CUmemAllocationProp, location)
CHECK_FIELD(tcu_mem_allocation_prop, CUmemAllocationProp, win32HandleMetaData)
CHECK_FIELD(tcu_mem_allocation_prop, CUmemAllocationProp, allocFlags)
CHECK_FIELD(tcu_mem_allocation_prop, CUmemAllocationProp, allocFlags.compressionType)
CHECK_FIELD(tcu_mem_allocation_prop, CUmemAllocationProp,
            allocFlags.gpuDirectRDMACapable)
CHECK_FIELD(tcu_mem_allocation_prop, CUmemAllocationProp, allocFlags.usage)
CHECK_FIELD(tcu_mem_allocation_prop, CUmemAllocationProp, allocFlags.reserved)
CHECK_STRUCT(tcu_mem_access_desc, CUmemAccessDesc)
CHECK_FIELD(tcu_mem_access_desc, CUmemAccessDesc, location)
CHECK_FIELD(tcu_mem_access_desc, CUmemAccessDesc, flags)
CHECK_STRUCT(tcu_memcpy2d, CUDA_MEMCPY2D)
#define CHECK_MEMCPY2D_FIELD(field) CHECK_FIELD(tcu_memcpy2d, CUDA_MEMCPY2D, field)
CHECK_MEMCPY2D_FIELD(srcXInBytes)
CHECK_MEMCPY2D_FIELD(srcY)
CHECK_MEMCPY2D_FIELD(srcMemoryType)
CHECK_MEMCPY2D_FIELD(srcHost)
CHECK_MEMCPY2D_FIELD(srcDevice)
CHECK_MEMCPY2D_FIELD(srcArray)
CHECK_MEMCPY2D_FIELD(srcPitch)
CHECK_MEMCPY2D_FIELD(dstXInBytes)
CHECK_MEMCPY2D_FIELD(dstY)
CHECK_MEMCPY2D_FIELD(dstMemoryType)
CHECK_MEMCPY2D_FIELD(dstHost)
CHECK_MEMCPY2D_FIELD(dstDevice)
CHECK_MEMCPY2D_FIELD(dstArray)
CHECK_MEMCPY2D_FIELD(dstPitch)
CHECK_MEMCPY2D_FIELD(WidthInBytes)
CHECK_MEMCPY2D_FIELD(Height)

/* The special handles are casts in cuda.h, so they cannot be static-asserted. */
TACK_TEST(cuda_abi_special_handles)
{
    CHECK_EQ_INT(TCU_STREAM_LEGACY_HANDLE, (uintptr_t)CU_STREAM_LEGACY);
    CHECK_EQ_INT(TCU_STREAM_PER_THREAD_HANDLE, (uintptr_t)CU_STREAM_PER_THREAD);
    CHECK_EQ_INT(TCU_LAUNCH_PARAM_END_HANDLE, (uintptr_t)CU_LAUNCH_PARAM_END);
    CHECK_EQ_INT(TCU_LAUNCH_PARAM_BUFFER_POINTER_HANDLE,
                 (uintptr_t)CU_LAUNCH_PARAM_BUFFER_POINTER);
    CHECK_EQ_INT(TCU_LAUNCH_PARAM_BUFFER_SIZE_HANDLE,
                 (uintptr_t)CU_LAUNCH_PARAM_BUFFER_SIZE);
}

/* Each entry's `symbol` is the name cuda.h binds its base name to (with the default,
 * legacy-stream compilation this test uses): what a library exports. */
#define STRINGIFY_(x) #x
#define EXPANDED_NAME(x) STRINGIFY_(x)
TACK_TEST(cuda_abi_exported_symbol_names)
{
    static const struct {
        const char *bound;
        const char *listed;
    } names[] = {
#define NAME_ROW(name, symbol, version) {EXPANDED_NAME(name), #symbol},
        TCU_ENTRY_POINTS(NAME_ROW) TCU_TEST_ENTRY_POINTS(NAME_ROW)
#undef NAME_ROW
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (strcmp(names[k].bound, names[k].listed) != 0) {
            tack_test_fail(__FILE__, __LINE__, "cuda.h binds %s, the list says %s",
                           names[k].bound, names[k].listed);
        }
    }
}
