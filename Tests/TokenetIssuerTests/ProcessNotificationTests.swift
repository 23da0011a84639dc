import Foundation
import Testing
import TokenetWire

@testable import TokenetIssuer

/// `processNotification`: the sender/topic filter, and per message type which of card id and last-call time it
/// yields (the table, row by row).
@Suite struct ProcessNotificationTests {
    static func message(
        _ type: String, sender: String = "CPS", topic: String = "D1_NOTIFICATION", cardID: String = "DNITHE1",
        lastCall: UInt64 = 1_795_000_000_000
    ) -> TspV1.Notification {
        TspV1.Notification(
            messageID: "m-1", sender: sender, topic: topic, messageType: type, cardID: cardID,
            lastCallTimestampMs: lastCall)
    }

    /// (type, yields card id, yields last call timestamp) as in the table.
    static let table: [(String, AppMessageType, Bool, Bool)] = [
        ("CARD_STATE", .cardState, true, false),
        ("REPLENISHMENT", .replenishment, true, false),
        ("TRANSACTION_NOTIFICATION", .transactionNotification, true, true),
        ("AUTHN", .authn, false, false),
        ("CARD_RENEWAL", .cardRenewal, false, false),
        ("MESSAGING", .messaging, true, false),
        ("UNKNOWN", .unknown, false, false),
        ("SOMETHING_NEW", .unknown, false, false),
        ("", .unknown, false, false),
    ]

    @Test(arguments: table)
    func eachTypeYieldsItsFields(_ row: (String, AppMessageType, Bool, Bool)) {
        let (raw, type, hasCardID, hasLastCall) = row
        let result = IssuerAppNotifications.processNotification(Self.message(raw))
        #expect(
            result
                == .processed(
                    ProcessedNotification(
                        type: type, cardID: hasCardID ? "DNITHE1" : nil,
                        lastCallTimestampMs: hasLastCall ? 1_795_000_000_000 : nil)))
        #expect(type.yieldsCardID == hasCardID)
        #expect(type.yieldsLastCallTimestamp == hasLastCall)
    }

    @Test(arguments: ["CPS", "MG", "TNS"])
    func everyTSPComponentIsProcessed(_ sender: String) {
        let result = IssuerAppNotifications.processNotification(Self.message("CARD_STATE", sender: sender))
        #expect(result == .processed(ProcessedNotification(type: .cardState, cardID: "DNITHE1")))
    }

    @Test(arguments: [
        ("tokenet-bank", "D1_NOTIFICATION"), ("", "D1_NOTIFICATION"), ("cps", "D1_NOTIFICATION"),
        ("CPS ", "D1_NOTIFICATION"), ("CPS", ""), ("CPS", "d1_notification"), ("MG", "ISSUER_MESSAGE"),
        ("TNS", "D1_NOTIFICATIONS"),
    ])
    func otherSendersAndTopicsAreHandedBackUntouched(_ filter: (String, String)) {
        var message = Self.message("MESSAGING", sender: filter.0, topic: filter.1)
        message.body = .opaque(Data([1, 2, 3]))
        message.sequence = 7
        #expect(IssuerAppNotifications.processNotification(message) == .handedBack(message))
    }

    @Test func absentFieldsAreNilNotEmpty() {
        let result = IssuerAppNotifications.processNotification(
            Self.message("TRANSACTION_NOTIFICATION", cardID: "", lastCall: 0))
        #expect(result == .processed(ProcessedNotification(type: .transactionNotification)))
    }
}
