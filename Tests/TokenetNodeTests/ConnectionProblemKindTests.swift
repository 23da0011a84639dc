import Testing

@testable import TokenetNode

/// The "connection closed" lines are throttled per peer and kind of problem, so that a burst of one kind never hides
/// another: the kind is a problem's words before its first colon or digit.
@Suite struct ConnectionProblemKindTests {
    @Test func sizesAndReasonsMakeNoNewKind() {
        let closed = "read failed: connection closed by peer without TLS close_notify"
        #expect(RPCNodeListener.problemKind(closed) == "read failed")
        #expect(RPCNodeListener.problemKind("read failed: connection reset by peer") == "read failed")
        #expect(
            RPCNodeListener.problemKind("a frame of 4294967295 bytes exceeds the limit")
                == RPCNodeListener.problemKind("a frame of 5000000 bytes exceeds the limit"))
        #expect(RPCNodeListener.problemKind("the first frame must be hello") == "the first frame must be hello")
        #expect(RPCNodeListener.problemKind(String(repeating: "x", count: 500)).count == 64)
    }
}
