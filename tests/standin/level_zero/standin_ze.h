/*
 * standin_ze.h: the strict stand-in Level Zero driver (docs/level_zero.md), shared by
 * its files. The real loader loads it through ZE_ENABLE_ALT_DRIVERS; it exports only
 * the loader's 53 zeGet*ProcAddrTable / zetGet* / zesGet* getters and fills the tables
 * with the calls below.
 *
 * Strict where the specification allows a driver to be: every handle is looked up in
 * the stand-in's own list of live objects before it is read (an unknown or destroyed
 * handle is an error, never a crash), every descriptor's stype is checked, and every
 * error is also printed on stderr as "standin-ze: <call>: <why> (0x...)", so a test can
 * fail on any complaint it did not expect.
 *
 * Environment: TACK_STANDIN_ZE_DEVICES (root devices, default 1, at most 4);
 * TACK_STANDIN_ZE_API_VERSION ("1.0" to "1.4": what zeDriverGetApiVersion reports,
 * default 1.4).
 */
#ifndef TACK_STANDIN_ZE_H
#define TACK_STANDIN_ZE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ze_api.h>
#include <ze_ddi.h>
#include <zes_ddi.h>
#include <zet_ddi.h>

#define STANDIN_EXPORT __attribute__((visibility("default")))
#define STANDIN_MAX_DEVICES 4

/* What a handle points at. The tag is the first member of every object. */
typedef enum standin_tag {
    STANDIN_DRIVER = 0x5a440001,
    STANDIN_DEVICE,
    STANDIN_CONTEXT,
    STANDIN_QUEUE,
    STANDIN_LIST,
} standin_tag;

typedef struct standin_object {
    standin_tag tag;
    bool dead;                   /* destroyed: kept, so a later use is reported */
    struct standin_object *next; /* every object made, for lookups and the destructor */
} standin_object;

typedef struct standin_driver {
    standin_object obj;
} standin_driver;

typedef struct standin_device {
    standin_object obj;
    uint32_t index;
} standin_device;

typedef struct standin_context {
    standin_object obj;
    size_t live; /* allocations, queues and lists made in it and not yet destroyed */
} standin_context;

/* The process-wide state, under standin_lock. */
extern pthread_mutex_t standin_lock;
extern standin_driver standin_the_driver;
extern standin_device standin_devices[STANDIN_MAX_DEVICES];
extern uint32_t standin_ndevices;

/* Prints "standin-ze: call: why (0x...)" on stderr and returns rc. */
ze_result_t standin_complain(ze_result_t rc, const char *call, const char *why, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether zeInit succeeded; every other call but the getters refuses before it. */
bool standin_initialised(void);

/* The live object of that tag that h points at, or NULL (and the complaint printed,
 * *rc set) when h is NULL, unknown, of another kind, or destroyed. Call under
 * standin_lock. */
void *standin_find(const void *h, standin_tag tag, const char *call, ze_result_t *rc);

/* Adds a new object (calloc'd, size bytes, tag set) to the list. NULL when out of
 * memory. Call under standin_lock. */
void *standin_new(size_t size, standin_tag tag);

/* The calls of each file, for the tables (standin_ze_tables.c). */
ze_result_t standin_zeInit(ze_init_flags_t flags);
ze_result_t standin_zeDriverGet(uint32_t *pCount, ze_driver_handle_t *phDrivers);
ze_result_t standin_zeDriverGetApiVersion(ze_driver_handle_t hDriver,
                                          ze_api_version_t *version);
ze_result_t standin_zeDriverGetProperties(ze_driver_handle_t hDriver,
                                          ze_driver_properties_t *props);
ze_result_t standin_zeDriverGetExtensionProperties(
    ze_driver_handle_t hDriver, uint32_t *pCount,
    ze_driver_extension_properties_t *props);
ze_result_t standin_zeDeviceGet(ze_driver_handle_t hDriver, uint32_t *pCount,
                                ze_device_handle_t *phDevices);
ze_result_t standin_zeDeviceGetProperties(ze_device_handle_t hDevice,
                                          ze_device_properties_t *props);
ze_result_t standin_zeContextCreate(ze_driver_handle_t hDriver,
                                    const ze_context_desc_t *desc,
                                    ze_context_handle_t *phContext);
ze_result_t standin_zeContextDestroy(ze_context_handle_t hContext);

#endif /* TACK_STANDIN_ZE_H */
