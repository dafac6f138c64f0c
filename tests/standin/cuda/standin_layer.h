/*
 * standin_layer.h: what the CUDA layer of the stand-in tells its name-neutral core
 * (tests/standin/core): the numbers of the results the core returns, which of them are
 * sticky, and the handle types the core's objects are handed out as.
 *
 * The core is compiled once per layer against that layer's standin_layer.h (meson puts
 * the layer's folder first on the include path), so it names results as STANDIN_OK and
 * STANDIN_ERR_* and never spells a vendor's constant; the call log and
 * TACK_STANDIN_FAIL speak the layer's numbers, because the core only passes them on.
 * A second layer (a HIP stand-in: hipError_t numbers, hipStream_t handles) writes its
 * own copy of this header beside its own entry points.
 */
#ifndef TACK_STANDIN_LAYER_H
#define TACK_STANDIN_LAYER_H

#include "../../../csrc/backends/cuda/cuda_abi.h"

/* A result as the entry points return it: the core produces only the names below. */
typedef tcu_result standin_rc;

#define STANDIN_OK TCU_SUCCESS
#define STANDIN_ERR_INVALID_VALUE TCU_ERROR_INVALID_VALUE
#define STANDIN_ERR_OUT_OF_MEMORY TCU_ERROR_OUT_OF_MEMORY
#define STANDIN_ERR_NOT_INITIALIZED TCU_ERROR_NOT_INITIALIZED
#define STANDIN_ERR_DEINITIALIZED TCU_ERROR_DEINITIALIZED
#define STANDIN_ERR_NO_DEVICE TCU_ERROR_NO_DEVICE
#define STANDIN_ERR_INVALID_DEVICE TCU_ERROR_INVALID_DEVICE
#define STANDIN_ERR_INVALID_CONTEXT TCU_ERROR_INVALID_CONTEXT
#define STANDIN_ERR_INVALID_HANDLE TCU_ERROR_INVALID_HANDLE
#define STANDIN_ERR_NOT_FOUND TCU_ERROR_NOT_FOUND
#define STANDIN_ERR_NOT_READY TCU_ERROR_NOT_READY
#define STANDIN_ERR_ILLEGAL_ADDRESS TCU_ERROR_ILLEGAL_ADDRESS
#define STANDIN_ERR_NOT_SUPPORTED TCU_ERROR_NOT_SUPPORTED
#define STANDIN_ERR_HOST_MEMORY_ALREADY_REGISTERED \
    TCU_ERROR_HOST_MEMORY_ALREADY_REGISTERED
#define STANDIN_ERR_HOST_MEMORY_NOT_REGISTERED TCU_ERROR_HOST_MEMORY_NOT_REGISTERED

/* The newest driver version the layer plays (cuDriverGetVersion's 13000, CUDA 13.0). */
#define STANDIN_LAYER_VERSION 13000

/* The largest pitch of a 2-D copy (the device's MAX_PITCH). */
#define STANDIN_MAX_PITCH TCU_MAX_PITCH

/* The default code of an injected fault (TACK_STANDIN_FAIL=name:k). */
#define STANDIN_ERR_INJECTED_DEFAULT TCU_ERROR_OUT_OF_MEMORY

/* Whether rc poisons the context it happens on (cuda.h's sticky errors). */
#define standin_rc_is_sticky(rc) tcu_is_sticky(rc)

#endif /* TACK_STANDIN_LAYER_H */
