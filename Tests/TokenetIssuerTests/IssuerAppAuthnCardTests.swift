import Foundation
import Testing
import TokenetStorage
import TokenetWire

@testable import TokenetIssuer

/// The token of an authentication request is kept with the request: its AUTHN message leaves the app's listing
/// after `IssuerAppInbox.capacity` newer ones, and the app then could not tell whose card a pending request was
/// for, so it refused to proceed with it and listed it with no card.
@Suite struct IssuerAppAuthnCardTests {
    static func filler(_ index: Int) -> TspV1.Notification {
        var message = IssuerAppInboxTests.message(
            "MESSAGING", body: .messaging(.init(title: "t", body: "b")), cardID: "DNITHE2")
        message.messageID = "m-fill-\(index)"
        return message
    }

    @Test func aRequestKeepsItsCardAfterItsMessageLeavesTheListing() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let first = try IssuerAppRetentionStoreTests.handler(store, clock)
        try await first.handle(IssuerRetentionTests.authn("ar-1"))
        for index in 0..<IssuerAppInbox.capacity { try await first.handle(Self.filler(index)) }
        let restarted = try IssuerAppRetentionStoreTests.handler(store, clock)
        for handler in [first, restarted] {
            #expect(!handler.snapshot.notifications.contains { $0.notification?.messageID == "m-ar-1" })
            #expect(handler.snapshot.authnRequests.map(\.digitalCardID) == ["DNITHE1"])
            #expect(handler.card(ofAuthn: "ar-1") == "DNITHE1")
        }
    }
}
