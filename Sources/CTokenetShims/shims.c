// Implementation file so SwiftPM builds this header-only target, and home of the few shims that need
// _GNU_SOURCE (defined before any header, which a module's header cannot do reliably).
#define _GNU_SOURCE
#include <sched.h>

#include "CTokenetShims.h"

int ctk_current_cpu(void) { return sched_getcpu(); }
