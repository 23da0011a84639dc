import Synchronization
import TokenetRPC
import TokenetWire

/// The issuer's code delivery as a test sees it: every code the TSP asked it to send, or a failure on demand.
final class FakeIssuerOTP: IssuerV1.IssuerOtp.ServiceProtocol {
    struct State {
        var sent: [IssuerV1.SendOtpRequest] = []
        var failing = false
    }

    let state = Mutex(State())

    var sent: [IssuerV1.SendOtpRequest] { state.withLock { $0.sent } }
    var lastCode: String? { sent.last?.code }
    func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }

    func sendOTP(_ request: IssuerV1.SendOtpRequest, context: ServerContext) async throws -> IssuerV1.SendOtpResponse {
        try state.withLock { state in
            if state.failing { throw RPCError(.unavailable, "the SMS gateway is down") }
            state.sent.append(request)
        }
        return IssuerV1.SendOtpResponse(maskedDestination: "***-***-1234")
    }
}
