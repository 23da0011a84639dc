import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetTestSupport
import TokenetWire

@testable import TokenetIssuer

/// The TSP's questions over an in-memory RPC connection, as a TSP peer.
@Suite struct IssuerDecisionsTests {
    let party: IssuerParty
    let client: IssuerV1.IssuerDecisions.Client
    let key: RSAPrivateKey
    let logs = MemoryLogSink()

    init() throws {
        party = try Support.party(sink: logs)
        key = try Support.issuerKey()
        client = IssuerV1.IssuerDecisions.Client(Support.connect(Support.router(party), as: .tsp))
    }

    func eligibility(_ card: (String, String, String)) async throws -> IssuerV1.CardEligibilityResponse {
        try await client.checkCardEligibility(
            IssuerV1.CardEligibilityRequest(encryptedCardData: try Support.encrypted(card.1, expiry: card.2, to: key)))
    }

    func authorize(
        _ card: (String, String, String), scores: (UInt32, UInt32) = (1, 1), deviceID: String = "device-1",
        requestor: (id: String, type: CardV1.TokenType) = ("", .unspecified), par: String = ""
    ) async throws -> IssuerV1.AuthorizeDigitizationResponse {
        var request = IssuerV1.AuthorizeDigitizationRequest()
        request.encryptedCardData = try Support.encrypted(
            card.1, expiry: card.2, cvv2: try Support.cvc(of: card.1), to: key)
        request.digitalCardID = "DNITHE000000000001"
        request.tokenLast4 = "4321"
        request.walletAccountID = "wallet-account-1"
        request.inputMethod = .manual
        request.device = CardV1.DeviceInfo(deviceID: deviceID, deviceType: "PHONE")
        request.risk = CardV1.WalletRiskData(accountScore: scores.0, deviceScore: scores.1, recommendation: .approve)
        request.tokenRequestorID = requestor.id
        request.tokenType = requestor.type
        request.paymentAccountReference = par
        return try await client.authorizeDigitization(request)
    }

    /// An issuer that cannot record its decision (a full disk) answers RESOURCE_EXHAUSTED with what to do: the
    /// IssuerError escaped unmapped and was answered INTERNAL, "internal error", which told the TSP (and its stand-in
    /// reason) nothing.
    @Test func aFullDiskIsResourceExhaustedNotInternal() async throws {
        try FullDisk.hold(party.store.database)
        // A decision row too long for the pages the database has: it needs a page more.
        let error = await #expect(throws: RPCError.self) {
            _ = try await authorize(Cards.mcDecline, deviceID: String(repeating: "d", count: 50_000))
        }
        #expect(error?.code == .resourceExhausted, "\(String(describing: error))")
        #expect(error?.message.contains("cannot record a digitization decision: the issuer's disk is full") == true)
    }

    /// The card data's `public_key_identifier`, when given, must name the key the JWE names, as `card.proto` says
    /// and the TSP checks; and a decision needs the token's id, which later calls name the token by. Both were
    /// taken: the first approved, the second recorded a decision no call could find.
    @Test func cardDataNamingAnotherKeyAndADecisionWithoutItsTokenAreRefused() async throws {
        var request = IssuerV1.AuthorizeDigitizationRequest()
        request.encryptedCardData = try Support.encrypted(
            Cards.visaApprove.1, expiry: Cards.visaApprove.2, cvv2: "123", to: key)
        request.digitalCardID = "DNITHE000000000001"
        request.encryptedCardData?.publicKeyIdentifier = String(repeating: "f", count: 64)
        let otherKey = await Support.rpcError { _ = try await client.authorizeDigitization(request) }
        #expect(otherKey?.code == .invalidArgument)
        #expect(otherKey?.message.contains("is not the key the JWE names (kid \(key.kid))") == true)
        request.encryptedCardData?.publicKeyIdentifier = key.kid
        #expect(try await client.authorizeDigitization(request).decision == .approved)
        request.digitalCardID = ""
        let noToken = await Support.rpcError { _ = try await client.authorizeDigitization(request) }
        #expect(noToken?.code == .invalidArgument && noToken?.message.contains("digital_card_id is required") == true)
    }

    @Test func eligibilityAnswers() async throws {
        #expect(try await eligibility(Cards.visaApprove) == IssuerV1.CardEligibilityResponse(eligible: true))
        #expect(try await eligibility(Cards.mcDecline).eligible)
        let notEligible = try await eligibility(Cards.visaNotEligible)
        #expect(!notEligible.eligible)
        #expect(notEligible.reason == "this card is not enabled for digital wallets; ask Tokenet Bank to enable it")
        let unknown = try await eligibility(("", "4761000050000000", "12/29"))
        #expect(
            unknown == IssuerV1.CardEligibilityResponse(eligible: false, reason: "the issuer has no card ending 0000"))
    }

    @Test func eachRuleDecides() async throws {
        #expect(try await authorize(Cards.visaApprove).decision == .approved)
        let declined = try await authorize(Cards.mcDecline)
        #expect(declined.decision == .declined)
        #expect(declined.reason == "the account is under fraud review; call Tokenet Bank")
        // The issuer's log says why too.
        #expect(
            logs.lines.contains {
                $0.contains("digitization decided") && $0.contains("decision=DECLINED")
                    && $0.contains(#"reason="the account is under fraud review; call Tokenet Bank""#)
            }, "\(logs.lines)")
        let stepUp = try await authorize(Cards.visaStepUp)
        #expect(stepUp.decision == .requireAdditionalAuthentication)
        #expect(stepUp.idvMethods.map(\.type) == [.otpSms, .otpEmail, .appToApp, .callCenter])
        #expect(
            stepUp.idvMethods.map(\.maskedValue) == [
                "***-***-0103", "c***@example.net", "Tokenet Bank app", "+1 800 555 0199",
            ])
        #expect(stepUp.idvMethods[2].appIdentifier == "com.tokenet.bank")
        #expect(stepUp.idvMethods[2].appAction == "com.tokenet.bank.ACTIVATE_TOKEN")
        #expect(try await authorize(Cards.mcScore, scores: (2, 1)).decision == .approved)
        #expect(try await authorize(Cards.mcScore, scores: (2, 4)).decision == .requireAdditionalAuthentication)
        let high = try await authorize(Cards.mcScore, scores: (5, 1))
        #expect(high.decision == .declined)
        #expect(high.reason == "the wallet's risk assessment is too high for this card")
        let notEligible = try await authorize(Cards.visaNotEligible)
        #expect(notEligible.decision == .declined)
        #expect(notEligible.reason.hasPrefix("this card is not enabled"))
    }

    /// A card typed in without its security code is stepped up, not approved: a card number and expiry from a
    /// leaked list (no codes) got a live token. A card the issuer's own app pushed needs no code.
    @Test func aCardWithoutItsSecurityCodeIsSteppedUpUnlessTheIssuersAppPushedIt() async throws {
        func authorize(_ input: CardV1.InputMethod, cvv2: String?) async throws
            -> IssuerV1.AuthorizeDigitizationResponse
        {
            var request = IssuerV1.AuthorizeDigitizationRequest()
            request.encryptedCardData = try Support.encrypted(
                Cards.visaApprove.1, expiry: Cards.visaApprove.2, cvv2: cvv2, to: key)
            request.digitalCardID = "DNITHE000000000001"
            request.inputMethod = input
            request.risk = CardV1.WalletRiskData(accountScore: 1, deviceScore: 1, recommendation: .approve)
            return try await client.authorizeDigitization(request)
        }
        for input in [CardV1.InputMethod.manual, .camera, .onFile, .unspecified] {
            let without = try await authorize(input, cvv2: nil)
            #expect(without.decision == .requireAdditionalAuthentication, "\(input)")
            #expect(without.idvMethods.map(\.type) == [.otpSms, .otpEmail], "\(input)")
        }
        #expect(try await authorize(.manual, cvv2: "123").decision == .approved)
        #expect(try await authorize(.bankApp, cvv2: nil).decision == .approved)
        let unreachable = CardholderContact(phone: "", email: "", callCenterNumber: nil)
        #expect(
            DigitizationPolicy.decide(
                .approve, risk: RiskScores(account: 1, device: 1), contact: unreachable, hold: .noSecurityCode)
                == .declined(reason: DigitizationPolicy.noSecurityCodeDeclineReason))
    }

    /// A card locked by guessed expiries is still the issuer's own app's to push: anyone with the card number could
    /// lock it, and the cardholder's way back, the bank app's push, was refused with it.
    @Test func aCardLockedByWrongExpiriesCanStillBePushedByTheIssuersApp() async throws {
        func check(_ expiry: String, _ input: CardV1.InputMethod) async throws -> IssuerV1.CardEligibilityResponse {
            try await client.checkCardEligibility(
                IssuerV1.CardEligibilityRequest(
                    encryptedCardData: try Support.encrypted(Cards.visaApprove.1, expiry: expiry, to: key),
                    inputMethod: input))
        }
        for wrong in ["01/27", "02/27", "03/27", "04/27", "05/27"] { _ = try await check(wrong, .manual) }
        let typed = try await check(Cards.visaApprove.2, .manual)
        #expect(!typed.eligible && typed.reason.hasPrefix("too many wrong security codes or expiry dates"))
        #expect(try await check(Cards.visaApprove.2, .bankApp).eligible)
        // The push lifts nothing for card data typed in.
        #expect(!(try await check(Cards.visaApprove.2, .manual)).eligible)
    }

    @Test func everyDecisionIsRecordedWithItsInputs() async throws {
        _ = try await authorize(
            Cards.visaApprove, requestor: ("40010030273", .secureElement), par: "V001A9F027E5629D11E3949A0800A")
        _ = try await authorize(Cards.mcScore, scores: (3, 2))
        _ = try await authorize(("", "5400000030000009", "01/30"))
        let rows = try party.store.database.query("SELECT * FROM decisions ORDER BY id")
        #expect(rows.count == 3)
        #expect(
            try rows.map { try $0.text("decision") } == ["APPROVED", "REQUIRE_ADDITIONAL_AUTHENTICATION", "DECLINED"])
        #expect(
            try rows.map { try $0.get("card_id", as: String?.self) } == ["card-visa-approve", "card-mc-score", nil])
        let scored = rows[1]
        #expect(try scored.int("account_score") == 3)
        #expect(try scored.int("device_score") == 2)
        #expect(try scored.text("rule") == "by-score")
        #expect(try scored.text("idv_methods") == #"["OTP_SMS","CALL_CENTER"]"#)
        #expect(try scored.text("digital_card_id") == "DNITHE000000000001")
        #expect(try scored.text("device_id") == "device-1")
        #expect(try scored.text("wallet_account_id") == "wallet-account-1")
        #expect(try rows[2].text("reason") == "the issuer has no card ending 0009")
        // Who asked for the token and where it lives, in the record and in the decision's log line.
        #expect(try rows[0].text("token_requestor_id") == "40010030273")
        #expect(try rows[0].int("token_type") == Int(CardV1.TokenType.secureElement.rawValue))
        #expect(try scored.text("token_requestor_id") == "" && scored.int("token_type") == 0)
        #expect(try rows[0].text("par") == "V001A9F027E5629D11E3949A0800A" && scored.text("par") == "")
        let decided = logs.lines.filter { $0.contains("digitization decided") }
        #expect(decided.count == 3, "\(decided)")
        #expect(
            decided.first?.contains(
                "token_requestor_id=40010030273 token_type=TOKEN_TYPE_SECURE_ELEMENT par=V001A9F027E5629D11E3949A0800A")
                == true,
            "\(decided)")
        #expect(
            decided.dropFirst().allSatisfy {
                $0.contains("token_requestor_id=none token_type=TOKEN_TYPE_UNSPECIFIED par=none")
            })
    }

    /// What is not a PAR (a card number in its place) is refused, not recorded or logged.
    @Test func aPaymentAccountReferenceOfAnotherFormIsRefused() async throws {
        for bad in ["4111111111111111", "V001001381618039894779172816", "v0010013816180398947791728161"] {
            let error = await Support.rpcError { _ = try await authorize(Cards.visaApprove, par: bad) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.hasPrefix("payment_account_reference must be 29 characters") == true)
        }
        #expect(try party.store.database.query("SELECT * FROM decisions").isEmpty)
        #expect(!logs.lines.contains { $0.contains("4111111111111111") })
    }

    @Test func badCardDataIsRefusedWithAReason() async throws {
        let missing = await Support.rpcError {
            _ = try await client.checkCardEligibility(IssuerV1.CardEligibilityRequest())
        }
        #expect(missing?.code == .invalidArgument)
        let wrongKey = await Support.rpcError {
            let request = IssuerV1.CardEligibilityRequest(
                encryptedCardData: try Support.encrypted(
                    Cards.visaApprove.1, expiry: Cards.visaApprove.2, to: try Support.tspKey()))
            _ = try await client.checkCardEligibility(request)
        }
        #expect(wrongKey?.code == .failedPrecondition)
        #expect(wrongKey?.message.contains("issuer's registered key") == true)
        let garbage = await Support.rpcError {
            _ = try await client.checkCardEligibility(
                IssuerV1.CardEligibilityRequest(encryptedCardData: CardV1.EncryptedCardData(jwe: "not.a.jwe")))
        }
        #expect(garbage?.code == .invalidArgument)
    }

    @Test func onlyTheTSPMayAsk() async throws {
        let wallet = IssuerV1.IssuerDecisions.Client(Support.connect(Support.router(party), as: .wallet))
        let error = await Support.rpcError {
            _ = try await wallet.checkCardEligibility(
                IssuerV1.CardEligibilityRequest(
                    encryptedCardData: try Support.encrypted(
                        Cards.visaApprove.1, expiry: Cards.visaApprove.2, to: key)))
        }
        #expect(error?.code == .permissionDenied)
    }
}
