import Synchronization
import TokenetRPC
import TokenetWire

/// The TSP's ID&V API as a test sets it up: the right code is 123456; every request is recorded.
final class FakeTSPIdv: TspV1.Idv.ServiceProtocol {
    struct State {
        var selects: [TspV1.SelectIdvMethodRequest] = []
        var submits: [TspV1.SubmitOtpRequest] = []
        var resends = 0
        /// What SelectIdvMethod and ResendOtp fail with, when set.
        var codeRequestFailure: RPCError?
        var triesLeft: UInt32 = 3
        /// Runs before SubmitOtp answers: what reaches the wallet while its call is under way.
        var whileSubmitting: (@Sendable (TspV1.SubmitOtpResponse) async throws -> Void)?
    }

    let state = Mutex(State())
    var recorded: State { state.withLock { $0 } }

    func selectIdvMethod(_ request: TspV1.SelectIdvMethodRequest, context: ServerContext) async throws
        -> TspV1.SelectIdvMethodResponse
    {
        if let failure = state.withLock({ $0.codeRequestFailure }) { throw failure }
        state.withLock { $0.selects.append(request) }
        return TspV1.SelectIdvMethodResponse(
            method: CardV1.IdvMethod(id: request.methodID, type: .otpSms, maskedValue: "***-***-1234"),
            codeSent: true, codeExpiresAtMs: 600_000, triesLeft: 3, instructions: "enter the code sent to ***-***-1234")
    }

    func submitOTP(_ request: TspV1.SubmitOtpRequest, context: ServerContext) async throws -> TspV1.SubmitOtpResponse {
        let (answer, whileSubmitting) = state.withLock { state in
            state.submits.append(request)
            if request.code == "123456" {
                return (TspV1.SubmitOtpResponse(result: .success, tokenState: .active), state.whileSubmitting)
            }
            state.triesLeft -= 1
            return (
                TspV1.SubmitOtpResponse(result: .incorrectCode, triesLeft: state.triesLeft, tokenState: .inactive),
                state.whileSubmitting
            )
        }
        try await whileSubmitting?(answer)
        return answer
    }

    func resendOTP(_ request: TspV1.ResendOtpRequest, context: ServerContext) async throws -> TspV1.ResendOtpResponse {
        if let failure = state.withLock({ $0.codeRequestFailure }) { throw failure }
        let resends = state.withLock { state in
            state.resends += 1
            return state.resends
        }
        guard resends <= 1 else {
            throw RPCError(.failedPrecondition, "no more codes can be sent for this token")
        }
        return TspV1.ResendOtpResponse(
            codeExpiresAtMs: 700_000, triesLeft: 3,
            method: CardV1.IdvMethod(id: "otp-sms", type: .otpSms, maskedValue: "***-***-1234"))
    }
}
