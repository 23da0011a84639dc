import Foundation
import Testing

@testable import TokenetIssuer

/// The issuer app's checks of who opened it and what it was given, as a table: every accepted shape and every
/// rejection with its reason.
@Suite struct ActivationDataTests {
    static func b64(_ json: String) -> String { Data(json.utf8).base64EncodedString() }

    static let google = "com.google.android.gms"
    static let samsung = "com.samsung.android.spay"
    static let apple = "paymentpass.com.apple"
    static let visa = #"{"tokenReferenceID":"DNITHE1","panLast4":"0054","tokenRequestorID":"40010075001"}"#

    struct Accepted: Sendable, CustomTestStringConvertible {
        var name: String
        var caller: String
        var data: String
        var serial = ""
        var expected: AppToAppRequest
        var testDescription: String { name }
    }

    static let accepted: [Accepted] = [
        Accepted(
            name: "Visa from Google Pay", caller: google, data: b64(visa),
            expected: AppToAppRequest(
                caller: .googlePay, reference: .token(digitalCardID: "DNITHE1", panLast4: "0054", scheme: .visa))),
        Accepted(
            name: "Visa from Samsung Pay, with an extra key", caller: samsung,
            data: b64(
                #"{"tokenReferenceID":"DNITHE2","panLast4":"1234","tokenRequestorID":"40010043095","x":1}"#),
            expected: AppToAppRequest(
                caller: .samsungPay, reference: .token(digitalCardID: "DNITHE2", panLast4: "1234", scheme: .visa))),
        Accepted(
            name: "Mastercard from Google Pay", caller: google,
            data: b64(#"{"tokenUniqueReference":"DWSPMC-9","accountPanSuffix":"0074"}"#),
            expected: AppToAppRequest(
                caller: .googlePay,
                reference: .token(digitalCardID: "DWSPMC-9", panLast4: "0074", scheme: .mastercard))),
        Accepted(
            name: "URL-safe base64 without padding", caller: samsung,
            data: b64(#"{"tokenUniqueReference":"DWSPMC-9","accountPanSuffix":"0074"}"#)
                .replacingOccurrences(of: "=", with: ""),
            expected: AppToAppRequest(
                caller: .samsungPay,
                reference: .token(digitalCardID: "DWSPMC-9", panLast4: "0074", scheme: .mastercard))),
        Accepted(
            name: "Apple Pay pass", caller: apple, data: "", serial: "PASS-1",
            expected: AppToAppRequest(caller: .applePay, reference: .pass(serialNumber: "PASS-1"))),
    ]

    @Test(arguments: accepted) func accepts(_ row: Accepted) throws {
        let parsed = AppToAppRequest.parse(caller: row.caller, activationData: row.data, serialNumber: row.serial)
        #expect(try parsed.get() == row.expected)
    }

    struct Refused: Sendable, CustomTestStringConvertible {
        var name: String
        var caller = google
        var data: String
        var serial = ""
        var rejection: ActivationDataRejection
        var reason: String
        var testDescription: String { name }
    }

    static let refused: [Refused] = [
        Refused(
            name: "unknown caller", caller: "com.example.wallet", data: b64(visa),
            rejection: .unknownCaller("com.example.wallet"),
            reason: "does not accept activation from \"com.example.wallet\""),
        Refused(name: "no caller", caller: "", data: b64(visa), rejection: .unknownCaller(""), reason: "required"),
        Refused(
            name: "no activation data", data: "", rejection: .missingActivationData(.googlePay),
            reason: "Google Pay must send activation_data"),
        Refused(name: "bad base64", data: "not base64!", rejection: .badBase64, reason: "not valid base64"),
        Refused(name: "bad padding", data: "eyJ=e30", rejection: .badBase64, reason: "not valid base64"),
        // Padding only ends the text: read by skipping each "=", these were the Visa data itself.
        Refused(
            name: "padding inside the text", data: String(b64(visa).prefix(8)) + "====" + b64(visa).dropFirst(8),
            rejection: .badBase64, reason: "not valid base64"),
        Refused(
            name: "more padding than base64 has", data: b64(visa) + "====", rejection: .badBase64,
            reason: "not valid base64"),
        Refused(name: "bad JSON", data: b64("{tokenReferenceID:"), rejection: .badJSON, reason: "valid JSON"),
        Refused(name: "a JSON array", data: b64("[1,2]"), rejection: .notAnObject, reason: "JSON object"),
        Refused(
            name: "no token reference", data: b64(#"{"panLast4":"0054"}"#), rejection: .unknownShape,
            reason: "tokenReferenceID (Visa) or tokenUniqueReference (Mastercard)"),
        Refused(
            name: "both a Visa and a Mastercard reference",
            data: b64(
                #"{"tokenReferenceID":"DNITHE1","panLast4":"0054","tokenRequestorID":"40010075001","#
                    + #""tokenUniqueReference":"DAPLMC1","accountPanSuffix":"0054"}"#),
            rejection: .twoShapes, reason: "names a token twice"),
        Refused(
            name: "Visa without panLast4",
            data: b64(#"{"tokenReferenceID":"DNITHE1","tokenRequestorID":"40010075001"}"#),
            rejection: .missingField("panLast4"), reason: "missing panLast4"),
        Refused(
            name: "Visa without tokenRequestorID", data: b64(#"{"tokenReferenceID":"DNITHE1","panLast4":"0054"}"#),
            rejection: .missingField("tokenRequestorID"), reason: "missing tokenRequestorID"),
        Refused(
            name: "Visa with an empty tokenReferenceID",
            data: b64(#"{"tokenReferenceID":"","panLast4":"0054","tokenRequestorID":"40010075001"}"#),
            rejection: .missingField("tokenReferenceID"), reason: "missing tokenReferenceID"),
        Refused(
            name: "Visa with a null panLast4",
            data: b64(#"{"tokenReferenceID":"DNITHE1","panLast4":null,"tokenRequestorID":"40010075001"}"#),
            rejection: .missingField("panLast4"), reason: "missing panLast4"),
        Refused(
            name: "Visa with a numeric panLast4",
            data: b64(#"{"tokenReferenceID":"DNITHE1","panLast4":54,"tokenRequestorID":"40010075001"}"#),
            rejection: .malformedField("panLast4", "must be a string"), reason: "panLast4 must be a string"),
        Refused(
            name: "Visa with five digits",
            data: b64(#"{"tokenReferenceID":"DNITHE1","panLast4":"00540","tokenRequestorID":"40010075001"}"#),
            rejection: .malformedField("panLast4", "must be the card's last four digits"),
            reason: "last four digits"),
        Refused(
            name: "Visa with Samsung's requestor from Google Pay",
            data: b64(#"{"tokenReferenceID":"DNITHE1","panLast4":"0054","tokenRequestorID":"40010043095"}"#),
            rejection: .foreignTokenRequestor("40010043095", .googlePay),
            reason: "tokenRequestorID 40010043095 is not Google Pay's (40010075001)"),
        Refused(
            name: "Visa with a reference that is not an identifier",
            data: b64(#"{"tokenReferenceID":"DN IT/HE","panLast4":"0054","tokenRequestorID":"40010075001"}"#),
            rejection: .malformedField("tokenReferenceID", "must be up to 64 letters, digits or dashes"),
            reason: "letters, digits or dashes"),
        Refused(
            name: "Mastercard without accountPanSuffix", data: b64(#"{"tokenUniqueReference":"DWSPMC-9"}"#),
            rejection: .missingField("accountPanSuffix"), reason: "missing accountPanSuffix"),
        Refused(
            name: "Apple Pay without a serial number", caller: apple, data: "", rejection: .missingSerialNumber,
            reason: "serial_number"),
        Refused(
            name: "Apple Pay with activation data", caller: apple, data: b64(visa), serial: "PASS-1",
            rejection: .unexpectedActivationData, reason: "not with activation_data"),
    ]

    @Test(arguments: refused) func refuses(_ row: Refused) {
        let parsed = AppToAppRequest.parse(caller: row.caller, activationData: row.data, serialNumber: row.serial)
        guard case .failure(let rejection) = parsed else {
            Issue.record("\(row.name) was accepted: \(parsed)")
            return
        }
        #expect(rejection == row.rejection)
        #expect(rejection.description.contains(row.reason), "\(rejection)")
        // A caller the app does not know is PERMISSION_DENIED; none at all is a request missing a field.
        #expect(rejection.isUnknownCaller == (row.name == "unknown caller"))
    }
}
