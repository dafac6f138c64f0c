/*
 * standin_ze_build_log.c: the build logs zeModuleCreate hands out when its caller
 * passes phBuildLog (docs/level_zero.md, "The strict stand-in driver").
 *
 * A log's text is what the module's build said: OpenCL's build log when OpenCL could
 * not build the SPIR-V, the stand-in's own reason when it refused the module before
 * that (not SPIR-V, malformed instructions), "" when the module was built. Strict
 * where the specification lets a driver be:
 * - the handle is looked up on every call (unknown, another kind, destroyed);
 * - zeModuleBuildLogGetString answers a *pSize of 0 with the size the text needs (its
 *   NUL included) and copies the text only into a buffer that size or larger;
 * - a log is its owner's to destroy, on success as on failure: one still live when
 *   the stand-in is unloaded is a complaint.
 * tack_standin_ze_build_logs (exported for tests) counts the logs made and destroyed.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdlib.h>
#include <string.h>

#include "standin_ze.h"

static uint64_t made, destroyed; /* under standin_lock */

STANDIN_EXPORT void tack_standin_ze_build_logs(uint64_t *made_out,
                                               uint64_t *destroyed_out);

void
tack_standin_ze_build_logs(uint64_t *made_out, uint64_t *destroyed_out)
{
    pthread_mutex_lock(&standin_lock);
    *made_out = made;
    *destroyed_out = destroyed;
    pthread_mutex_unlock(&standin_lock);
}

void
standin_build_log_give(ze_module_build_log_handle_t *phBuildLog, const char *text)
{
    if (!phBuildLog) {
        return;
    }
    *phBuildLog = NULL;
    char *copy = strdup(text ? text : "");
    if (!copy) {
        return;
    }
    pthread_mutex_lock(&standin_lock);
    standin_build_log *log = standin_new(sizeof *log, STANDIN_BUILD_LOG);
    if (log) {
        log->text = copy;
        made++;
        *phBuildLog = (ze_module_build_log_handle_t)log;
    }
    pthread_mutex_unlock(&standin_lock);
    if (!log) {
        free(copy);
    }
}

ze_result_t
standin_zeModuleBuildLogGetString(ze_module_build_log_handle_t hModuleBuildLog,
                                  size_t *pSize, char *pBuildLog)
{
    const char *call = "zeModuleBuildLogGetString";
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_build_log *log =
        standin_find(hModuleBuildLog, STANDIN_BUILD_LOG, call, &rc);
    if (log && !pSize) {
        rc = standin_complain(ZE_RESULT_ERROR_INVALID_NULL_POINTER, call,
                              "pSize is NULL");
    }
    else if (log) {
        size_t need = strlen(log->text) + 1;
        if (*pSize == 0 || !pBuildLog) {
            *pSize = need;
        }
        else if (*pSize < need) {
            rc = standin_complain(ZE_RESULT_ERROR_INVALID_SIZE, call,
                                  "a buffer of %zu bytes for a log of %zu (ask for the "
                                  "size first, with *pSize 0)",
                                  *pSize, need);
        }
        else {
            memcpy(pBuildLog, log->text, need);
            *pSize = need;
        }
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

ze_result_t
standin_zeModuleBuildLogDestroy(ze_module_build_log_handle_t hModuleBuildLog)
{
    const char *call = "zeModuleBuildLogDestroy";
    if (standin_check_not_ended(call) != ZE_RESULT_SUCCESS) {
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    ze_result_t rc = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&standin_lock);
    standin_build_log *log =
        standin_find(hModuleBuildLog, STANDIN_BUILD_LOG, call, &rc);
    if (log) {
        free(log->text);
        log->text = NULL;
        log->obj.dead = true;
        destroyed++;
    }
    pthread_mutex_unlock(&standin_lock);
    return rc;
}

void
standin_build_log_release(standin_build_log *log)
{
    if (!log->obj.dead) {
        standin_complain(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeModuleCreate",
                         "its build log %p was never destroyed "
                         "(zeModuleBuildLogDestroy)",
                         (void *)log);
    }
    free(log->text);
    log->text = NULL;
}
