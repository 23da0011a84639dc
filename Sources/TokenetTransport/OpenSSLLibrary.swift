import CTokenetShims

/// How OpenSSL was set up for this process.
enum OpenSSLLibrary {
    /// True when OpenSSL was initialised, before any other use, without its exit-time cleanup. That cleanup races with
    /// threads still ending at exit and crashed commands that exited right after a call (see shims.c).
    static var initialisedWithoutExitCleanup: Bool { ctk_openssl_initialised_without_atexit() == 1 }
}
