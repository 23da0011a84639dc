import Foundation
import Testing
import TokenetWire

@testable import TokenetIssuer
@testable import TokenetRPC

/// A SendOtp call the TSP has given up on (cancelled, or past its deadline) delivers nothing: the TSP forgets a code
/// it could not deliver, so a message sent after all would carry a code that can only be refused.
@Suite struct IssuerOtpCancellationTests {
    @Test func aCancelledCallSendsNoCode() async throws {
        let tests = try IssuerOtpTests()
        _ = try await tests.decisionTask.value
        let service = tests.party.otp
        let request = IssuerV1.SendOtpRequest(
            digitalCardID: IssuerOtpTests.token, methodID: "otp-sms", type: .otpSms, code: "482913",
            expiresAtMs: UInt64(Support.now.timeIntervalSince1970 * 1000) + 600_000)
        let context = ServerContext(
            method: IssuerV1.IssuerOtp.sendOTP.path, metadata: Metadata(), peer: nil, deadline: nil, traceID: "t")
        let call = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await service.sendOTP(request, context: context)
        }
        let error = await #expect(throws: RPCError.self) { try await call.value }
        #expect(error?.code == .cancelled)
        #expect(error?.message == "the TSP gave up on this code before the issuer sent it; nothing was sent")
        #expect(try await tests.callCentre.outbox(IssuerV1.OutboxRequest()).messages.isEmpty)
    }

    @Test func theMessageSaysHowLongTheCodeStands() {
        let now = Date(timeIntervalSince1970: 1_000)
        func left(_ seconds: Double) -> String {
            IssuerOtpService.timeLeft(until: UInt64((1_000 + seconds) * 1000), from: now)
        }
        // Never more than the code lasts (but for the milliseconds it took to come): minutes rounded down, in
        // seconds below two minutes.
        #expect(left(600) == "10 minutes")
        #expect(left(599.97) == "10 minutes")
        #expect(left(599.4) == "9 minutes")
        #expect(left(300.4) == "5 minutes")
        #expect(left(179) == "2 minutes")
        #expect(left(120) == "2 minutes")
        #expect(left(119.8) == "119 seconds")
        #expect(left(119.95) == "2 minutes")
        #expect(left(90) == "90 seconds")
        #expect(left(60) == "60 seconds")
        #expect(left(3) == "3 seconds")
        #expect(left(1) == "1 second")
        #expect(left(-5) == "1 second")
    }
}
