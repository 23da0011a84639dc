import Foundation

/// The cards of the issuer's fixture file, as the demo's cardholder types them into the wallet.
///
/// Only what a person would type is read (number, expiry, security code, name); the demo prints masked numbers.
struct DemoFixture: Sendable {
    struct Card: Sendable {
        var id: String
        var pan: String
        var expiry: String
        var cvc: String
        var cardholderName: String

        var masked: String { "****" + pan.suffix(4) }
    }

    var cards: [String: Card]

    init(path: String) throws(CLIError) {
        struct File: Decodable {
            struct FileCard: Decodable {
                var id: String
                var pan: String
                var expiry: String
                var cvc: String?
                var cardholderName: String?
            }
            var cards: [FileCard]
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw CLIError(.setup, "cannot read the issuer's cards from \(path)", cause: DemoCause(error))
        }
        cards = Dictionary(
            file.cards.map {
                (
                    $0.id,
                    Card(
                        id: $0.id, pan: $0.pan, expiry: $0.expiry, cvc: $0.cvc ?? "",
                        cardholderName: $0.cardholderName ?? "")
                )
            }, uniquingKeysWith: { first, _ in first })
    }

    func card(_ id: String) throws(CLIError) -> Card {
        guard let card = cards[id] else { throw CLIError(.setup, "the issuer's fixture has no card \(id)") }
        return card
    }
}
