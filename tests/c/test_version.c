/* test_version.c: the library's version matches the headers' and has three parts. */
#include "harness.h"

TACK_TEST(library_version_is_the_headers_version)
{
    CHECK(strcmp(tack_version(), TACK_VERSION) == 0);
    char parts[64];
    snprintf(parts, sizeof parts, "%d.%d.%d", TACK_VERSION_MAJOR, TACK_VERSION_MINOR,
             TACK_VERSION_PATCH);
    CHECK(strcmp(parts, tack_version()) == 0);
}
