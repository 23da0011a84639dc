import Testing
import TokenetWire

@testable import TokenetNode

/// What a node's `trace` lines leave out of the messages they show.
@Suite struct MessageRedactionTests {
    @Test func aTypedInCardKeepsItsLastFourDigitsAndLosesItsSecurityCode() throws {
        var card = WalletV1.ManualCard()
        card.pan = "4761 0000 1000 0009"
        card.expiry = "12/29"
        card.cvc = "123"
        var request = WalletV1.AddCardRequest()
        request.source = .manual(card)
        let text = MessageRedaction.redacted(try request.jsonValue()).text()
        #expect(text == #"{"manual":{"pan":"************0009","expiry":"12/29","cvc":"(secret)"}}"#)
    }

    /// A private key sent by mistake where a public one goes is refused, and never reaches the log.
    @Test func aPrivateKeyIsLeftOutWhole() throws {
        var request = TspV1.RegisterIssuerRequest()
        request.issuerID = "my-bank"
        request.encryptionPublicKeyPem =
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
        let text = MessageRedaction.redacted(try request.jsonValue()).text()
        #expect(text == #"{"issuerId":"my-bank","encryptionPublicKeyPem":"(not shown: a private key)"}"#)
    }

    @Test func codesAreLeftOutAndWhatIsEmptyStaysEmpty() throws {
        var request = WalletV1.WalletSubmitOtpRequest()
        request.cardRef = "card-1"
        request.code = "123456"
        #expect(
            MessageRedaction.redacted(try request.jsonValue()).text()
                == #"{"cardRef":"card-1","code":"(secret)"}"#)
        // Not set, proto3 JSON leaves the field out: nothing to hide, and "(secret)" would say a code was sent.
        request.code = ""
        #expect(MessageRedaction.redacted(try request.jsonValue()).text() == #"{"cardRef":"card-1"}"#)
    }

    /// A card number whose groups a tab or a line break separates is masked in the message, before JSON writes
    /// those as `\t` and `\n`, which the line's own masking does not read as separators.
    @Test func cardNumbersInStringsAreMaskedBeforeTheJSONIsWritten() {
        let value = JSONValue.object([(key: "body", value: .string("tab 4761\t0000\t1000\t0009 end"))])
        let text = MessageRedaction.redacted(value).text()
        #expect(!text.contains("4761"), "\(text)")
        #expect(text.contains("0009 end"), "\(text)")
        // A push receipt that names no wallet adds the card to whoever redeems it: left out too.
        let receipt = JSONValue.object([(key: "payload", value: .string("rcpt-0123456789abcdef"))])
        #expect(MessageRedaction.redacted(receipt).text() == #"{"payload":"(secret)"}"#)
    }

    @Test func secretsInListsAndNestedObjectsAreFound() {
        let value = JSONValue.object([
            (key: "accounts", value: .array([.object([(key: "pin", value: .string("2468"))])])),
            (key: "status", value: .string("OK")),
        ])
        #expect(
            MessageRedaction.redacted(value).text() == #"{"accounts":[{"pin":"(secret)"}],"status":"OK"}"#)
    }
}
