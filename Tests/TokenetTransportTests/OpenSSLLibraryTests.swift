import Testing

@testable import TokenetTransport

@Suite struct OpenSSLLibraryTests {
    /// The constructor in CTokenetShims must run in every process that links the transport, before main, or OpenSSL's
    /// first initialisation comes from elsewhere and registers its exit-time cleanup, which crashed a `tokenet` command
    /// exiting while its loop thread ended. (Whether OpenSSL registered the cleanup cannot be asked; this checks that
    /// the constructor ran and its initialisation succeeded.)
    @Test func openSSLIsInitialisedByTheShimsConstructor() {
        #expect(OpenSSLLibrary.initialisedWithoutExitCleanup)
    }
}
