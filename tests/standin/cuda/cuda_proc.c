/*
 * cuda_proc.c: cuGetProcAddress_v2, the one entry point Tack finds with dlsym; every
 * other one is resolved through it, by base name and ABI version, as the backend does
 * with the real driver.
 *
 * The stand-in implements exactly one ABI of each entry point: the version cuda_abi.h
 * pins. A request for an older version (which the driver would answer with an older
 * ABI) is refused with VERSION_NOT_SUFFICIENT, and a request at or past a newer ABI
 * the stand-in does not implement is refused as not supported, never answered with a
 * function of the wrong signature. Only legacy-stream semantics exist here:
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM is refused as not supported.
 */
#include <string.h>

#include "cuda_layer.h"

static const struct {
    const char *name;
    int version; /* the ABI implemented */
    void (*fn)(void);
} entries[] = {
#define ENTRY_ROW(name, symbol, version) {#name, version, (void (*)(void))(symbol)},
    TCU_ENTRY_POINTS(ENTRY_ROW) TCU_TEST_ENTRY_POINTS(ENTRY_ROW)
#undef ENTRY_ROW
};

/* Entry points whose ABI changed at or below this driver's version after the one
 * pinned (cudaTypedefs.h of CUDA 13.0: both now take the context as an argument). */
static int
newer_abi(const char *name)
{
    if (strcmp(name, "cuCtxGetDevice") == 0 || strcmp(name, "cuCtxSynchronize") == 0) {
        return 13000;
    }
    return 0;
}

STANDIN_EXPORT tcu_result
cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, uint64_t flags,
                    tcu_proc_address_query_result *symbolStatus)
{
    standin_rc rc = standin_enter_as("cuGetProcAddress", STANDIN_ENTRY_ANYTIME);
    tcu_proc_address_query_result status = TCU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void (*found)(void) = NULL;
    if (rc == STANDIN_OK && (!symbol || !pfn || flags > 2)) {
        rc = STANDIN_ERR_INVALID_VALUE;
    }
    else if (rc == STANDIN_OK &&
             flags == TCU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
        rc = STANDIN_ERR_NOT_SUPPORTED;
    }
    else if (rc == STANDIN_OK) {
        rc = STANDIN_ERR_NOT_FOUND;
        for (size_t k = 0; k < sizeof entries / sizeof entries[0]; k++) {
            if (strcmp(entries[k].name, symbol) != 0) {
                continue;
            }
            int next = newer_abi(symbol);
            if (cudaVersion < entries[k].version) {
                status = TCU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            }
            else if (next && cudaVersion >= next) {
                rc = STANDIN_ERR_NOT_SUPPORTED;
            }
            else {
                status = TCU_GET_PROC_ADDRESS_SUCCESS;
                found = entries[k].fn;
                rc = STANDIN_OK;
            }
            break;
        }
    }
    if (pfn && rc != STANDIN_ERR_INVALID_VALUE) {
        /* POSIX lets a function pointer travel as void *, as dlsym's result does. */
        _Static_assert(sizeof found == sizeof *pfn,
                       "function and data pointers differ");
        memcpy(pfn, &found, sizeof found);
    }
    if (symbolStatus && rc != STANDIN_ERR_INVALID_VALUE) {
        *symbolStatus = status;
    }
    return standin_leave(
        rc, "cuGetProcAddress", "%s, version=%d, flags=%llu, status=%d",
        symbol ? symbol : "(null)", cudaVersion, (unsigned long long)flags, status);
}
