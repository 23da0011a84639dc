// Implementation file so SwiftPM builds this header-only target, and home of the few shims that need
// _GNU_SOURCE (defined before any header, which a module's header cannot do reliably).
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>

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

// MARK: Stop signals

/// The write end of the pipe that `ctk_stop_signal_handler` reports to; set before the handler is installed.
static volatile int ctk_stop_signal_pipe = -1;

/// Writes the signal's number to the pipe and nothing else: write(2) is async-signal-safe, where logging, locking
/// or allocating in a handler is not. The write end is non-blocking, so a full pipe (a stop is already on its way)
/// never holds the interrupted thread. errno is kept for the code the signal interrupted.
static void ctk_stop_signal_handler(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    ssize_t written = write(ctk_stop_signal_pipe, &byte, 1);
    (void)written;
    errno = saved;
}

int ctk_stop_signals_install(const int *numbers, int count) {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) return -1;
    if (fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK) != 0) return -1;
    ctk_stop_signal_pipe = ends[1];
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = ctk_stop_signal_handler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < count; i++) sigaddset(&action.sa_mask, numbers[i]);
    for (int i = 0; i < count; i++) {
        // A hangup ignored from the start (nohup, or a supervisor that set it so) stays ignored: the process was
        // asked to outlive its terminal.
        struct sigaction current;
        if (numbers[i] == SIGHUP && sigaction(SIGHUP, NULL, &current) == 0 && current.sa_handler == SIG_IGN) continue;
        if (sigaction(numbers[i], &action, NULL) != 0) return -1;
    }
    return ends[0];
}

int ctk_set_current_thread_name(const char *name) {
    // The kernel keeps 15 bytes and pthread_setname_np refuses a longer name outright: cut it instead.
    char shortened[16];
    strncpy(shortened, name, sizeof shortened - 1);
    shortened[sizeof shortened - 1] = '\0';
    return pthread_setname_np(pthread_self(), shortened);
}

// MARK: Child processes

int ctk_spawn_actions_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int ctk_spawn_actions_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int ctk_pipe_cloexec(int ends[2]) { return pipe2(ends, O_CLOEXEC); }
