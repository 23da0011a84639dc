import Synchronization
import TokenetRPC
import TokenetWire

/// The issuer's code delivery as a test sees it: every code the TSP asked it to send, in the order the deliveries
/// ended, or a failure on demand; one delivery can be held until the test lets it end.
final class FakeIssuerOTP: IssuerV1.IssuerOtp.ServiceProtocol {
    struct State {
        var sent: [IssuerV1.SendOtpRequest] = []
        var failing = false
        var holdNext = false
        var held: CheckedContinuation<Void, Never>?
        var released = false
        /// The next delivery sends the code, then never answers (until `releaseHeld()`): the TSP's answer is lost.
        var hangAfterSending = false
        /// Where the issuer says each code went (`SendOtpResponse.masked_destination`); empty says nothing.
        var destination = ""
    }

    let state = Mutex(State())

    var sent: [IssuerV1.SendOtpRequest] { state.withLock { $0.sent } }
    var lastCode: String? { sent.last?.code }
    func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }

    /// The next delivery sends its code, then waits until `releaseHeld()` before it answers.
    func hangAfterSendingNext() { state.withLock { $0.hangAfterSending = true } }

    /// The next delivery waits, once it has arrived, until `releaseHeld()`.
    func holdNextDelivery() { state.withLock { $0.holdNext = true } }
    var isHolding: Bool { state.withLock { $0.held != nil } }
    func releaseHeld() {
        let held = state.withLock { state in
            state.released = true
            defer { state.held = nil }
            return state.held
        }
        held?.resume()
    }

    /// Holds the delivery under way until `releaseHeld()` (at once when it was released before).
    private func waitUntilReleased() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if state.released { return true }
                state.held = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    func sendOTP(_ request: IssuerV1.SendOtpRequest, context: ServerContext) async throws -> IssuerV1.SendOtpResponse {
        let hold = state.withLock { state in
            defer { state.holdNext = false }
            return state.holdNext
        }
        if hold { await waitUntilReleased() }
        let (hangs, destination) = try state.withLock { state in
            if state.failing { throw RPCError(.unavailable, "the SMS gateway is down") }
            state.sent.append(request)
            defer { state.hangAfterSending = false }
            return (state.hangAfterSending, state.destination)
        }
        if hangs { await waitUntilReleased() }
        return IssuerV1.SendOtpResponse(maskedDestination: destination)
    }
}
