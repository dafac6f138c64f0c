/*
 * version.c: the library's own version, for a host to compare with the TACK_VERSION
 * of the headers it compiled against.
 */
#include "tack/version.h"

const char *
tack_version(void)
{
    return TACK_VERSION;
}
