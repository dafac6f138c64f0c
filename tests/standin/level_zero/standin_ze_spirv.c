/*
 * standin_ze_spirv.c: what the stand-in reads of a kernel's parameters in its SPIR-V
 * module, so that a launch on OpenCL sets each argument as what it is (a value, a
 * global pointer, local memory) and never guesses from sizes.
 *
 * OpEntryPoint names the function; its OpFunctionParameters follow its OpFunction;
 * a parameter whose type is an OpTypePointer to CrossWorkgroup is global memory, to
 * Workgroup local memory, anything else a value. The module's words were checked to
 * tile into instructions when it was made (standin_ze_module.c).
 */
#include <string.h>

#include "standin_ze.h"

enum {
    OP_ENTRY_POINT = 15,
    OP_TYPE_POINTER = 32,
    OP_FUNCTION = 54,
    OP_FUNCTION_PARAMETER = 55,
    EXECUTION_KERNEL = 6,
    STORAGE_WORKGROUP = 4,
    STORAGE_CROSS_WORKGROUP = 5,
};

/* The storage class of pointer type id, or 0 when id is no pointer type. */
static uint32_t
pointer_storage(const uint32_t *words, size_t nwords, uint32_t id)
{
    for (size_t at = 5; at < nwords && words[at] >> 16;) {
        uint32_t count = words[at] >> 16, op = words[at] & 0xffffu;
        if (op == OP_TYPE_POINTER && count >= 4 && words[at + 1] == id) {
            return words[at + 2];
        }
        at += count;
    }
    return 0;
}

int
standin_spirv_params(const uint32_t *words, size_t nwords, const char *entry,
                     standin_arg_kind *kinds, int max)
{
    uint32_t function = 0;
    size_t len = strlen(entry);
    for (size_t at = 5; at < nwords && words[at] >> 16 && !function;) {
        uint32_t count = words[at] >> 16, op = words[at] & 0xffffu;
        if (op == OP_ENTRY_POINT && count > 3 && words[at + 1] == EXECUTION_KERNEL &&
            4 * (size_t)(count - 3) > len &&
            memcmp(&words[at + 3], entry, len + 1) == 0) {
            function = words[at + 2];
        }
        at += count;
    }
    int n = -1;
    for (size_t at = 5; function && at < nwords && words[at] >> 16;) {
        uint32_t count = words[at] >> 16, op = words[at] & 0xffffu;
        if (op == OP_FUNCTION && count >= 5 && words[at + 2] == function) {
            n = 0;
        }
        else if (n >= 0 && op == OP_FUNCTION_PARAMETER && count >= 3) {
            if (n == max) {
                return -1;
            }
            uint32_t storage = pointer_storage(words, nwords, words[at + 1]);
            kinds[n++] = storage == STORAGE_CROSS_WORKGROUP ? STANDIN_ARG_GLOBAL
                         : storage == STORAGE_WORKGROUP     ? STANDIN_ARG_LOCAL
                                                            : STANDIN_ARG_VALUE;
        }
        else if (n >= 0) {
            break; /* the parameters come right after their OpFunction */
        }
        at += count;
    }
    return n;
}
