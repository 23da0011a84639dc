import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.tsp.v1.Issuers`: issuers announce themselves and create push receipts for their Mastercard cards.
struct IssuersService: TspV1.Issuers.ServiceProtocol {
    let tsp: TSPService
    /// Which node instance holds each subscriber's notification stream: `NotificationsService`'s own table, or the
    /// check sees no stream.
    let instances: SubscriberInstances.Shared
    /// When this TSP started, and how long after it the instance that registered an issuer keeps it against another
    /// instance that holds no stream: a restarted TSP no longer knows who holds the streams, and the running node
    /// reconnects within its keepalive (about a minute), while a second node on its certificate may come first.
    var startedAt = ContinuousClock.now
    var registrationGrace: Duration = .seconds(60)

    /// The most BIN ranges one issuer registers: every card check looks through all of them.
    static let maxBINRanges = 1_000

    /// Upserts the issuer. The registering node's certificate id is recorded; an issuer id registered by one node
    /// cannot be taken over by another.
    func registerIssuer(_ request: TspV1.RegisterIssuerRequest, context: ServerContext) async throws
        -> TspV1.RegisterIssuerResponse
    {
        try await tsp.handling("RegisterIssuer", context) { log in
            guard !request.issuerID.isEmpty else { throw TSPError(.invalidArgument, "issuer_id is required") }
            // Both are stored and shown in full: in listings, log lines, and every wallet's card art and T&C.
            if let problem = IdentifierRules.problem(request.issuerID) {
                throw TSPError(.invalidArgument, "issuer_id must be \(problem)")
            }
            if !request.displayName.isEmpty,
                let problem = IdentifierRules.problem(request.displayName, maxLength: 100, spaces: true)
            {
                throw TSPError(.invalidArgument, "display_name must be \(problem)")
            }
            guard !request.binRanges.isEmpty else {
                throw TSPError(.invalidArgument, "bin_ranges is required: the card number prefixes the issuer owns")
            }
            guard request.binRanges.count <= Self.maxBINRanges else {
                throw TSPError(
                    .invalidArgument,
                    "bin_ranges holds \(request.binRanges.count) ranges; at most \(Self.maxBINRanges): join adjacent "
                        + "prefixes into wider ranges")
            }
            let ranges = try request.binRanges.map { range throws(TSPError) in
                try IssuerBINRange(low: range.low, high: range.high)
            }
            // Ranges of one request that overlap each other were taken as they were: one card number then fell in
            // two of the issuer's ranges, and a listing of them read as two programmes.
            for (index, range) in ranges.enumerated() {
                if let other = ranges[..<index].first(where: { $0.overlaps(range) }) {
                    throw TSPError(
                        .invalidArgument,
                        "bin_ranges: range \(range.low) to \(range.high) overlaps range \(other.low) to \(other.high) "
                            + "of the same request; give each prefix once (join overlapping ranges into one)")
                }
            }
            let key: RSAPublicKey
            do {
                key = try RSAPublicKey(pem: request.encryptionPublicKeyPem)
            } catch {
                throw TSPError(
                    .invalidArgument, "encryption_public_key_pem cannot be used: \(TSPError.describe(error))")
            }
            let nodeID = context.peer?.nodeID
            // Another instance of this certificate runs (it holds the notification stream): a second node started
            // by mistake with it replaced the running node's key and BIN ranges, whose cards then failed.
            guard request.instanceID.isEmpty || NodeInstance.isValid(request.instanceID) else {
                throw TSPError(
                    .invalidArgument, "instance_id must be 1 to 64 letters, digits, '-' or '_' (or empty, for a tool)")
            }
            let stream = context.peer.map { peer in
                instances.state.withLock {
                    $0.decide(subscriber: "\(peer.role.rawValue)/\(peer.nodeID)", instanceID: request.instanceID)
                }
            }
            if let peer = context.peer, case .refuse(let held) = stream {
                // The stream's time is the wall clock's, as Subscribe records it.
                let nowMs = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
                throw TSPError(
                    .alreadyExists,
                    "\(peer) runs already as another node (instance \(held.instanceID), subscribed for "
                        + "\(DurationText.describe(.milliseconds(Int64(nowMs - min(nowMs, held.sinceMs)))))): two nodes "
                        + "share this certificate, and this registration would replace the running node's key and BIN "
                        + "ranges; give each node its own identity (Tools/gen-certs), or stop the other. A node moved to "
                        + "a new data directory gets in once the TSP finds the old node's connection gone")
            }
            // Judged against the issuers registered in the transaction that stores this one (`upsertIssuer`).
            let check = { (existing: [IssuerRecord]) throws(TSPError) in
                try self.check(
                    request, ranges: ranges, nodeID: nodeID, stream: stream, existing: existing,
                    startedFor: ContinuousClock.now - startedAt)
            }
            try tsp.store.upsertIssuer(
                IssuerRecord(
                    id: request.issuerID, name: request.displayName, binRanges: ranges,
                    encryptionKeyPEM: try key.pem(), peerNodeID: nodeID, instanceID: request.instanceID),
                nowMs: tsp.nowMs, check: check)
            log.info("issuer registered", ["issuer": request.issuerID, "ranges": "\(ranges.count)"])
            if !tsp.issuers.hasAddress(for: request.issuerID) {
                log.warning(
                    "no address for this issuer (tsp-node --issuer \(request.issuerID)=HOST:PORT): the stand-in rule "
                        + "decides its cards", ["issuer": request.issuerID])
            }
            let current = tsp.keyring.current
            return TspV1.RegisterIssuerResponse(
                tspPublicKeyIdentifier: current.kid, tspPublicKeyPem: try current.publicKey.pem())
        }
    }

    /// Whether `request` may be registered beside the issuers `existing` (read in the transaction that stores it):
    /// the issuer id is the calling node's or new, this node registers no other issuer, no range overlaps another
    /// issuer's, and (soon after a start) another instance of this certificate does not hold the issuer.
    private func check(
        _ request: TspV1.RegisterIssuerRequest, ranges: [IssuerBINRange], nodeID: String?,
        stream: SubscriberInstances.Decision?, existing: [IssuerRecord], startedFor: Duration
    ) throws(TSPError) {
        if let previous = existing.first(where: { $0.id == request.issuerID }),
            let owner = previous.peerNodeID, owner != nodeID
        {
            throw TSPError(
                .permissionDenied, "issuer \"\(request.issuerID)\" is registered by another node (\(owner))")
        }
        // Soon after this TSP started, the instance that registered the issuer keeps it against another one
        // (the table of streams above starts empty): the running node reconnects within its keepalive.
        // (An instance that holds the stream now is the running node, whoever registered last.)
        if let previous = existing.first(where: { $0.id == request.issuerID }), previous.peerNodeID == nodeID,
            !previous.instanceID.isEmpty, !request.instanceID.isEmpty, previous.instanceID != request.instanceID,
            stream != .open(replacing: true, sameInstance: true),
            startedFor < registrationGrace
        {
            throw TSPError(
                .alreadyExists,
                "issuer \"\(request.issuerID)\" was registered by another node on this certificate (instance "
                    + "\(previous.instanceID)), which this TSP, started \(DurationText.describe(startedFor)) "
                    + "ago, waits up to \(DurationText.describe(registrationGrace)) for; two nodes may share this "
                    + "certificate: give each node its own identity (Tools/gen-certs), or stop the other")
        }
        // A node speaks for one issuer: its enrolments and card calls are filed under the issuer it registered
        // (`callingIssuer`), which a second issuer id would make a guess.
        if let nodeID, let other = existing.first(where: { $0.peerNodeID == nodeID && $0.id != request.issuerID }) {
            throw TSPError(
                .failedPrecondition,
                "node \"\(nodeID)\" already registered issuer \"\(other.id)\"; a node speaks for one issuer: keep "
                    + "the issuer id \"\(other.id)\", or run an issuer node with a certificate of its own for "
                    + "\"\(request.issuerID)\"")
        }
        for other in existing where other.id != request.issuerID {
            for clash in ranges {
                guard let theirs = other.binRanges.first(where: { $0.overlaps(clash) }) else { continue }
                // "to", not a dash: two BIN prefixes joined by a dash read as a card number, and the answer came
                // back masked, naming neither range.
                throw TSPError(
                    .failedPrecondition,
                    "BIN range \(clash.low) to \(clash.high) overlaps issuer \"\(other.id)\"'s range \(theirs.low) to "
                        + "\(theirs.high)")
            }
        }
    }

    /// A receipt for the named wallet account is stored without checking that the account exists: the TSP knows no
    /// list of wallet accounts (they are the wallet provider's; an account shows here only once a wallet asked for a
    /// card for it, and a new one has not), so refusing unknown accounts would refuse every first card. A receipt
    /// for an account no wallet has is refused at redemption instead (`TSPStore.pushReceiptCard`).
    func createPushReceipt(_ request: TspV1.CreatePushReceiptRequest, context: ServerContext) async throws
        -> TspV1.CreatePushReceiptResponse
    {
        try await tsp.handling("CreatePushReceipt", context) { log in
            let card = try tsp.decryptCardData(request.encryptedCardData, field: "encrypted_card_data")
            let pan: PAN
            do { pan = try card.pan() } catch {
                throw TSPError(.invalidArgument, "the pushed card number is not valid: \(TSPError.describe(error))")
            }
            guard pan.scheme == .mastercard else {
                throw TSPError(
                    .failedPrecondition,
                    "push receipts are Mastercard-only (MDES Token Connect); push a \(pan.scheme) card's data to "
                        + "the wallet instead")
            }
            let nodeID = context.peer?.nodeID
            guard let issuer = try tsp.store.issuers().first(where: { $0.peerNodeID == nodeID && $0.owns(pan) })
            else {
                throw TSPError(
                    .permissionDenied,
                    "the card ending in \(pan.last4) is not in a BIN range this issuer registered; call "
                        + "RegisterIssuer with its ranges first")
            }
            // The ID of a wallet node's certificate (tokenet://wallet/ID), which is how the node is known when it
            // redeems the receipt: anything else bound the receipt to no node at all, and nobody could redeem it.
            let id = request.walletNodeID
            if !id.isEmpty,
                !(1...64).contains(id.utf8.count)
                    || !id.utf8.allSatisfy({ byte in
                        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                    })
            {
                throw TSPError(
                    .invalidArgument,
                    "wallet_node_id must be the ID in the wallet node's certificate name tokenet://wallet/ID: 1 to 64 "
                        + "ASCII letters, digits, '.', '_' or '-', such as wallet-1")
            }
            if !request.walletAccountID.isEmpty { try TSPService.requireWalletAccountID(request.walletAccountID) }
            let payload = TSPService.randomIdentifier()
            let nowMs = tsp.nowMs
            let expiresAtMs = nowMs + tsp.configuration.pushReceiptTTL.milliseconds
            let account = request.walletAccountID.isEmpty ? nil : request.walletAccountID
            let walletNode = request.walletNodeID.isEmpty ? nil : request.walletNodeID
            try tsp.store.insertPushReceipt(
                payload: payload, issuerID: issuer.id, walletAccountID: account, walletNodeID: walletNode, card: card,
                nowMs: nowMs, expiresAtMs: expiresAtMs)
            log.info(
                "push receipt created",
                [
                    "issuer": issuer.id, "last4": pan.last4, "wallet_account": account ?? "any",
                    "wallet_node": walletNode ?? "any",
                ])
            return TspV1.CreatePushReceiptResponse(scheme: .mastercard, payload: payload, expiresAtMs: expiresAtMs)
        }
    }
}
