import Foundation
import TokenetRPC
import TokenetWire

/// A page of `IssuerControl/ListCards`: how many cards, and after which card id.
///
/// The page token is the last card id of the previous page, base64url-encoded behind a version tag, so that a
/// client treats it as opaque and a later format can tell its own tokens from these. A listing of 200,000 cards is
/// then 400 responses of a few hundred KiB each, instead of one response over the frame size limit.
struct CardPage: Equatable {
    static let defaultSize = 500
    static let maximumSize = 1000
    private static let tokenTag = "c1."

    /// The number of cards to return.
    let size: Int
    /// The id the page starts after; nil for the first page.
    let after: String?

    init(_ request: IssuerV1.ListCardsRequest) throws(RPCError) {
        guard request.pageSize >= 0 else {
            throw RPCError(.invalidArgument, "page_size must be 0 (for \(Self.defaultSize)) or more")
        }
        size = request.pageSize == 0 ? Self.defaultSize : min(Int(request.pageSize), Self.maximumSize)
        after = try Self.cardID(fromToken: request.pageToken)
    }

    static func token(after cardID: String) -> String {
        let base64 = Data(cardID.utf8).base64EncodedString()
        return tokenTag
            + String(
                base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").prefix {
                    $0 != "="
                })
    }

    private static func cardID(fromToken token: String) throws(RPCError) -> String? {
        guard !token.isEmpty else { return nil }
        let refusal = RPCError(
            .invalidArgument,
            "page_token is not one that ListCards returned; start again with an empty page_token")
        guard token.hasPrefix(tokenTag) else { throw refusal }
        var base64 = token.dropFirst(tokenTag.count).replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), !data.isEmpty, let id = String(data: data, encoding: .utf8)
        else { throw refusal }
        return id
    }
}
