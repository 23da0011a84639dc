import TokenetWire

/// The D1 message types the issuer app knows; any other value is `unknown`.
public enum AppMessageType: String, Sendable, CaseIterable, Hashable {
    case cardState = "CARD_STATE"
    case replenishment = "REPLENISHMENT"
    case transactionNotification = "TRANSACTION_NOTIFICATION"
    case authn = "AUTHN"
    case cardRenewal = "CARD_RENEWAL"
    case messaging = "MESSAGING"
    case unknown = "UNKNOWN"

    /// Whether a processed message of this type yields the card id it is about.
    public var yieldsCardID: Bool {
        switch self {
        case .cardState, .replenishment, .transactionNotification, .messaging: true
        case .authn, .cardRenewal, .unknown: false
        }
    }

    /// Whether a processed message of this type yields the time the TSP last called about the card.
    public var yieldsLastCallTimestamp: Bool { self == .transactionNotification }
}

/// What `processNotification` makes of a processed message: its type and, by type, a card id and a last-call time.
public struct ProcessedNotification: Sendable, Equatable {
    public var type: AppMessageType
    public var cardID: String?
    public var lastCallTimestampMs: UInt64?

    public init(type: AppMessageType, cardID: String? = nil, lastCallTimestampMs: UInt64? = nil) {
        self.type = type
        self.cardID = cardID
        self.lastCallTimestampMs = lastCallTimestampMs
    }
}

public enum NotificationProcessing: Sendable, Equatable {
    case processed(ProcessedNotification)
    /// Not from CPS, MG or TNS, or not on the D1 topic: the app gets the message back exactly as it came.
    case handedBack(TspV1.Notification)
}

/// The issuer app's first step with a pushed message, as a pure function.
public enum IssuerAppNotifications {
    /// The TSP components whose messages the app processes.
    public static let processedSenders: Set<String> = ["CPS", "MG", "TNS"]
    public static let topic = "D1_NOTIFICATION"

    /// Filters on sender and topic, then reads the type and the fields that type carries. An empty card id or a
    /// zero timestamp where the type carries one is reported as absent (nil), never as an empty value.
    public static func processNotification(_ notification: TspV1.Notification) -> NotificationProcessing {
        guard processedSenders.contains(notification.sender), notification.topic == topic else {
            return .handedBack(notification)
        }
        let type = AppMessageType(rawValue: notification.messageType) ?? .unknown
        var processed = ProcessedNotification(type: type)
        if type.yieldsCardID, !notification.cardID.isEmpty {
            processed.cardID = notification.cardID
        }
        if type.yieldsLastCallTimestamp, notification.lastCallTimestampMs != 0 {
            processed.lastCallTimestampMs = notification.lastCallTimestampMs
        }
        return .processed(processed)
    }
}
