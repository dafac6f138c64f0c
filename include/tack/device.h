/*
 * device.h: devices. A device is a backend (cpu, cuda, hip, level_zero), an ordinal,
 * the options it was opened with and a memory domain. Arrays whose devices have
 * different memory domains never meet in one operation.
 *
 * Devices opened without options come from a registry: the same (backend, ordinal)
 * gives the same device object. A device opened with options (a Level Zero
 * external_context) is a device of its own with a memory domain of its own.
 */
#ifndef TACK_DEVICE_H
#define TACK_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "tack/export.h"
#include "tack/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tack_device tack_device;
typedef struct tack_backend tack_backend;

/* The handles of a Level Zero context owned by another library. All three are
 * required and non-zero. */
typedef struct tack_external_context {
    uintptr_t driver;
    uintptr_t device;
    uintptr_t context;
    /* Which of the three were given at all (bit 0 driver, 1 device, 2 context), so
     * a missing handle and a null one are told apart in the message. */
    unsigned present;
} tack_external_context;

/* Options a device may be opened with. A NULL member means "not given". */
typedef struct tack_device_options {
    const tack_external_context *external_context;
} tack_device_options;

/*
 * Parses "cpu", "cuda", "cuda:1" into a backend name (copied into name_out, at most
 * name_cap bytes with the terminator) and an ordinal. A "name:N" ordinal overrides
 * *ordinal. Out: both only on success. TACK_ERR_UNKNOWN_DEVICE for a bad string.
 */
TACK_API tack_status tack_device_parse(const char *spec, char *name_out,
                                       size_t name_cap, int *ordinal);

/*
 * Whether the backend called name accepts the option called option. Unknown backend
 * names accept nothing. tack.device() uses this to refuse a misspelled or foreign
 * option before anything is constructed.
 */
TACK_API bool tack_device_accepts_option(const char *name, const char *option);

/*
 * Opens a device. name: "cpu", "cuda", "hip", "level_zero" (or "metal", refused off
 * macOS). options may be NULL.
 * Returns: new reference in *out, release with tack_device_release(). Out: set only on
 * success. Errors: TACK_ERR_UNKNOWN_DEVICE, TACK_ERR_INVALID_ARGUMENT (bad option
 * values), TACK_ERR_DEVICE_UNAVAILABLE (driver or device missing).
 */
TACK_API tack_status tack_device_open(const char *name, int ordinal,
                                      const tack_device_options *options,
                                      tack_device **out);

TACK_API void tack_device_retain(tack_device *dev);
TACK_API void tack_device_release(tack_device *dev);

/* Borrowed: static strings. */
TACK_API const char *tack_device_backend_name(const tack_device *dev);
TACK_API int tack_device_ordinal(const tack_device *dev);
/* The DLPack device type of the device's memory (kDLCPU = 1, kDLCUDA = 2, ...). */
TACK_API int tack_device_dlpack_type(const tack_device *dev);
/* Arrays of two devices may meet in one launch only if these are equal. */
TACK_API uint64_t tack_device_memory_domain(const tack_device *dev);
/*
 * Tack's own stream on dev as the driver's integer handle (a CUstream on CUDA), or 0
 * on a device whose work is synchronous (the CPU). What a consumer passes as
 * `stream=` to a producer's __dlpack__ so the producer orders its writes first.
 * 0 for a NULL dev.
 */
TACK_API uintptr_t tack_device_stream(const tack_device *dev);

/*
 * Makes dev's stream wait for the work queued so far on a foreign stream of the same
 * device (a driver handle, or CUDA's 1 legacy / 2 per-thread default stream), without
 * blocking the host. TACK_OK with nothing to do on a device without streams.
 * Errors: TACK_ERR_INVALID_ARGUMENT (dev is NULL).
 */
TACK_API tack_status tack_device_wait_for_stream(tack_device *dev, uintptr_t foreign);

/*
 * As tack_device_wait_for_stream, with the stream in DLPack's numbering for dev's
 * kind of device, checked first: -1 orders nothing (the only value a device without
 * streams takes); on CUDA 1 is the legacy and 2 the per-thread default stream and a
 * larger value a CUstream of the device's context; 0 and values below -1 are never
 * streams. Errors: TACK_ERR_INVALID_ARGUMENT (dev is NULL), TACK_ERR_DLPACK_INVALID
 * (a value that is not a stream of dev).
 */
TACK_API tack_status tack_device_follow_stream(tack_device *dev, int64_t stream);

/* The driver library dev was opened with, or NULL (the CPU, or a NULL dev).
 * Borrowed: static. */
TACK_API const char *tack_device_driver_path(const tack_device *dev);

/* Whether the device was opened with an external context. */
TACK_API bool tack_device_has_external_context(const tack_device *dev);
/* The handles of the external context dev was opened with, copied into *out: true;
 * false (*out untouched) for a device opened without one, or a NULL argument. */
TACK_API bool tack_device_external_context(const tack_device *dev,
                                           tack_external_context *out);
/* Borrowed: the backend table, valid while dev lives. */
TACK_API const tack_backend *tack_device_backend(const tack_device *dev);
/* Waits for every launch queued on the device. */
TACK_API tack_status tack_device_synchronize(tack_device *dev);

/*
 * Says the process is ending (a binding calls it when its interpreter begins to exit):
 * from then on a backend that may outlive the libraries owning its driver's objects
 * (Level Zero, whose contexts another library may own) frees and destroys nothing; the
 * memory goes with the process. Cannot be undone.
 */
TACK_API void tack_process_exiting(void);

/*
 * The default device: the CPU until tack_set_default_device() says otherwise.
 * Returns: new reference. Never fails (the CPU device is always there) except for
 * TACK_ERR_NO_MEMORY on first use.
 */
TACK_API tack_status tack_default_device(tack_device **out);
/* Makes dev the default. Retains dev and releases the previous default. */
TACK_API void tack_set_default_device(tack_device *dev);

#ifdef __cplusplus
}
#endif

#endif /* TACK_DEVICE_H */
