import TokenetCard
import TokenetWire

/// What a `ListTokens` request narrows the TSP's tokens to: a wallet account, an issuer, a wallet node, a state, or
/// any of them together; an empty filter lists every token.
struct TokenListingFilter: Equatable, Sendable {
    var walletAccountID = ""
    var issuerID = ""
    var walletNodeID = ""
    var state: TokenLifecycleStateMachine.State?

    init(
        walletAccountID: String = "", issuerID: String = "", walletNodeID: String = "",
        state: TokenLifecycleStateMachine.State? = nil
    ) {
        self.walletAccountID = walletAccountID
        self.issuerID = issuerID
        self.walletNodeID = walletNodeID
        self.state = state
    }

    /// The request's filters; INVALID_ARGUMENT for a state that is not a `TokenState`.
    init(_ request: TspV1.ListTokensRequest) throws(TSPError) {
        walletAccountID = request.walletAccountID
        issuerID = request.issuerID
        walletNodeID = request.walletNodeID
        // The separators of a page key's listing name (`listingName`): a value holding one could name another
        // listing, whose page token it would then take.
        for (field, value) in [
            ("wallet_account_id", walletAccountID), ("issuer_id", issuerID), ("wallet_node_id", walletNodeID),
        ] where value.unicodeScalars.contains(where: { $0 == "\u{1E}" || $0 == "\u{1F}" }) {
            throw TSPError(
                .invalidArgument,
                "\(field) holds U+001E or U+001F, which page tokens use to tell a listing's filters apart")
        }
        switch request.state {
        case .unspecified: state = nil
        case .inactive: state = .inactive
        case .active: state = .active
        case .suspended: state = .suspended
        case .deactivated: state = .deactivated
        default:
            throw TSPError(
                .invalidArgument,
                "state \(request.state.rawValue) is not a token state: give one of "
                    + CardV1.TokenState.knownCases.compactMap(\.protoValueName).joined(separator: ", "))
        }
    }

    /// Whether only the wallet account narrows the listing (or nothing does): the listings page tokens were made for
    /// before the other filters, whose keys name the account alone.
    var narrowsByAccountOnly: Bool { issuerID.isEmpty && walletNodeID.isEmpty && state == nil }

    /// The listing's name in its page keys (`PageRequest.key(in:ms:tieBreaker:)`): a page token continues only the
    /// listing it came from, since going on from its place in another would skip or repeat tokens.
    var listingName: String {
        guard !narrowsByAccountOnly else { return walletAccountID }
        return [walletAccountID, issuerID, walletNodeID, state?.rawValue ?? ""].joined(separator: "\u{1E}")
    }

    /// The conditions of the page query and their values, in order.
    var conditions: (sql: [String], values: [String]) {
        var sql: [String] = []
        var values: [String] = []
        for (column, value) in [
            ("wallet_account_id", walletAccountID), ("issuer_id", issuerID), ("wallet_node_id", walletNodeID),
            ("state", state?.rawValue ?? ""),
        ] where !value.isEmpty {
            sql.append("\(column) = ?")
            values.append(value)
        }
        return (sql, values)
    }
}
