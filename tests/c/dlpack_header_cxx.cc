// dlpack_header_cxx.cc: the C++ side of test_dlpack_header.c. A C++ host (a PyTorch
// extension, say) includes the official dlpack.h and tack/tack.h in either order; the
// build compiles this file for the official 1.1 and 1.3 headers, each before and
// after Tack's, and fails if they cannot live together. Nothing here runs.
#if TACK_TEST_OFFICIAL_FIRST
#include <dlpack/dlpack.h>
#include "tack/tack.h"
#else
#include "tack/tack.h"
#include <dlpack/dlpack.h>
#endif

#include <type_traits>

// In C++ both headers give DLDeviceType int32_t as its underlying type.
static_assert(std::is_same<std::underlying_type<DLDeviceType>::type, int32_t>::value,
              "DLDeviceType is int32_t");
static_assert(sizeof(DLManagedTensorVersioned) == 80, "DLManagedTensorVersioned");
static_assert(sizeof(DLPackExchangeAPI) == 56, "DLPackExchangeAPI");
static_assert(DLPACK_MAJOR_VERSION == 1, "DLPack 1.x");

// Tack's functions take the host's types.
tack_status (*const tack_test_export_fn)(
    tack_array *, const tack_dlpack_export_options *,
    DLManagedTensorVersioned **) = tack_dlpack_export_versioned;
