import Testing
import TokenetTransport

@testable import TokenetRPC

/// Why reading ended, as calls and the connection log tell it: a failed system call names itself once.
@Suite struct ReadFailureTextTests {
    @Test func aFailedSystemCallIsNotNamedTwice() {
        let reset = TransportError(.io, "read failed: Connection reset by peer (errno 104)")
        #expect(RPCConnection.readFailure(reset) == "read failed: Connection reset by peer (errno 104)")
        let sendFirst = TransportError(.io, "send failed: Broken pipe (errno 32)")
        #expect(RPCConnection.readFailure(sendFirst) == "send failed: Broken pipe (errno 32)")
    }

    @Test func otherErrorsSayThatTheReadFailed() {
        let record = TransportError(
            .tls, "TLS read failed", details: ["error:0A000119:SSL routines::decryption failed"])
        #expect(
            RPCConnection.readFailure(record)
                == "read failed: TLS read failed [error:0A000119:SSL routines::decryption failed]")
    }
}
