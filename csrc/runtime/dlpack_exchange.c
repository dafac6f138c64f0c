/*
 * dlpack_exchange.c: reading another library's DLPack C exchange table.
 *
 * A producer publishes its table as a named capsule (DLPack 1.3) or as a plain
 * integer address (1.2). An integer is not checked by anyone before it reaches us:
 * any Python class can set the attribute to 1, or -1, and following such a value
 * would crash the process. So an address must look like a table before a single
 * byte of it is read: not NULL, not in the first page (no allocation lives there),
 * aligned for the header's pointers, and inside the user half of a 64-bit address
 * space. The same test guards every prev_api link. A value that passes can still be
 * wrong (nothing in C can prove an address valid); this stops the forgeries that
 * are easy to make by mistake.
 */
#include "internal.h"
#include "tack/dlpack.h"

/* How many prev_api links are followed: tables chain once per DLPack minor release. */
#define TACK__MAX_CHAIN 16

static bool
plausible_table(uintptr_t address)
{
    return tack__plausible_address(address, _Alignof(DLPackExchangeAPIHeader));
}

tack_status
tack_dlpack_exchange_api_find(uintptr_t address, const DLPackExchangeAPI **out)
{
    TACK__CHECK_ARG(out);
    for (int k = 0; k < TACK__MAX_CHAIN; k++) {
        if (!plausible_table(address)) {
            return tack__fail(TACK_ERR_DLPACK_INVALID,
                              "%#llx cannot be the address of a DLPack exchange table "
                              "(NULL, in the first page, misaligned or outside user "
                              "memory): a producer publishes the address of a static "
                              "DLPackExchangeAPI",
                              (unsigned long long)address);
        }
        const DLPackExchangeAPIHeader *h = (const DLPackExchangeAPIHeader *)address;
        if (h->version.major == TACK_DLPACK_MAJOR) {
            const DLPackExchangeAPI *api = (const DLPackExchangeAPI *)h;
            if (!api->managed_tensor_from_py_object_no_sync) {
                return tack__fail(TACK_ERR_DLPACK_INVALID,
                                  "the DLPack exchange table has no "
                                  "managed_tensor_from_py_object_no_sync function");
            }
            *out = api;
            return TACK_OK;
        }
        /* A newer table may chain to an older one that Tack reads. */
        if (!h->prev_api) {
            break;
        }
        address = (uintptr_t)h->prev_api;
    }
    return tack__fail(TACK_ERR_DLPACK_INVALID,
                      "the DLPack exchange table has no version %d.x in its chain",
                      TACK_DLPACK_MAJOR);
}
