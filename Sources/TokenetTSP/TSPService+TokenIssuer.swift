import TokenetWire

extension TSPService {
    /// The issuer of a token held by the wallet node `walletNodeID` in `walletAccountID`, for a wallet that stored
    /// the card before it recorded issuers. Another wallet's or another account's token is refused exactly as an
    /// unknown one is: the answer must not tell a wallet that some other account holds a token of that id.
    func tokenIssuer(_ request: TspV1.GetTokenIssuerRequest, walletNodeID: String?) throws
        -> TspV1.GetTokenIssuerResponse
    {
        guard !request.digitalCardID.isEmpty else { throw TSPError(.invalidArgument, "digital_card_id is required") }
        guard !request.walletAccountID.isEmpty else {
            throw TSPError(.invalidArgument, "wallet_account_id is required: the account that holds the token")
        }
        guard let token = try store.token(request.digitalCardID),
            Self.walletHolds(token, walletNodeID: walletNodeID, walletAccountID: request.walletAccountID)
        else {
            throw TSPError(.notFound, "this wallet account holds no token \"\(request.digitalCardID)\"")
        }
        return TspV1.GetTokenIssuerResponse(
            digitalCardID: token.digitalCardID, issuerID: token.issuerID,
            issuerNodeID: try store.issuerNodeID(of: token.issuerID) ?? "")
    }

    /// Whether the token was digitized through the wallet node `walletNodeID` into `walletAccountID`. A caller
    /// without a certificate (plaintext) holds no token, as `requireWallet` has it.
    static func walletHolds(_ token: TokenRecord, walletNodeID: String?, walletAccountID: String) -> Bool {
        guard let walletNodeID else { return false }
        return token.walletNodeID == walletNodeID && token.walletAccountID == walletAccountID
    }
}
