/*
 * tack.h: the umbrella header of the Tack C runtime. A C host includes this and
 * links libtack.
 */
#ifndef TACK_H
#define TACK_H

#include "tack/alloc.h"
#include "tack/array.h"
#include "tack/device.h"
#include "tack/dlpack.h"
#include "tack/dtype.h"
#include "tack/kernel.h"
#include "tack/status.h"
#include "tack/version.h"

#endif /* TACK_H */
