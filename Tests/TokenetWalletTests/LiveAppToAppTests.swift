import Foundation
import Testing

/// In-app (APP_TO_APP) activation over the three real processes, driven by `tokenet`: the wallet opens the issuer
/// app for Visa and Mastercard cards (Google Pay flavour), Samsung Pay and malformed inputs reach the issuer app as
/// a wallet would send them (`tokenet call` with the wallet's certificate), Apple Pay opens it with a pass. A
/// cardholder who has not enrolled in the app cannot sign in and nothing is activated; the cardholder can still
/// decline, and the wallet hears the failure. The last test signs an enrolled cardholder in.
@Suite(.serialized) struct LiveAppToAppTests {
    static let google = "com.google.android.gms"

    /// Adds the fixture card and accepts its T&C: an INACTIVE token offering the in-app method.
    static func steppedUp(
        _ nodes: LiveProvisioningTests, ref: String, pan: String, expiry: String
    ) async throws -> String {
        _ = try await nodes.tokenet(["wallet", "add-card", nodes.wallet.listen, "--pan", pan, "--exp", expiry])
        let accepted = try await nodes.tokenet(["wallet", "accept-terms", nodes.wallet.listen, ref])
        #expect(
            accepted.stdout.contains("is INACTIVE.") && accepted.stdout.contains("APP_TO_APP"), "\(accepted.stdout)")
        let cards = try nodes.json(try await nodes.tokenet(["wallet", "cards", nodes.wallet.listen, "--json"]))
        let card = try #require((cards["cards"] as? [[String: Any]])?.first { $0["cardRef"] as? String == ref })
        return try #require(card["digitalCardId"] as? String)
    }

    /// The session id from `open-issuer-app`'s output.
    static func session(_ result: CommandResult) -> String? {
        result.stdout.firstMatch(of: /Session (app-[0-9a-f-]+):/).map { String($0.output.1) }
    }

    /// Calls the issuer app's OpenApp the way a wallet does, with the wallet's certificate.
    static func openAsWallet(_ nodes: LiveProvisioningTests, caller: String, json: String) async throws
        -> CommandResult
    {
        let pki = try TestPKI.directory()
        let data = Data(json.utf8).base64EncodedString()
        let body = #"{"caller": "\#(caller)", "activationData": "\#(data)"}"#
        return try await runTokenet([
            "call", nodes.issuer.listen, "tokenet.issuer.v1.IssuerAppToApp/OpenApp", "-d", body,
            "--cacert", pki + "/ca.pem", "--cert", pki + "/wallet.pem", "--key", pki + "/wallet.key",
        ])
    }

    @Test func visaAndMastercardOpenTheAppButNothingIsActivatedWithoutEnrolment() async throws {
        let nodes = try await LiveProvisioningTests()
        let visa = try await Self.steppedUp(nodes, ref: "card-1", pan: "4761000030000054", expiry: "11/29")
        let opened = try await nodes.tokenet(["wallet", "open-issuer-app", nodes.wallet.listen, "card-1"])
        #expect(opened.status == 0, "\(opened.stderr)")
        #expect(opened.stdout.contains("caller \(Self.google)"), "\(opened.stdout)")
        #expect(opened.stdout.contains(": card ending 0054 — sign in to activate"), "\(opened.stdout)")
        let session = try #require(Self.session(opened), "\(opened.stdout)")

        let signIn = try await nodes.tokenet(["issuer-app", "authorize", nodes.issuer.listen, session, "--pin", "1234"])
        // NOT_FOUND, as login answers a cardholder who never activated the app.
        #expect(signIn.status == 64 + 5, "\(signIn.stdout) \(signIn.stderr)")
        #expect(signIn.stderr.contains("could not be signed in"), "\(signIn.stderr)")
        let denied = try await nodes.tokenet(["issuer-app", "authorize", nodes.issuer.listen, session, "--deny"])
        #expect(denied.status == 0, "\(denied.stderr)")
        #expect(
            denied.stdout.hasPrefix(
                "\(visa): failure: the cardholder declined in the issuer app. The wallet was told."),
            "\(denied.stdout)")
        let again = try await nodes.tokenet(["issuer-app", "authorize", nodes.issuer.listen, session, "--deny"])
        #expect(again.status == 64 + 9 && again.stderr.contains("already finished"), "\(again.stderr)")
        // The wallet's cards say why the token is still INACTIVE.
        let listed = try await nodes.tokenet(["wallet", "cards", nodes.wallet.listen])
        #expect(
            listed.stdout.contains(
                "\ncard-1: the issuer app did not activate it: the cardholder declined in the issuer app\n"),
            "\(listed.stdout)")

        let mastercard = try await Self.steppedUp(nodes, ref: "card-2", pan: "5400000030000074", expiry: "04/30")
        let openedMC = try await nodes.tokenet(["wallet", "open-issuer-app", nodes.wallet.listen, "card-2", "--json"])
        let answer = try nodes.json(openedMC)
        #expect(answer["message"] as? String == "card ending 0074 — sign in to activate", "\(openedMC.stdout)")
        let data = try #require(Data(base64Encoded: answer["activationData"] as? String ?? ""))
        let sent = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(sent == ["tokenUniqueReference": mastercard, "accountPanSuffix": "0074"])

        let unknown = try await nodes.tokenet([
            "wallet", "open-issuer-app", nodes.wallet.listen, "card-1", "--caller", "com.example.wallet",
        ])
        #expect(unknown.status == 64 + 7, "\(unknown.stdout) \(unknown.stderr)")
        #expect(unknown.stderr.contains("does not accept activation from \"com.example.wallet\""))

        let cards = try await nodes.tokenet(["wallet", "cards", nodes.wallet.listen])
        #expect(!cards.stdout.contains(" ACTIVE"), "\(cards.stdout)")
        for token in [visa, mastercard] {
            let history = try await nodes.tokenet(["tsp", "history", nodes.tsp.listen, token])
            #expect(!history.stdout.contains("in-app ID&V"), "\(history.stdout)")
        }
    }

    @Test func samsungPayAndMalformedActivationDataAsTheWalletSendsThem() async throws {
        let nodes = try await LiveProvisioningTests()
        let token = try await Self.steppedUp(nodes, ref: "card-1", pan: "4761000030000054", expiry: "11/29")
        let samsung = try await Self.openAsWallet(
            nodes, caller: "com.samsung.android.spay",
            json: #"{"tokenReferenceID":"\#(token)","panLast4":"0054","tokenRequestorID":"40010043095"}"#)
        #expect(samsung.status == 0, "\(samsung.stderr)")
        #expect(samsung.stdout.contains("card ending 0054 — sign in to activate"), "\(samsung.stdout)")

        let malformed: [(String, String, String)] = [
            ("{oops", "does not hold valid JSON", "bad JSON"),
            (#"["not", "an", "object"]"#, "must hold a JSON object", "not an object"),
            (#"{"panLast4":"0054"}"#, "tokenReferenceID (Visa) or tokenUniqueReference", "no token reference"),
            (#"{"tokenReferenceID":"\#(token)","tokenRequestorID":"40010075001"}"#, "missing panLast4", "Visa"),
            (#"{"tokenReferenceID":"\#(token)","panLast4":"0054"}"#, "missing tokenRequestorID", "Visa"),
            (#"{"tokenUniqueReference":"\#(token)"}"#, "missing accountPanSuffix", "Mastercard"),
            (
                #"{"tokenReferenceID":"\#(token)","panLast4":"0054","tokenRequestorID":"40010043095"}"#,
                "is not Google Pay's", "Samsung's requestor from Google Pay"
            ),
        ]
        for (json, reason, what) in malformed {
            let refused = try await Self.openAsWallet(nodes, caller: Self.google, json: json)
            #expect(refused.status == 64 + 3, "\(what): \(refused.stdout) \(refused.stderr)")
            #expect(refused.stderr.contains(reason), "\(what): \(refused.stderr)")
        }
        let pki = try TestPKI.directory()
        let badBase64 = try await runTokenet([
            "call", nodes.issuer.listen, "tokenet.issuer.v1.IssuerAppToApp/OpenApp", "-d",
            #"{"caller": "\#(Self.google)", "activationData": "%%% not base64"}"#,
            "--cacert", pki + "/ca.pem", "--cert", pki + "/wallet.pem", "--key", pki + "/wallet.key",
        ])
        #expect(badBase64.status == 64 + 3 && badBase64.stderr.contains("not valid base64"), "\(badBase64.stderr)")
        let history = try await nodes.tokenet(["tsp", "history", nodes.tsp.listen, token])
        #expect(!history.stdout.contains("in-app ID&V"), "\(history.stdout)")
    }

    @Test func applePayOpensTheAppWithAPassItResolvesInTheWallet() async throws {
        let nodes = try await LiveProvisioningTests(walletConfiguration: #"{"provider": "apple-pay"}"#)
        _ = try await Self.steppedUp(nodes, ref: "card-1", pan: "4761000030000054", expiry: "11/29")
        let opened = try await nodes.tokenet(["wallet", "open-issuer-app", nodes.wallet.listen, "card-1"])
        #expect(opened.status == 0, "\(opened.stderr)")
        #expect(opened.stdout.contains("caller paymentpass.com.apple, pass serial number "), "\(opened.stdout)")
        #expect(opened.stdout.contains(": card ending 0054 — sign in to activate"), "\(opened.stdout)")
    }

    /// The whole path with the real login: Chloe enrols her account in the issuer app (the code from the outbox,
    /// PIN 2580), the wallet opens the app for her step-up card, she signs in, the TSP activates the token with her
    /// access token and the wallet and the issuer app's view follow.
    @Test func theCardholderSignsInAndTheTokenBecomesActiveEverywhere() async throws {
        let nodes = try await LiveProvisioningTests()
        try await Self.enrolChloe(nodes)

        let token = try await Self.steppedUp(nodes, ref: "card-1", pan: "4761000030000054", expiry: "11/29")
        _ = try await nodes.appViewRow(token, state: "TOKEN_STATE_INACTIVE")
        let opened = try await nodes.tokenet(["wallet", "open-issuer-app", nodes.wallet.listen, "card-1"])
        let session = try #require(Self.session(opened), "\(opened.stdout) \(opened.stderr)")
        let wrongPIN = try await nodes.tokenet([
            "issuer-app", "authorize", nodes.issuer.listen, session, "--pin", "1470",
        ])
        #expect(wrongPIN.status == 64 + 16, "\(wrongPIN.stdout) \(wrongPIN.stderr)")
        let signedIn = try await nodes.tokenet([
            "issuer-app", "authorize", nodes.issuer.listen, session, "--pin", "2580",
        ])
        #expect(
            signedIn.stdout.hasPrefix("\(token): approved; the token is ACTIVE. The wallet was told."),
            "\(signedIn.stdout) \(signedIn.stderr)")
        let row = try await nodes.appViewRow(token, state: "TOKEN_STATE_ACTIVE")
        // Two paths tell the app, whichever comes first: the wallet's listener event and the TSP's CARD_STATE.
        #expect(
            ["WALLET_EVENT_KIND_TOKEN_STATUS_CHANGED", "CARD_STATE"].contains(row["updatedBy"] as? String ?? ""),
            "\(row)")
        let cards = try await nodes.tokenet(["wallet", "cards", nodes.wallet.listen])
        #expect(cards.stdout.contains(" ACTIVE"), "\(cards.stdout)")
        let history = try await nodes.tokenet(["tsp", "history", nodes.tsp.listen, token])
        #expect(history.stdout.contains("in-app ID&V"), "\(history.stdout)")
        #expect(history.stdout.contains("issuer-app:tokenet-bank/ch-chloe"), "\(history.stdout)")
    }
}
