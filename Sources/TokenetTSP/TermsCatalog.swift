import TokenetWire

/// The terms and conditions texts a program shows before digitization, by language, with English as fallback.
public struct TermsCatalog: Sendable, Equatable {
    public struct Text: Sendable, Equatable {
        public var text: String
        public init(_ text: String) { self.text = text }
    }

    /// One id for every language, so accepting the text in any language accepts these terms.
    public var id: String
    public var version: String
    /// Texts keyed by primary language subtag ("en", "es"). Must hold "en" unless empty.
    public var texts: [String: Text]

    public init(id: String, version: String, texts: [String: Text]) {
        self.id = id
        self.version = version
        self.texts = texts
    }

    /// A program without terms: eligibility answers `no_terms_required` and Digitize needs no acceptance.
    public static let none = TermsCatalog(id: "", version: "", texts: [:])

    public static let sandbox = TermsCatalog(
        id: "tokenet-wallet-terms",
        version: "2026-11",
        texts: [
            "en": Text(
                "By adding this card to your wallet you allow the card issuer and the token service to create a "
                    + "digital card number for payments from this device. Your card number is not shared with "
                    + "merchants. You can remove the digital card at any time."),
            "es": Text(
                "Al añadir esta tarjeta a su billetera, usted permite que el emisor de la tarjeta y el servicio de "
                    + "tokenización creen un número de tarjeta digital para pagos desde este dispositivo. Su número "
                    + "de tarjeta no se comparte con los comercios. Puede eliminar la tarjeta digital en cualquier "
                    + "momento."),
        ])

    public var requiresAcceptance: Bool { !texts.isEmpty }

    /// The terms for a BCP-47 tag: its primary subtag's text ("es-MX" → "es"), else English.
    public func terms(for languageTag: String) -> CardV1.TermsAndConditions? {
        guard requiresAcceptance else { return nil }
        let primary = languageTag.split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map {
            $0.lowercased()
        }
        let language =
            primary.flatMap { texts[$0] != nil ? $0 : nil } ?? (texts["en"] != nil ? "en" : texts.keys.min()!)
        return CardV1.TermsAndConditions(id: id, version: version, language: language, text: texts[language]!.text)
    }
}
