import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.tsp.v1.Transactions`: simulated payments with a token. A payment is stored and notified (TNS
/// TRANSACTION_NOTIFICATION to the wallet and the issuer app, with the time of this last call); one that asks for
/// authentication waits for the cardholder's answer in the issuer app (AUTHN) and is notified once answered.
struct TransactionsService: TspV1.Transactions.ServiceProtocol {
    let tsp: TSPService

    func simulateTransaction(_ request: TspV1.SimulateTransactionRequest, context: ServerContext) async throws
        -> TspV1.SimulateTransactionResponse
    {
        try await tsp.handling("SimulateTransaction", context) { log in
            let token = try tsp.existingToken(request.digitalCardID)
            guard request.amountMinor > 0 else {
                throw TSPError(.invalidArgument, "amount_minor must be positive (minor units, e.g. cents)")
            }
            guard request.amountMinor <= CurrencyAmount.largestMinor else {
                throw TSPError(
                    .invalidArgument,
                    "amount_minor is too large: a payment carries at most 12 digits of minor units "
                        + "(\(CurrencyAmount.largestMinor))")
            }
            guard !request.merchant.isEmpty else { throw TSPError(.invalidArgument, "merchant is required") }
            guard request.merchant.count <= 100 else {
                throw TSPError(.invalidArgument, "merchant is at most 100 characters")
            }
            // A character can take many bytes: bounded in bytes too, or the payment would be stored and its
            // notification refused by the broker as too large, never reaching the wallet or the issuer app.
            guard request.merchant.utf8.count <= 400 else {
                throw TSPError(
                    .invalidArgument,
                    "merchant is \(request.merchant.utf8.count) bytes of UTF-8; at most 400 are allowed "
                        + "(100 characters of up to 4 bytes)")
            }
            // Free text goes to the TSP's store and to every party's screen: a card number typed into it (a test
            // that pastes one) is kept masked, never in the clear.
            let merchant = maskPAN(request.merchant)
            let currency = request.currency.isEmpty ? "USD" : request.currency.uppercased()
            guard CurrencyAmount.isCode(currency) else {
                throw TSPError(
                    .invalidArgument,
                    "currency must be an ISO 4217 code in use, such as USD, EUR or JPY (XTS for testing)")
            }
            guard token.state == .active else {
                throw TSPError(
                    .failedPrecondition,
                    "token \"\(token.digitalCardID)\" is \(token.state); only an ACTIVE token can pay")
            }
            let nowMs = tsp.nowMs
            let authnLifetimeMs = tsp.configuration.authnLifetime.milliseconds
            var transaction = TspV1.TspTransaction(
                transactionID: "txn-" + UUID().uuidString.lowercased().prefix(12), digitalCardID: token.digitalCardID,
                amountMinor: request.amountMinor, currency: currency, merchant: merchant, atMs: nowMs,
                approved: !request.authn)
            if request.authn {
                transaction.authnRequestID = "authn-" + UUID().uuidString.lowercased().prefix(12)
                transaction.authnStatus = "PENDING"
            }
            let announcement: Announcement
            if request.authn {
                let body = TspV1.AuthnBody(
                    authnRequestID: transaction.authnRequestID, amountMinor: transaction.amountMinor,
                    currency: currency, merchant: transaction.merchant, expiresAtMs: nowMs + authnLifetimeMs)
                announcement = Announcement(
                    notification: D1.notification(.authn, from: .tns, cardID: token.digitalCardID, body: .authn(body)),
                    recipients: [.issuerApp])
            } else {
                announcement = Self.announcement(of: transaction)
            }
            let journaled = try tsp.store.insertTransaction(
                transaction, authnExpiresAtMs: request.authn ? nowMs + authnLifetimeMs : nil,
                announcing: [announcement])
            log.info(
                "transaction",
                [
                    "transaction_id": transaction.transactionID, "digital_card_id": token.digitalCardID,
                    "amount_minor": "\(transaction.amountMinor)", "currency": currency, "authn": "\(request.authn)",
                ])
            await tsp.published(journaled, log: log)
            return TspV1.SimulateTransactionResponse(
                transactionID: transaction.transactionID, authnRequestID: transaction.authnRequestID,
                approved: transaction.approved, lastCallTimestampMs: nowMs)
        }
    }

    func answerAuthn(_ request: TspV1.AnswerAuthnRequest, context: ServerContext) async throws
        -> TspV1.AnswerAuthnResponse
    {
        try await tsp.handling("AnswerAuthn", context) { log in
            guard !request.authnRequestID.isEmpty else {
                throw TSPError(.invalidArgument, "authn_request_id is required")
            }
            let ownsToken = try tsp.requireIssuer(context.peer?.nodeID)
            // The caller sent the request's id, not the token's: another issuer's token is not named to it.
            let authorize: (TokenRecord) throws -> Void = { token in
                do {
                    try ownsToken(token)
                } catch {
                    throw TSPError(
                        .permissionDenied,
                        "authentication request \"\(request.authnRequestID)\" is for another issuer's token")
                }
            }
            let nowMs = tsp.nowMs
            let journaled = try tsp.store.answerAuthn(
                request.authnRequestID, proceed: request.proceed, nowMs: nowMs,
                announce: { answer in
                    guard answer.changed else { return [] }
                    return [Self.announcement(of: answer.transaction, lastCallMs: nowMs)]
                },
                authorize: authorize)
            let (transaction, changed, tokenState) = journaled.value
            let declineReason =
                transaction.authnStatus == "PROCEEDED" && !transaction.approved
                ? "token \"\(transaction.digitalCardID)\" \(changed ? "is" : "was no longer ACTIVE and is now") "
                    + "\(tokenState); only an ACTIVE token can pay" : ""
            log.info(
                "authentication answered",
                [
                    "authn_request_id": request.authnRequestID, "status": transaction.authnStatus,
                    "approved": "\(transaction.approved)", "repeated": "\(!changed)",
                ])
            await tsp.published(journaled, log: log)
            return TspV1.AnswerAuthnResponse(
                authnRequestID: request.authnRequestID, status: transaction.authnStatus,
                transactionID: transaction.transactionID, approved: transaction.approved,
                declineReason: declineReason)
        }
    }

    func listTransactions(_ request: TspV1.ListTransactionsRequest, context: ServerContext) async throws
        -> TspV1.ListTransactionsResponse
    {
        try await tsp.handling("ListTransactions", context) { _ in
            let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "ListTransactions")
            let token = request.digitalCardID.isEmpty ? nil : request.digitalCardID
            let after = try page.afterTime(
                in: request.digitalCardID, call: "ListTransactions", field: "digital_card_id", items: "token")
            // A token id that names no token is a mistake to point out (a typo, another TSP's token), not a token
            // without payments: tokens are never removed, so one that ever had transactions is still found.
            if let token, try tsp.store.token(token) == nil {
                throw TSPError.unknownToken(token)
            }
            let rows = try tsp.store.transactions(
                of: token, after: after, limit: page.size + 1, nowMs: tsp.nowMs)
            let (transactions, next) = page.split(rows, key: \.pageKey)
            return TspV1.ListTransactionsResponse(transactions: transactions.map(\.transaction), nextPageToken: next)
        }
    }

    /// TNS TRANSACTION_NOTIFICATION to the wallet and the issuer app, with how its authentication ended (if it
    /// asked for one); the last call is this one.
    /// `lastCallMs`: when the TSP last acted on the token, which is the payment's own time unless an answer to its
    /// authentication (or the request's expiry) ended it later. The body keeps the payment's time: told as the
    /// answer's, a payment showed in the wallet and the issuer app at another time than in the TSP's listing.
    static func announcement(of transaction: TspV1.TspTransaction, lastCallMs: UInt64? = nil) -> Announcement {
        let body = TspV1.TransactionBody(
            transactionID: transaction.transactionID, amountMinor: transaction.amountMinor,
            currency: transaction.currency, merchant: transaction.merchant, approved: transaction.approved,
            transactionAtMs: transaction.atMs, authnStatus: transaction.authnStatus,
            authnRequestID: transaction.authnRequestID)
        return Announcement(
            notification: D1.notification(
                .transaction, from: .tns, cardID: transaction.digitalCardID, lastCallMs: lastCallMs ?? transaction.atMs,
                body: .transaction(body)),
            recipients: [.wallet, .issuerApp])
    }
}
