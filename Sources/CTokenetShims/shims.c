// Implementation file so SwiftPM builds this header-only target, and home of the few shims that need
// _GNU_SOURCE (defined before any header, which a module's header cannot do reliably).
#define _GNU_SOURCE
#include <sched.h>

#include "CTokenetShims.h"

int ctk_current_cpu(void) { return sched_getcpu(); }

// MARK: OpenSSL at exit

static int ctk_openssl_ready_without_atexit = 0;

/// OpenSSL registers OPENSSL_cleanup with atexit on its first initialisation. At exit that cleanup walks the state of
/// every thread that used OpenSSL without a lock, while the event-loop and pool threads may still be ending and freeing
/// that state: a `tokenet` command that exited right after its call crashed there (SIGSEGV in libcrypto). Initialising
/// before anything else with OPENSSL_INIT_NO_ATEXIT keeps that cleanup from running; the system takes the memory back
/// at exit anyway. A constructor runs before main, so before any Swift code can make the first OpenSSL call.
__attribute__((constructor)) static void ctk_openssl_init_without_atexit(void) {
    uint64_t options = OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS;
    ctk_openssl_ready_without_atexit = OPENSSL_init_ssl(options, NULL) == 1;
}

int ctk_openssl_initialised_without_atexit(void) { return ctk_openssl_ready_without_atexit; }
