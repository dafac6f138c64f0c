/*
 * level_zero_internal.h: what the files of the level_zero backend share: the loaded
 * Level Zero loader with its drivers and root devices, and one device's state.
 */
#ifndef TACK_LEVEL_ZERO_INTERNAL_H
#define TACK_LEVEL_ZERO_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "../../runtime/internal.h"
#include "ze_abi.h"

/* Root devices beyond this many (over all drivers) are not offered. */
#define TACK__ZE_MAX_DEVICES 64

/* A root device as discovery found it: its driver and that driver's API version. */
typedef struct tack__ze_root {
    tze_driver driver;
    tze_device device;
    tze_api_version version; /* zeDriverGetApiVersion of its driver */
} tack__ze_root;

/* The loader, loaded and initialised once per process (and never unloaded: drivers
 * may still run work of ours at exit). Read-only once tack__ze_loader_get returned it.
 */
typedef struct tack__ze_loader {
    tze_api api;    /* the 1.0 calls, every one non-NULL; the newer ones may be NULL */
    char path[512]; /* the library opened, for messages and the device's repr */
    uint32_t ndrivers;
    uint32_t ndevices;
    tze_driver drivers[TACK__ZE_MAX_DEVICES];
    tack__ze_root
        roots[TACK__ZE_MAX_DEVICES]; /* every driver's root devices, in order */
    /* Whether the build log of a failed zeModuleCreate may be used: not where the
     * loader intercepts (level_zero_driver.c, failed_build_logs_usable). */
    bool failed_build_logs_usable;
} tack__ze_loader;

/*
 * The loader: $TACK_LEVEL_ZERO_DRIVER when set (a full path), else libze_loader.so.1,
 * opened with dlopen, zeInit(0) called, drivers and their root devices listed. A
 * failure is retried by the next call: the environment may change.
 * Out: *out (Borrowed: static) only on success. TACK_ERR_DEVICE_UNAVAILABLE naming the
 * cause: no loader, no driver, no device, or a loader that lacks an entry point.
 */
tack_status tack__ze_loader_get(const tack__ze_loader **out);

/* Whether a call that the driver left out answered rc: the loader says
 * UNSUPPORTED_FEATURE for a NULL table entry, and UNINITIALIZED for one in its
 * intercept mode. */
bool tack__ze_unsupported(tze_result rc);

/* A failed Level Zero call as Tack's status: out of memory is TACK_ERR_NO_MEMORY, a
 * lost device TACK_ERR_DEVICE_UNAVAILABLE, the rest TACK_ERR_BACKEND, each naming the
 * call and the ze_result_t. */
tack_status tack__ze_error(tze_result rc, const char *call);

/* The ze_result_t's name, "ZE_RESULT_..." or "an unknown ze_result_t". Borrowed:
 * static. */
const char *tack__ze_result_name(tze_result rc);

/*
 * One device's state. Tack's work goes into one command list, executed on one command
 * queue, both made in the device's context: the work is queued by appending, runs when
 * the list is executed, and is known done after zeCommandQueueSynchronize. A list
 * that was executed is not touched again until its queue is synchronized.
 */
typedef struct tack__ze_state {
    const tack__ze_loader *ze; /* Borrowed: static */
    tze_driver driver;
    tze_device device;
    tze_context context;
    tze_api_version version; /* the driver's */
    bool adopted;            /* the context is another library's (external_context) */
    int ordinal;             /* the root device's index over all drivers */
    /* zeDeviceGetComputeProperties' limits of one group, which bound a kernel's
     * group size (level_zero_kernel.c's entry_of): its work items, at least 1, and
     * the bytes of local memory it may use (a reduction's partials are there). */
    uint32_t max_group;
    uint32_t shared_local;
    pthread_mutex_t lock; /* guards what follows */
    uint32_t group;       /* the compute queue group, which Tack's queue and list use */
    size_t fill_pattern;  /* that group's maxMemoryFillPatternSize */
    tze_command_queue queue;
    tze_command_list list;
    size_t appended; /* commands in the list since it was last executed */
    bool in_flight;  /* the list was executed and its queue not yet synchronized */
    bool free_ext;   /* zeMemFreeExt may be called (API 1.3, and the driver has it) */
    char describe[1024]; /* the loader and the device's name, for the device's repr */
} tack__ze_state;

/* The backend table's memory slots (level_zero_memory.c). */
tack_status tack__ze_alloc(void *state, size_t nbytes, bool exportable, void **ptr);
void tack__ze_free(void *state, void *ptr);
tack_status tack__ze_copy(void *state, void *dst, const void *src, size_t nbytes,
                          tack_copy_kind kind);
tack_status tack__ze_fill(void *state, void *dst, const void *pattern,
                          size_t pattern_nbytes, size_t count);
tack_status tack__ze_memory_space(void *state, const void *ptr, tack_memory_space *out);
tack_status tack__ze_synchronize(void *state);

#endif /* TACK_LEVEL_ZERO_INTERNAL_H */
