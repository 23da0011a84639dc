import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetStorage
import TokenetWire

@testable import TokenetTSP

/// CheckEligibility over the wire: each check's reason, malformed requests, T&C languages.
@Suite struct EligibilityTests {
    @Test func publishesTheCurrentKey() async throws {
        let tsp = try TSPHarness.make()
        let keys = try await tsp.wallet.getEncryptionKeys(TspV1.GetEncryptionKeysRequest()).keys
        #expect(keys.map(\.publicKeyIdentifier) == [TSPHarness.tspKey.kid])
        #expect(keys.first?.current == true)
        #expect(keys.first?.publicKeyPem == (try TSPHarness.tspKey.publicKey.pem()))
    }

    @Test func eligibleCardGetsReceiptTermsAndLast4() async throws {
        let tsp = try TSPHarness.make()
        let response = try await tsp.eligibleVisa()
        #expect(response.scheme == .visa)
        #expect(response.panLast4 == "1111")
        #expect(response.eligibilityReceipt.count >= 40)
        #expect(response.receiptExpiresAtMs == tsp.clock.now.unixMilliseconds + 10 * 60 * 1000)
        guard case .termsAndConditions(let terms) = response.terms else {
            Issue.record("expected T&C")
            return
        }
        #expect(terms.language == "en")
        #expect(terms.id == TermsCatalog.sandbox.id)
        // The issuer was asked, with the card encrypted to its own key.
        #expect(tsp.issuer.state.withLock { $0.decryptedLast4 } == ["1111"])
    }

    /// The eligibility data the issuer is told of is required and checked: a check without an input method, or
    /// with a language that is no tag at all, was answered eligible in English, and the wallet never told.
    @Test func eligibilityDataWithoutAnInputMethodOrWithABadLanguageIsRefused() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        func check(_ data: TspV1.EligibilityData?) async throws {
            _ = try await tsp.wallet.checkEligibility(
                TspV1.CheckEligibilityRequest(
                    requestID: UUID().uuidString, eligibilityData: data, walletAccountID: TSPHarness.account,
                    device: TSPHarness.device,
                    instrument: .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa)))))
        }
        let required = "eligibility_data.input_method is required: say how the card was entered, one of "
        await expectRPCError(.invalidArgument, required + "INPUT_METHOD_MANUAL, INPUT_METHOD_CAMERA or") {
            try await check(nil)
        }
        await expectRPCError(.invalidArgument, required) { try await check(.init(language: "en")) }
        await expectRPCError(.invalidArgument, "eligibility_data: the language '!!' is not a BCP-47 language tag") {
            try await check(.init(language: "!!", inputMethod: .manual))
        }
        try await check(.init(language: "", inputMethod: .onFile))
        try await check(.init(language: "es-ES", inputMethod: .camera))
        // BANK_APP is the TSP's word for what the issuer's app pushed: a wallet's claim of it for card data got a
        // card number and expiry alone approved.
        await expectRPCError(.invalidArgument, "INPUT_METHOD_BANK_APP is for a card the issuer's app pushed") {
            try await check(.init(language: "en", inputMethod: .bankApp))
        }
    }

    /// The input method is kept with the receipt and told to the issuer: a value no one declared is refused.
    @Test func anUndeclaredInputMethodIsRefused() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        await expectRPCError(.invalidArgument, "eligibility_data.input_method 999 is not an input method") {
            try await tsp.wallet.checkEligibility(
                TspV1.CheckEligibilityRequest(
                    requestID: UUID().uuidString,
                    eligibilityData: TspV1.EligibilityData(language: "en", inputMethod: .init(rawValue: 999)),
                    walletAccountID: TSPHarness.account, device: TSPHarness.device,
                    instrument: .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa)))))
        }
    }

    @Test func eachCheckHasItsOwnReason() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let cases: [(String, String, TspV1.IneligibilityReason, String)] = [
            ("4111111111111112", "2030", .invalidCardNumber, "Luhn"),
            ("378282246310005", "2030", .unsupportedScheme, "Visa"),
            (TSPHarness.visa, "2020", .cardExpired, "expired"),
            (TSPHarness.otherVisa, "2030", .issuerNotParticipating, "does not offer"),
        ]
        for (pan, year, reason, text) in cases {
            let response = try await tsp.checkEligibility(pan: pan, year: year)
            #expect(!response.eligible)
            #expect(response.reason == reason)
            #expect(response.reasonMessage.contains(text), "\(response.reasonMessage)")
            #expect(response.eligibilityReceipt.isEmpty)
        }
        let notParticipating = try await tsp.checkEligibility(pan: TSPHarness.otherVisa)
        #expect(notParticipating.panLast4 == "5556")
        #expect(notParticipating.scheme == .visa)
    }

    /// A wallet that writes the JWE's expiry year with two digits, or outside 2000–9999, is told how the card data
    /// gives the expiry, not to write it as MM/YY (which is what it did), and the reason is no expired card, which
    /// a wallet would show the cardholder for its own encoding mistake.
    @Test func aMalformedExpirationDateInCardDataSaysHowCardDataGivesIt() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        for year in ["30", "1999", "20301"] {
            let response = try await tsp.checkEligibility(pan: TSPHarness.visa, year: year)
            #expect(!response.eligible)
            #expect(response.reason == .invalidExpiry)
            #expect(!response.reasonMessage.contains("MM/YY"), "\(response.reasonMessage)")
            #expect(response.reasonMessage.contains("four digits"), "\(response.reasonMessage)")
            #expect(response.reasonMessage.contains("\"year\": \"2027\""), "\(response.reasonMessage)")
        }
    }

    /// A month of one digit (the card data asks for two) or one that is no month is an invalid expiry, not an
    /// expired card.
    @Test func aMonthThatIsNoMonthIsAnInvalidExpiry() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        for (month, text) in [("9", "month as two digits"), ("13", "the expiry month 13 is not a month")] {
            let response = try await tsp.checkEligibility(
                .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa, month: month))))
            #expect(!response.eligible)
            #expect(response.reason == .invalidExpiry, "\(month)")
            #expect(response.reasonMessage.contains(text), "\(response.reasonMessage)")
        }
        #expect(
            try await tsp.checkEligibility(
                .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa, month: "09")))
            ).eligible)
    }

    /// `public_key_identifier` is optional, but one that names another key than the JWE's `kid` is refused; it used
    /// to be ignored.
    @Test func aKeyIdentifierThatIsNotTheJWEsKidIsRefused() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        var encrypted = try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa))
        encrypted.publicKeyIdentifier = String(repeating: "ab", count: 32)
        let error = try await #require(throws: RPCError.self) {
            try await tsp.checkEligibility(.encryptedCardData(encrypted))
        }
        #expect(error.code == .invalidArgument)
        #expect(
            error.message.contains(
                "public_key_identifier \"\(String(repeating: "ab", count: 32))\" is not the key the JWE names"))
        encrypted.publicKeyIdentifier = String(repeating: "ab", count: 40)
        let long = try await #require(throws: RPCError.self) {
            try await tsp.checkEligibility(.encryptedCardData(encrypted))
        }
        #expect(long.message.contains("public_key_identifier \"\(String(repeating: "ab", count: 32))…\" is not"))
        encrypted.publicKeyIdentifier = ""
        #expect(try await tsp.checkEligibility(.encryptedCardData(encrypted)).eligible)
    }

    /// A security code no card has is refused before the issuer compares it: sent on, five of them locked the card
    /// for a day. None at all, or an empty one, is a card without a code.
    @Test func aSecurityCodeNoCardHasIsRefusedBeforeTheIssuerIsAsked() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        for code in ["abc", "12", "12345", "１２３", " 123"] {
            var card = TSPHarness.card(TSPHarness.visa)
            card.cvv2 = code
            let error = try await #require(throws: RPCError.self) {
                try await tsp.checkEligibility(.encryptedCardData(try TSPHarness.encrypted(card)))
            }
            #expect(error.code == .invalidArgument, "\(code)")
            #expect(error.message.contains("the card data's cvv2 is not a security code (3 or 4 digits"), "\(code)")
        }
        for code in [nil, "", "1234"] {
            var card = TSPHarness.card(TSPHarness.visa)
            card.cvv2 = code
            #expect(try await tsp.checkEligibility(.encryptedCardData(try TSPHarness.encrypted(card))).eligible)
        }
    }

    @Test func alreadyActiveCardIsRefusedForTheSameDeviceOnly() async throws {
        let tsp = try TSPHarness.make()
        let first = try await tsp.eligibleVisa()
        _ = try await tsp.digitize(first)
        let again = try await tsp.checkEligibility(pan: TSPHarness.visa)
        #expect(again.reason == .alreadyProvisioned)
        #expect(again.reasonMessage.contains("1111"))
        let otherDevice = CardV1.DeviceInfo(deviceID: "watch-1", deviceType: "WATCH")
        let watch = try await tsp.checkEligibility(
            .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa))), device: otherDevice)
        #expect(watch.eligible)
    }

    @Test func issuerDeclineIsReportedWithItsReason() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        tsp.issuer.state.withLock {
            $0.eligible = false
            $0.eligibilityReason = "this card is blocked for wallets"
        }
        let response = try await tsp.checkEligibility(pan: TSPHarness.visa)
        #expect(response.reason == .issuerDeclined)
        #expect(response.reasonMessage == "this card is blocked for wallets")
    }

    @Test func slowIssuerLeavesTheTSPChecksStanding() async throws {
        let tsp = try TSPHarness.make(configuration: TSPHarness.impatient)
        try await tsp.registerIssuer()
        tsp.issuer.state.withLock { $0.slowEligibility = true }
        let response = try await tsp.checkEligibility(pan: TSPHarness.visa)
        #expect(response.eligible)
    }

    @Test func tamperedOrUnknownKeyJWEIsInvalidArgumentAndStoresNothing() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        var tampered = try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa))
        var parts = tampered.jwe.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[3] = String(parts[3].reversed())
        tampered.jwe = parts.joined(separator: ".")
        await expectRPCError(.invalidArgument, "encrypted_card_data") {
            try await tsp.checkEligibility(.encryptedCardData(tampered))
        }
        let otherKey = try RSAPrivateKey.generate()
        let foreign = try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa), key: otherKey)
        await expectRPCError(.invalidArgument, otherKey.kid) {
            try await tsp.checkEligibility(.encryptedCardData(foreign))
        }
        await expectRPCError(.invalidArgument, "encrypted_card_data, issuer_push_receipt or push_session_id") {
            try await tsp.wallet.checkEligibility(
                TspV1.CheckEligibilityRequest(
                    eligibilityData: TspV1.EligibilityData(language: "en", inputMethod: .manual),
                    walletAccountID: TSPHarness.account, device: TSPHarness.device))
        }
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        #expect(try database.queryOne("SELECT count(*) FROM eligibility_receipts")?.int(0) == 0)
    }

    @Test func missingAccountOrDeviceIsInvalidArgument() async throws {
        let tsp = try TSPHarness.make()
        let data = try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa))
        await expectRPCError(.invalidArgument, "wallet_account_id") {
            try await tsp.checkEligibility(.encryptedCardData(data), account: "")
        }
        await expectRPCError(.invalidArgument, "device_id") {
            try await tsp.checkEligibility(.encryptedCardData(data), device: CardV1.DeviceInfo())
        }
        // Ids are listed in full: one holding a card number is refused, not echoed, and stores nothing.
        await expectRPCError(.invalidArgument, "wallet_account_id holds what reads as a card number") {
            try await tsp.checkEligibility(.encryptedCardData(data), account: "4111111111111111")
        }
        await expectRPCError(.invalidArgument, "device.device_id holds what reads as a card number") {
            try await tsp.checkEligibility(
                .encryptedCardData(data), device: CardV1.DeviceInfo(deviceID: "dev 4111 1111 1111 1111"))
        }
    }

    /// Account and device fields no wallet sends are refused at the door: they are kept with the receipt and the
    /// token, listed, logged, and told to the issuer (a 70 KB device name made its stand-in advice unsendable).
    @Test func accountAndDeviceFieldsAreChecked() async throws {
        let tsp = try TSPHarness.make()
        let data = try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa))
        await expectRPCError(.invalidArgument, "wallet_account_id must be 1 to 64 characters") {
            try await tsp.checkEligibility(.encryptedCardData(data), account: "account\u{1F}1")
        }
        await expectRPCError(.invalidArgument, "device.device_id must be 1 to 64 characters") {
            try await tsp.checkEligibility(
                .encryptedCardData(data), device: CardV1.DeviceInfo(deviceID: String(repeating: "d", count: 65)))
        }
        await expectRPCError(.invalidArgument, "device.device_name must be 1 to 64 characters") {
            try await tsp.checkEligibility(
                .encryptedCardData(data),
                device: CardV1.DeviceInfo(deviceID: "d-1", deviceName: String(repeating: "n", count: 70_000)))
        }
        await expectRPCError(.invalidArgument, "device.os_version must be") {
            try await tsp.checkEligibility(
                .encryptedCardData(data), device: CardV1.DeviceInfo(deviceID: "d-1", osVersion: "17\n.1"))
        }
        // The receipt's device is checked at Digitize too, where its other fields may differ.
        let eligibility = try await tsp.eligibleVisa()
        var device = TSPHarness.device
        device.deviceName = "Ann\u{202E}s phone"
        await expectRPCError(.invalidArgument, "device.device_name must be") {
            try await tsp.digitize(eligibility, device: device)
        }
        device.deviceName = "Ann's phone"
        #expect(try await tsp.digitize(eligibility, device: device).tokenState == .active)
    }

    /// An issuer's refusal goes back in the answer's body, which nothing else masks: a card number in it is masked
    /// and its length is cut.
    @Test func anIssuersRefusalIsMaskedAndCut() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        tsp.issuer.set(.refuseWith("card 4111111111111111 unknown" + String(repeating: "!", count: 10_000)))
        let answer = try await tsp.checkEligibility(pan: TSPHarness.visa)
        #expect(!answer.eligible && answer.reason == .issuerDeclined)
        #expect(
            answer.reasonMessage.hasPrefix(
                "the issuer refused the eligibility check (NOT_FOUND): card ************1111 unknown!"))
        #expect(answer.reasonMessage.count < 600 && answer.reasonMessage.hasSuffix("…"))
    }

    @Test(arguments: [("es-ES", "es"), ("es-MX", "es"), ("es", "es"), ("fr-FR", "en"), ("", "en"), ("en-GB", "en")])
    func termsLanguageFallsBackToEnglish(tag: String, expected: String) async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let response = try await tsp.checkEligibility(pan: TSPHarness.visa, language: tag)
        guard case .termsAndConditions(let terms) = response.terms else {
            Issue.record("expected T&C")
            return
        }
        #expect(terms.language == expected)
        #expect(terms.text == TermsCatalog.sandbox.texts[expected]?.text)
    }

    @Test func programWithoutTermsSaysSoAndDigitizesWithoutAcceptance() async throws {
        var configuration = TSPHarness.configuration
        configuration.terms = .none
        let tsp = try TSPHarness.make(configuration: configuration)
        let eligibility = try await tsp.eligibleVisa()
        #expect(eligibility.terms == .noTermsRequired(TspV1.NoTermsRequired()))
        let response = try await tsp.digitize(eligibility, acceptTerms: false)
        #expect(response.decision == .approved)
    }

    @Test func walletOnlyMethodsRefuseOtherRoles() async throws {
        let tsp = try TSPHarness.make()
        let asIssuer = TspV1.Provisioning.Client(TSPHarness.connect(tsp.router, as: .init(role: .issuer, nodeID: "i")))
        await expectRPCError(.permissionDenied, "may not call") {
            try await asIssuer.checkEligibility(TspV1.CheckEligibilityRequest())
        }
    }
}
