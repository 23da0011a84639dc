import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// The D1 push vocabulary the TSP's components publish with.
enum D1 {
    static let topic = "D1_NOTIFICATION"

    enum Sender: String, Sendable {
        /// Card and token state, card renewal, and issuer messages delivered to the user.
        case cps = "CPS"
        /// Payment-key (limited-use key) replenishment.
        case mg = "MG"
        /// Transactions and their authentication.
        case tns = "TNS"
    }

    enum MessageType: String, Sendable {
        case cardState = "CARD_STATE"
        case replenishment = "REPLENISHMENT"
        case transaction = "TRANSACTION_NOTIFICATION"
        case authn = "AUTHN"
        case cardRenewal = "CARD_RENEWAL"
        case messaging = "MESSAGING"
        case standInAdvice = "STAND_IN_ADVICE"
    }

    /// Who receives a message about a token: the wallet that holds it, and the node of its issuer (whose app and
    /// backend share its queue: STAND_IN_ADVICE is for the backend).
    enum Recipient: Sendable, Hashable {
        case wallet
        case issuerApp
    }

    static func notification(
        _ type: MessageType, from sender: Sender, cardID: String, lastCallMs: UInt64 = 0,
        body: TspV1.Notification.Body
    ) -> TspV1.Notification {
        var notification = TspV1.Notification()
        notification.sender = sender.rawValue
        notification.topic = topic
        notification.messageType = type.rawValue
        notification.cardID = cardID
        notification.lastCallTimestampMs = lastCallMs
        notification.body = body
        // Made while a call is served (or in work done for its flow): the parties handle it under that call's trace.
        notification.traceID = FlowTrace.active ?? ""
        return notification
    }
}

extension TSPService {
    /// The broker queues of a token's parties: "wallet/NODE" from digitization, "issuer/NODE" from registration.
    /// A party whose node is unknown (a token digitized or an issuer registered without a certificate) is left out.
    func queues(for token: TokenRecord, _ recipients: Set<D1.Recipient>) throws -> [String] {
        var queues: [String] = []
        if recipients.contains(.wallet), let node = token.walletNodeID {
            queues.append("wallet/\(node)")
        }
        if recipients.contains(.issuerApp), let node = try store.issuerNodeID(of: token.issuerID) {
            queues.append("issuer/\(node)")
        }
        return queues
    }

    /// Publishes a message that reports no change of the TSP's (an issuer's message, a request to replenish), so
    /// there is nothing to journal it with. Nil when no party the message is for subscribes to the token's
    /// notifications; a broker that cannot store it throws, so the caller answers with its status (INTERNAL, or
    /// RESOURCE_EXHAUSTED for a full disk) rather than as if no party were there. Messages reporting a change are
    /// journaled with it instead (`TSPService+Journal.swift`).
    func publish(
        _ notification: TspV1.Notification, about token: TokenRecord, to recipients: Set<D1.Recipient>, log: Logger
    ) async throws(TSPError) -> String? {
        let queues: [String]
        do {
            queues = try self.queues(for: token, recipients)
        } catch {
            throw TSPError.internal("finding who subscribes to the token's notifications", error)
        }
        guard !queues.isEmpty else {
            log.warning(
                "no subscriber known for the token; notification not published",
                ["type": notification.messageType, "digital_card_id": token.digitalCardID])
            return nil
        }
        let id = try await notifications.publish(notification, to: queues)
        log.info(
            "notification published",
            [
                "type": notification.messageType, "sender": notification.sender,
                "digital_card_id": token.digitalCardID, "to": queues.joined(separator: ","), "message_id": id,
            ])
        return id
    }

    /// The token, or NOT_FOUND; a required id.
    func existingToken(_ digitalCardID: String) throws -> TokenRecord {
        guard !digitalCardID.isEmpty else { throw TSPError(.invalidArgument, "digital_card_id is required") }
        guard let token = try store.token(digitalCardID) else {
            throw TSPError.unknownToken(digitalCardID)
        }
        return token
    }

    /// Refuses a wallet acting on a token it did not digitize.
    static func requireWallet(_ nodeID: String?, owns token: TokenRecord) throws {
        guard let nodeID, token.walletNodeID == nodeID else {
            throw TSPError(
                .permissionDenied, "token \"\(token.digitalCardID)\" was not digitized through this wallet")
        }
    }

    /// Refuses an issuer node acting on another issuer's token.
    func requireIssuer(_ nodeID: String?) throws -> (TokenRecord) throws -> Void {
        let owned = try store.issuerIDs(registeredBy: nodeID)
        guard !owned.isEmpty else {
            // Not who the caller is but what it has not done yet: a precondition, as gRPC names it.
            throw TSPError(.failedPrecondition, "this node has not registered an issuer; call RegisterIssuer first")
        }
        return { token in
            guard owned.contains(token.issuerID) else {
                throw TSPError(
                    .permissionDenied, "token \"\(token.digitalCardID)\" belongs to another issuer")
            }
        }
    }
}
