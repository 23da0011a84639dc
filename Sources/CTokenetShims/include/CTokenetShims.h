// Linux headers and C macros that Swift cannot import directly, wrapped as static inline functions.
#ifndef CTOKENET_SHIMS_H
#define CTOKENET_SHIMS_H

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

// MARK: epoll

/// One ready event. `struct epoll_event` is packed on x86_64, which Swift imports poorly, so events are copied
/// into this plain struct.
typedef struct {
    uint32_t events;
    uint64_t data;
} ctk_event;

static const uint32_t CTK_EPOLLIN = EPOLLIN;
static const uint32_t CTK_EPOLLOUT = EPOLLOUT;
static const uint32_t CTK_EPOLLERR = EPOLLERR;
static const uint32_t CTK_EPOLLHUP = EPOLLHUP;
static const uint32_t CTK_EPOLLRDHUP = EPOLLRDHUP;

static inline int ctk_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/// op is EPOLL_CTL_ADD (1), EPOLL_CTL_DEL (2) or EPOLL_CTL_MOD (3).
static inline int ctk_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

static inline int ctk_epoll_add(int epfd, int fd, uint32_t events, uint64_t data) {
    return ctk_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, events, data);
}
static inline int ctk_epoll_mod(int epfd, int fd, uint32_t events, uint64_t data) {
    return ctk_epoll_ctl(epfd, EPOLL_CTL_MOD, fd, events, data);
}
static inline int ctk_epoll_del(int epfd, int fd) { return ctk_epoll_ctl(epfd, EPOLL_CTL_DEL, fd, 0, 0); }

/// Waits for up to `max` events (at most 64) and copies them into `out`.
static inline int ctk_epoll_wait(int epfd, ctk_event *out, int max, int timeout_ms) {
    struct epoll_event evs[64];
    if (max > 64) max = 64;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        out[i].events = evs[i].events;
        out[i].data = evs[i].data.u64;
    }
    return n;
}

// MARK: CPU placement

/// The CPU this thread runs on (`sched_getcpu`, which needs _GNU_SOURCE: defined in shims.c), or -1.
int ctk_current_cpu(void);

// MARK: OpenSSL at exit

/// 1 when the constructor in shims.c initialised OpenSSL with OPENSSL_INIT_NO_ATEXIT before anything else did.
int ctk_openssl_initialised_without_atexit(void);

/// The CPU that last processed a segment received on `fd` (SO_INCOMING_CPU), or -1. On loopback a segment is
/// processed on the CPU that sent it, so this is where the peer ran when it last sent.
static inline int ctk_incoming_cpu(int fd) {
    int cpu = -1;
    socklen_t len = sizeof(cpu);
    if (getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &len) != 0) return -1;
    return cpu;
}

/// The connected peer's address as IPv4 (4 bytes) or IPv6 (16 bytes) in network order, with an IPv4-mapped IPv6
/// address (`::ffff:a.b.c.d`, how a dual-stack listener on `::` sees an IPv4 peer) given as the IPv4 address it
/// maps. Returns the number of bytes written to `out` (4 or 16), or 0 when there is no connected IP peer.
static inline int ctk_peer_address(int fd, uint8_t out[16]) {
    struct sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    memset(&addr, 0, sizeof(addr));
    if (getpeername(fd, (struct sockaddr *)&addr, &len) != 0) return 0;
    if (addr.ss_family == AF_INET) {
        memcpy(out, &((struct sockaddr_in *)&addr)->sin_addr, 4);
        return 4;
    }
    if (addr.ss_family == AF_INET6) {
        const struct in6_addr *six = &((struct sockaddr_in6 *)&addr)->sin6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(six->s6_addr, mapped, 12) == 0) {
            memcpy(out, six->s6_addr + 12, 4);
            return 4;
        }
        memcpy(out, six->s6_addr, 16);
        return 16;
    }
    return 0;
}

/// 1 when the connected peer's address is a loopback address (127.0.0.0/8, `::1`, or 127.0.0.0/8 mapped into
/// IPv6), else 0.
static inline int ctk_peer_is_loopback(int fd) {
    uint8_t address[16];
    int length = ctk_peer_address(fd, address);
    if (length == 4) return address[0] == 127;
    if (length == 16) {
        static const uint8_t one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        return memcmp(address, one, 16) == 0;
    }
    return 0;
}

// MARK: clock

/// CLOCK_MONOTONIC in nanoseconds, for the event loop's idle poll (a vDSO call, no system call).
static inline int64_t ctk_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// MARK: eventfd

static inline int ctk_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
static inline int ctk_eventfd_signal(int fd) {
    uint64_t one = 1;
    return (int)write(fd, &one, sizeof(one));
}
static inline int ctk_eventfd_drain(int fd) {
    uint64_t value = 0;
    return (int)read(fd, &value, sizeof(value));
}

// MARK: sockets

static inline int ctk_errno(void) { return errno; }

static inline int ctk_tcp_socket(void) { return socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); }

/// A non-blocking, close-on-exec TCP socket of `family` (AF_INET or AF_INET6).
static inline int ctk_tcp_socket_family(int family) {
    return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

/// Declared here because glibc only exposes it under _GNU_SOURCE, which the system module map does not set.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);

static inline int ctk_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }

static inline int ctk_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static inline int ctk_set_reuseaddr(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
}

/// Fills a socket address from an IPv4 dotted quad or an IPv6 literal (no brackets, no zone); returns its
/// family (AF_INET or AF_INET6) and sets `*len`, or returns 0 for text that is neither.
static inline int ctk_ip_address(const char *host, uint16_t port, struct sockaddr_storage *out, socklen_t *len) {
    memset(out, 0, sizeof(*out));
    struct sockaddr_in *four = (struct sockaddr_in *)out;
    if (inet_pton(AF_INET, host, &four->sin_addr) == 1) {
        four->sin_family = AF_INET;
        four->sin_port = htons(port);
        *len = sizeof(*four);
        return AF_INET;
    }
    struct sockaddr_in6 *six = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET6, host, &six->sin6_addr) == 1) {
        six->sin6_family = AF_INET6;
        six->sin6_port = htons(port);
        *len = sizeof(*six);
        return AF_INET6;
    }
    return 0;
}

/// The address family of an IP literal `host` (AF_INET or AF_INET6), or 0 for text that is neither.
static inline int ctk_ip_family(const char *host) {
    struct sockaddr_storage addr;
    socklen_t len = 0;
    return ctk_ip_address(host, 0, &addr, &len);
}

static inline int ctk_bind_ip(int fd, const char *host, uint16_t port) {
    struct sockaddr_storage addr;
    socklen_t len = 0;
    if (ctk_ip_address(host, port, &addr, &len) == 0) { errno = EINVAL; return -1; }
    return bind(fd, (const struct sockaddr *)&addr, len);
}

static inline int ctk_connect_ip(int fd, const char *host, uint16_t port) {
    struct sockaddr_storage addr;
    socklen_t len = 0;
    if (ctk_ip_address(host, port, &addr, &len) == 0) { errno = EINVAL; return -1; }
    return connect(fd, (const struct sockaddr *)&addr, len);
}

/// The port of an IPv4 or IPv6 socket address, or -1 for another family.
static inline int ctk_sockaddr_port(const struct sockaddr_storage *addr) {
    if (addr->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)addr)->sin_port);
    if (addr->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)addr)->sin6_port);
    return -1;
}

/// The locally bound port (IPv4 or IPv6), or -1.
static inline int ctk_local_port(int fd) {
    struct sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0) return -1;
    return ctk_sockaddr_port(&addr);
}

/// The connected peer's port (IPv4 or IPv6), or -1.
static inline int ctk_peer_port(int fd) {
    struct sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    if (getpeername(fd, (struct sockaddr *)&addr, &len) != 0) return -1;
    return ctk_sockaddr_port(&addr);
}

/// Gives the heap's free memory back to the system (glibc's malloc_trim, every arena): after a connection that held
/// megabytes for a peer that did not read, the freed pages otherwise stay with the process until it ends.
static inline void ctk_trim_heap(void) { malloc_trim(0); }

/// The pending socket error (SO_ERROR), used to finish a non-blocking connect.
static inline int ctk_socket_error(int fd) {
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
}

/// send(2) that never raises SIGPIPE when the peer has gone away.
static inline ssize_t ctk_send(int fd, const void *buf, size_t len) { return send(fd, buf, len, MSG_NOSIGNAL); }

static inline void ctk_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

/// Makes a pipe and installs, for each of `numbers`, a handler that writes the signal's number (one byte) to its
/// non-blocking write end: the handler takes effect when this returns, so no signal is lost to a disposition set up
/// later on another thread. SIGHUP, when ignored already (nohup), is left ignored. Returns the pipe's read end for a
/// thread to read, or -1 with errno.
int ctk_stop_signals_install(const int *numbers, int count);

/// Names the calling thread as `ps -L`, `top -H`, perf and /proc show it, cut to the 15 bytes the kernel keeps;
/// pthread_setname_np needs _GNU_SOURCE, which the implementation file defines.
int ctk_set_current_thread_name(const char *name);

// MARK: child processes

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): the child closes every descriptor from `from` on, however
/// the parent opened it. Declared by glibc only under _GNU_SOURCE, which shims.c defines.
int ctk_spawn_actions_close_from(posix_spawn_file_actions_t *actions, int from);

/// posix_spawn_file_actions_addchdir_np (glibc 2.29): the child changes to `path` before it runs the program
/// (_GNU_SOURCE).
int ctk_spawn_actions_chdir(posix_spawn_file_actions_t *actions, const char *path);

/// pipe2 with O_CLOEXEC, so no child that another thread starts meanwhile inherits either end (_GNU_SOURCE).
int ctk_pipe_cloexec(int ends[2]);

/// Blocks until the child `pid` has ended and leaves it unreaped (WNOWAIT), so its pid stays taken until the caller
/// reaps it with waitpid. Returns 0, or the errno of waitid (ECHILD when it is not a child of this process).
static inline int ctk_wait_until_ended(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0) {
        if (errno != EINTR) return errno;
    }
    return 0;
}

/// 1 when the child `pid` has stopped (SIGSTOP has taken effect in every thread), 0 when it has not, -1 with errno.
/// The stop stays reportable (WNOWAIT), and an end is not looked for, so it is left to the waiter for the end.
static inline int ctk_child_is_stopped(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    if (waitid(P_PID, (id_t)pid, &info, WSTOPPED | WNOWAIT | WNOHANG) != 0) return -1;
    return info.si_pid == pid ? 1 : 0;
}

/// The wait status macros, which Swift does not import.
static inline int ctk_wait_exited(int status) { return WIFEXITED(status); }
static inline int ctk_wait_exit_status(int status) { return WEXITSTATUS(status); }
static inline int ctk_wait_signaled(int status) { return WIFSIGNALED(status); }
static inline int ctk_wait_term_signal(int status) { return WTERMSIG(status); }

// MARK: OpenSSL macros

static inline int ctk_ssl_ctx_set_tls13_only(SSL_CTX *ctx) {
    return SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) == 1
        && SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) == 1;
}

static inline long ctk_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long ctk_ssl_mode_partial_write(void) {
    return SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
}

static inline long ctk_ssl_ctx_disable_session_cache(SSL_CTX *ctx) {
    return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
}

static inline int ctk_ssl_ctx_set_app_data(SSL_CTX *ctx, void *data) { return SSL_CTX_set_app_data(ctx, data); }
static inline void *ctk_ssl_ctx_get_app_data(const SSL_CTX *ctx) { return SSL_CTX_get_app_data(ctx); }
static inline int ctk_ssl_set_app_data(SSL *ssl, void *data) { return SSL_set_app_data(ssl, data); }
static inline void *ctk_ssl_get_app_data(const SSL *ssl) { return SSL_get_app_data(ssl); }

/// The SSL object a certificate verification callback runs for.
static inline SSL *ctk_ssl_from_store_ctx(X509_STORE_CTX *store) {
    return (SSL *)X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
}

static inline long ctk_bio_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }
/// For the TLS engine's own BIO (`TLSEngine+BIO.swift`): "no bytes yet, try again" and its reset are macros.
static inline void ctk_bio_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }
static inline void ctk_bio_clear_retry_flags(BIO *bio) { BIO_clear_retry_flags(bio); }

// MARK: certificate subject alternative names

/// The number of URI entries in the certificate's subjectAltName extension.
static inline int ctk_x509_uri_san_count(X509 *cert) {
    GENERAL_NAMES *names = (GENERAL_NAMES *)X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    if (names == NULL) return 0;
    int count = 0;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
        if (sk_GENERAL_NAME_value(names, i)->type == GEN_URI) count++;
    }
    GENERAL_NAMES_free(names);
    return count;
}

/// Copies the `index`th URI SAN into `buf` (not NUL-terminated); returns its length, or -1.
/// A URI longer than `cap` is reported with its full length so the caller can see it was cut.
static inline int ctk_x509_uri_san(X509 *cert, int index, char *buf, int cap) {
    GENERAL_NAMES *names = (GENERAL_NAMES *)X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    if (names == NULL) return -1;
    int seen = 0, result = -1;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
        GENERAL_NAME *name = sk_GENERAL_NAME_value(names, i);
        if (name->type != GEN_URI) continue;
        if (seen++ != index) continue;
        const ASN1_IA5STRING *uri = name->d.uniformResourceIdentifier;
        int len = ASN1_STRING_length(uri);
        memcpy(buf, ASN1_STRING_get0_data(uri), (size_t)(len < cap ? len : cap));
        result = len;
        break;
    }
    GENERAL_NAMES_free(names);
    return result;
}

#endif
