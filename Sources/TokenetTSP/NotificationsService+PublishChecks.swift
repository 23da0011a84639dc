import TokenetNode
import TokenetRPC
import TokenetWire

/// What an operator's `Publish` may put in a notification. The broker keeps it and hands it to wallets and issuer
/// apps, which store it and show it: a card number there would be kept and shown in the clear, and an amount,
/// currency or time no TSP component would send would reach those screens as if the TSP had. The same rules hold as
/// for the notifications the TSP makes itself (`SimulateTransaction`: a positive amount of at most 12 digits of
/// minor units, an ISO 4217 code, a merchant of at most 100 characters).
extension NotificationsService {
    /// The last millisecond of the year 9999: a time past it cannot be shown as a date.
    static let latestTimeMs: UInt64 = 253_402_300_799_999

    static func checkPublished(_ notification: TspV1.Notification) throws(RPCError) {
        if let field = CardNumberFields.first(in: notification, prefix: "notification") {
            throw RPCError(
                .invalidArgument,
                "\(field) holds what reads as a card number; the broker keeps messages and every party shows them, "
                    + "where a card number must not be: give its last four digits at most")
        }
        try checkTime(notification.lastCallTimestampMs, "notification.last_call_timestamp_ms")
        switch notification.body {
        case .transaction(let body)?:
            try checkPayment(body.amountMinor, body.currency, body.merchant, "notification.transaction")
            try checkTime(body.transactionAtMs, "notification.transaction.transaction_at_ms")
        case .authn(let body)?:
            try checkPayment(body.amountMinor, body.currency, body.merchant, "notification.authn")
            try checkTime(body.expiresAtMs, "notification.authn.expires_at_ms")
        case .standInAdvice(let body)?:
            try checkTime(body.decidedAtMs, "notification.stand_in_advice.decided_at_ms")
        default:
            break
        }
    }

    private static func checkPayment(_ amount: Int64, _ currency: String, _ merchant: String, _ body: String)
        throws(RPCError)
    {
        guard amount > 0, amount <= CurrencyAmount.largestMinor else {
            throw RPCError(
                .invalidArgument,
                "\(body).amount_minor is \(amount); a payment is positive and at most 12 digits of minor units "
                    + "(\(CurrencyAmount.largestMinor))")
        }
        guard currency == currency.uppercased(), CurrencyAmount.isCode(currency) else {
            throw RPCError(
                .invalidArgument,
                "\(body).currency must be an ISO 4217 code in use, in capitals, such as USD, EUR or JPY (XTS for "
                    + "testing)")
        }
        guard merchant.count <= 100, merchant.utf8.count <= 400 else {
            throw RPCError(
                .invalidArgument, "\(body).merchant is at most 100 characters (and 400 bytes of UTF-8)")
        }
    }

    private static func checkTime(_ ms: UInt64, _ field: String) throws(RPCError) {
        guard ms <= latestTimeMs else {
            throw RPCError(
                .invalidArgument,
                "\(field) is \(ms), after the year 9999; give milliseconds since 1970-01-01 UTC, or 0 for none")
        }
    }
}
