import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `GetIssuerTokens`: an issuer node learns the tokens of its cards that the broker's retention kept it from hearing
/// of (a stand-in's approval, a delete), as `GetTokenStates` lets a wallet node.
extension IssuerCardUpdatesService {
    func getIssuerTokens(_ request: TspV1.GetIssuerTokensRequest, context: ServerContext) async throws
        -> TspV1.GetIssuerTokensResponse
    {
        try await tsp.handling("GetIssuerTokens", context) { log in
            let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "GetIssuerTokens")
            let ids = try LifecycleService.namedTokens(
                request.digitalCardIds, pageToken: request.pageToken, call: "GetIssuerTokens")
            let issuers = try tsp.store.issuerIDs(registeredBy: context.peer?.nodeID)
            guard !issuers.isEmpty else {
                // Not who the caller is but what it has not done yet: a precondition, as gRPC names it.
                throw TSPError(.failedPrecondition, "this node has not registered an issuer; call RegisterIssuer first")
            }
            if ids.isEmpty {
                let rows = try tsp.store.tokens(
                    issuerIDs: issuers, afterRow: try page.afterRow(call: "GetIssuerTokens"), limit: page.size + 1)
                let (listed, next) = page.split(rows) { PageRequest.key(row: $0.row) }
                return TspV1.GetIssuerTokensResponse(
                    tokens: listed.map { Self.listed($0.token) }, nextPageToken: next)
            }
            // Each token once, where it was first named; another issuer's is left out, as if unknown.
            var seen = Set<String>()
            let named = try ids.filter { seen.insert($0).inserted }.compactMap { id in
                try tsp.store.token(id).flatMap { issuers.contains($0.issuerID) ? $0 : nil }
            }
            let registered = try tsp.store.issuers()
            var advised = 0
            let tokens = named.map { token in
                var listed = Self.listed(token)
                // One token whose advice cannot be read (its sealed card, say) leaves out that advice only: the
                // issuer asks again at its next check, and learns of the others now.
                do {
                    listed.standInAdvice = try advice(of: token, registered: registered, log: log)
                } catch {
                    log.error(
                        "the stand-in's decision on a token cannot be read to give it again",
                        ["digital_card_id": token.digitalCardID, "error": String(describing: error)])
                }
                if listed.standInAdvice != nil { advised += 1 }
                return listed
            }
            if advised > 0 {
                log.info("stand-in advice given again to its issuer", ["tokens": "\(advised)"])
            }
            return TspV1.GetIssuerTokensResponse(tokens: tokens)
        }
    }

    static func listed(_ token: TokenRecord) -> TspV1.IssuerToken {
        TspV1.IssuerToken(
            digitalCardID: token.digitalCardID, tokenState: token.state.wire, stateVersion: token.stateVersion,
            decidedByStandIn: token.decidedBy == DigitizationOutcome.standInDecider)
    }

    /// The stand-in's advice about `token` as STAND_IN_ADVICE gave it, with the card it holds now encrypted to its
    /// issuer's key; nil when the stand-in did not decide it, or approved it and it was deleted since. A card that cannot be encrypted to
    /// the issuer's key (a key registered since that the TSP cannot read) is logged and left out: the issuer then
    /// learns of the token the next time it asks, once its key is fixed.
    private func advice(of token: TokenRecord, registered: [IssuerRecord], log: Logger) throws
        -> TspV1.StandInAdviceBody?
    {
        guard let approval = try tsp.store.standInDecision(of: token),
            let issuer = registered.first(where: { $0.id == token.issuerID })
        else { return nil }
        var advice = TspV1.StandInAdviceBody()
        advice.decision = approval.approved ? .approved : .declined
        advice.reason = approval.reason
        do {
            var card = approval.card
            card.cvv2 = nil
            advice.encryptedCardData = try tsp.encrypt(card, to: issuer)
        } catch {
            log.warning(
                "the stand-in's decision cannot be given again: its card data cannot be encrypted to the issuer's key",
                ["issuer": issuer.id, "digital_card_id": token.digitalCardID, "error": String(describing: error)])
            return nil
        }
        advice.maskedPAN =
            String(repeating: "*", count: max(0, approval.card.accountNumber.utf8.count - 4))
            + token.panLast4
        advice.tokenLast4 = token.tokenLast4
        advice.inputMethod = approval.inputMethod
        advice.device = CardV1.DeviceInfo(deviceID: token.deviceID)
        advice.walletAccountID = token.walletAccountID
        advice.decidedAtMs = approval.decidedAtMs
        advice.paymentAccountReference = token.paymentAccountReference ?? ""
        return advice
    }
}
