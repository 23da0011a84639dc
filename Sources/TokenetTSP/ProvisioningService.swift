import Foundation
import TokenetCard
import TokenetRPC
import TokenetWire

/// `tokenet.tsp.v1.Provisioning`: what wallets call to add a card.
struct ProvisioningService: TspV1.Provisioning.ServiceProtocol {
    let tsp: TSPService

    func getEncryptionKeys(_ request: TspV1.GetEncryptionKeysRequest, context: ServerContext) async throws
        -> TspV1.GetEncryptionKeysResponse
    {
        try await tsp.handling("GetEncryptionKeys", context) { _ in
            TspV1.GetEncryptionKeysResponse(keys: try tsp.publishedKeys())
        }
    }

    func checkEligibility(_ request: TspV1.CheckEligibilityRequest, context: ServerContext) async throws
        -> TspV1.CheckEligibilityResponse
    {
        try await tsp.handling("CheckEligibility", context) { log in
            try await tsp.checkEligibility(request, walletNodeID: context.peer?.nodeID, log: log)
        }
    }

    func digitize(_ request: TspV1.DigitizeRequest, context: ServerContext) async throws -> TspV1.DigitizeResponse {
        try await tsp.handling("Digitize", context) { log in
            try await tsp.digitize(request, traceID: context.traceID, walletNodeID: context.peer?.nodeID, log: log)
        }
    }

    func createPushSession(_ request: TspV1.CreatePushSessionRequest, context: ServerContext) async throws
        -> TspV1.CreatePushSessionResponse
    {
        try await tsp.handling("CreatePushSession", context) { log in
            guard !request.walletAccountID.isEmpty else {
                throw TSPError(.invalidArgument, "wallet_account_id is required: the account the session is for")
            }
            try TSPService.requireWalletAccountID(request.walletAccountID)
            let card = try tsp.decryptCardData(request.encryptedCardData, field: "encrypted_card_data")
            // The issuer node that pushed it may push its own cards only, as with a push receipt.
            if !request.pushingIssuerNodeID.isEmpty {
                let pan: PAN
                do { pan = try card.pan() } catch {
                    throw TSPError(.invalidArgument, "the pushed card number is not valid: \(TSPError.describe(error))")
                }
                let registered = try tsp.store.issuers().filter { $0.peerNodeID == request.pushingIssuerNodeID }
                // A node that registered no issuer was told about BIN ranges it never had.
                guard !registered.isEmpty else {
                    throw TSPError(
                        .permissionDenied,
                        "issuer node \(request.pushingIssuerNodeID) has registered no issuer with this TSP, so it "
                            + "pushes no card: check pushing_issuer_node_id (the node id of the pushing issuer's "
                            + "certificate)")
                }
                guard registered.contains(where: { $0.owns(pan) }) else {
                    throw TSPError(
                        .permissionDenied,
                        "the card ending in \(pan.last4) is not in a BIN range that issuer node "
                            + "\(request.pushingIssuerNodeID) registered: an issuer pushes its own cards only")
                }
            }
            let id = TSPService.randomIdentifier()
            let nowMs = tsp.nowMs
            let expiresAtMs = nowMs + tsp.configuration.pushSessionTTL.milliseconds
            try tsp.store.insertPushSession(
                id: id, walletAccountID: request.walletAccountID, walletNodeID: context.peer?.nodeID, card: card,
                nowMs: nowMs, expiresAtMs: expiresAtMs)
            log.info("push session created", ["wallet_account_id": request.walletAccountID])
            return TspV1.CreatePushSessionResponse(pushSessionID: id, expiresAtMs: expiresAtMs)
        }
    }

    func getTokenIssuer(_ request: TspV1.GetTokenIssuerRequest, context: ServerContext) async throws
        -> TspV1.GetTokenIssuerResponse
    {
        try await tsp.handling("GetTokenIssuer", context) { log in
            let answer = try tsp.tokenIssuer(request, walletNodeID: context.peer?.nodeID)
            log.info(
                "token issuer answered",
                ["digital_card_id": answer.digitalCardID, "issuer_id": answer.issuerID])
            return answer
        }
    }
}
