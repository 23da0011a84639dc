import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

extension TSPService {
    func checkEligibility(_ request: TspV1.CheckEligibilityRequest, walletNodeID: String? = nil, log: Logger)
        async throws
        -> TspV1.CheckEligibilityResponse
    {
        guard !request.walletAccountID.isEmpty else {
            throw TSPError(.invalidArgument, "wallet_account_id is required")
        }
        guard let deviceID = request.device?.deviceID, !deviceID.isEmpty else {
            throw TSPError(.invalidArgument, "device.device_id is required: a token is bound to one device")
        }
        try Self.requireWalletAccountID(request.walletAccountID)
        try Self.checkDevice(request.device ?? .init(deviceID: deviceID))
        var inputMethod = request.eligibilityData?.inputMethod ?? .unspecified
        // Kept with the receipt and told to the issuer, whose decision may rest on it: a value no one declared would
        // reach it as a number it cannot read.
        guard inputMethod.protoValueName != nil else {
            throw TSPError(
                .invalidArgument,
                "eligibility_data.input_method \(inputMethod.rawValue) is not an input method: give one of "
                    + "INPUT_METHOD_MANUAL, INPUT_METHOD_CAMERA or INPUT_METHOD_ON_FILE")
        }
        // BANK_APP is what the issuer's own app pushed, which the issuer needs no security code for: the TSP says it
        // of push receipts and sessions itself, whatever the wallet said, and refuses it for card data, where a
        // wallet's word got a card number and expiry alone approved.
        switch request.instrument {
        case .encryptedCardData where inputMethod == .bankApp:
            throw TSPError(
                .invalidArgument,
                "eligibility_data.input_method INPUT_METHOD_BANK_APP is for a card the issuer's app pushed "
                    + "(issuer_push_receipt or push_session_id); card data says how it was entered: "
                    + "INPUT_METHOD_MANUAL, INPUT_METHOD_CAMERA or INPUT_METHOD_ON_FILE")
        case .issuerPushReceipt, .pushSessionID: inputMethod = .bankApp
        case .encryptedCardData, nil: break
        }
        // Left out, the issuer was asked about a card entered by no known means, and the wallet was never told.
        guard inputMethod != .unspecified else {
            throw TSPError(
                .invalidArgument,
                "eligibility_data.input_method is required: say how the card was entered, one of "
                    + "INPUT_METHOD_MANUAL, INPUT_METHOD_CAMERA or INPUT_METHOD_ON_FILE (INPUT_METHOD_BANK_APP is what "
                    + "the TSP says of a push receipt or session)")
        }
        // A language that is no tag at all was answered in English without a word, as the wallet's own check says.
        if let problem = ManualCardForm.languageProblem(request.eligibilityData?.language ?? "") {
            throw TSPError(.invalidArgument, "eligibility_data: \(problem)")
        }
        let (card, instrument) = try resolveInstrument(request, walletNodeID: walletNodeID)
        let issuers = try store.issuers()
        let result = try EligibilityRules.evaluate(
            card, asOf: now(), issuerFor: { pan in issuers.first { $0.owns(pan) } },
            isAlreadyProvisioned: { pan in
                try self.store.hasLiveToken(
                    for: pan, walletNodeID: walletNodeID, walletAccountID: request.walletAccountID, deviceID: deviceID)
            })
        let eligible: EligibilityRules.Eligible
        switch result {
        case .failure(let ineligible):
            log.info("card not eligible", ["reason": ineligible.reason.protoValueName ?? "", "last4": card.last4])
            return Self.ineligible(ineligible, card: card)
        case .success(let value):
            eligible = value
        }
        let declined = await issuerEligibility(card, issuer: eligible.issuer, request: request, log: log)
        // The caller gave up (cancelled, or its deadline passed) while the issuer was asked: nobody will read the
        // answer, so nothing is stored, and a push receipt or session stays unused for the wallet's next try.
        if Task.isCancelled {
            log.info("eligibility check ended by its caller before an answer; nothing kept", ["last4": card.last4])
            throw CancellationError()
        }
        if let declined { return Self.ineligible(declined, card: card) }
        let nowMs = self.nowMs
        let terms = configuration.terms.terms(for: request.eligibilityData?.language ?? "")
        let receipt = EligibilityReceiptRecord(
            receipt: Self.randomIdentifier(), walletAccountID: request.walletAccountID, deviceID: deviceID,
            issuerID: eligible.issuer.id, scheme: eligible.scheme, panLast4: eligible.pan.last4, card: card,
            inputMethod: inputMethod, termsID: terms?.id,
            expiresAtMs: nowMs + configuration.eligibilityReceiptTTL.milliseconds, usedByRequestID: nil,
            walletNodeID: walletNodeID)
        try store.insertEligibilityReceipt(receipt, spending: instrument, nowMs: nowMs)
        log.info(
            "card eligible",
            ["scheme": eligible.scheme.rawValue, "last4": eligible.pan.last4, "issuer": eligible.issuer.id])
        var response = TspV1.CheckEligibilityResponse()
        response.eligible = true
        response.terms = terms.map { .termsAndConditions($0) } ?? .noTermsRequired(TspV1.NoTermsRequired())
        response.eligibilityReceipt = receipt.receipt
        response.receiptExpiresAtMs = receipt.expiresAtMs
        response.scheme = eligible.scheme.wire
        response.panLast4 = eligible.pan.last4
        return response
    }

    /// Refuses an account or device id that holds a card number: the TSP shows and logs ids in full (token
    /// listings, history), where a card number must never appear. The id is not echoed.
    static func requireNoCardNumber(_ value: String, field: String) throws {
        guard !IdentifierRules.holdsCardNumber(identifier: value) else {
            throw TSPError(
                .invalidArgument,
                "\(field) holds what reads as a card number; ids are shown in full in listings and logs, where a card "
                    + "number must not be: give another id")
        }
    }

    /// Refuses a wallet account id that no wallet could hold (`IdentifierRules`, as the wallet's own account ids):
    /// a push receipt or session made for one was accepted, and could never be redeemed.
    static func requireWalletAccountID(_ value: String, field: String = "wallet_account_id") throws {
        try requireNoCardNumber(value, field: field)
        if let problem = IdentifierRules.problem(value) {
            throw TSPError(.invalidArgument, "\(field) must be \(problem), as a wallet's account ids are")
        }
    }

    /// Refuses device fields no wallet sends (`IdentifierRules`: an id of 1 to 64 characters, names and versions of
    /// at most 64, or empty). They are kept with the receipt and the token, shown in listings, and told to the issuer
    /// (STAND_IN_ADVICE carries them): a device name of 70 KB made the advice too large to send, and a line break in
    /// one forged a log line.
    static func checkDevice(_ device: CardV1.DeviceInfo) throws {
        try requireNoCardNumber(device.deviceID, field: "device.device_id")
        if let problem = IdentifierRules.problem(device.deviceID) {
            throw TSPError(.invalidArgument, "device.device_id must be \(problem)")
        }
        let names = [
            ("device.device_type", device.deviceType), ("device.device_name", device.deviceName),
            ("device.os_name", device.osName), ("device.os_version", device.osVersion),
        ]
        for (field, value) in names where !value.isEmpty {
            if let problem = IdentifierRules.problem(value, spaces: true) {
                throw TSPError(.invalidArgument, "\(field) must be \(problem), or left empty")
            }
        }
    }

    /// A refusal; the scheme and last four digits are included when the number itself is valid.
    static func ineligible(_ ineligible: EligibilityRules.Ineligible, card: CardData) -> TspV1.CheckEligibilityResponse
    {
        var response = TspV1.CheckEligibilityResponse()
        response.eligible = false
        response.reason = ineligible.reason
        response.reasonMessage = ineligible.message
        if let pan = try? card.pan() {
            response.scheme = pan.scheme.wire
            response.panLast4 = pan.last4
        }
        return response
    }

    /// The card data behind the request's instrument: decrypted card data, an issuer's push receipt, or a push
    /// session. Receipts and sessions are spent with an eligible answer, not here: a check that never answers (its
    /// caller gone while the issuer was asked) leaves them for the next try, and so does a refusal, which the next
    /// try is told again. Spent by a refusal, a receipt refused for a card already in the wallet could not add the
    /// card once the cardholder had removed it: the retry was told the receipt "adds a card once", though it had
    /// added none.
    private func resolveInstrument(_ request: TspV1.CheckEligibilityRequest, walletNodeID: String?) throws
        -> (CardData, RedeemedInstrument)
    {
        switch request.instrument {
        case .encryptedCardData(let encrypted):
            return (try decryptCardData(encrypted, field: "encrypted_card_data"), .cardData)
        case .issuerPushReceipt(let receipt):
            guard receipt.scheme == .mastercard else {
                guard receipt.scheme.protoValueName != nil, receipt.scheme != .unspecified else {
                    throw TSPError(
                        .invalidArgument,
                        "issuer_push_receipt.scheme \(receipt.scheme.rawValue) is not a card scheme; push receipts are "
                            + "Mastercard's (CARD_SCHEME_MASTERCARD)")
                }
                throw TSPError(
                    .invalidArgument,
                    "issuer push receipts are Mastercard-only (MDES Token Connect); for a Visa card the wallet "
                        + "sends the pushed card data or a push session id")
            }
            guard !receipt.payload.isEmpty else {
                throw TSPError(.invalidArgument, "issuer_push_receipt.payload is required")
            }
            let card = try store.pushReceiptCard(
                payload: receipt.payload, walletAccountID: request.walletAccountID, walletNodeID: walletNodeID,
                nowMs: nowMs)
            return (card, .pushReceipt(receipt.payload))
        case .pushSessionID(let id):
            guard !id.isEmpty else { throw TSPError(.invalidArgument, "push_session_id is empty") }
            let card = try store.pushSessionCard(
                id: id, walletAccountID: request.walletAccountID, walletNodeID: walletNodeID, nowMs: nowMs)
            return (card, .pushSession(id))
        case nil:
            throw TSPError(
                .invalidArgument,
                "one of encrypted_card_data, issuer_push_receipt or push_session_id is required")
        }
    }

    /// Asks the issuer whether it lets this card into this wallet. Nil when it agrees — or cannot answer in time:
    /// the TSP's own checks then stand, and the issuer (or the stand-in) decides at digitization.
    private func issuerEligibility(
        _ card: CardData, issuer: IssuerRecord, request: TspV1.CheckEligibilityRequest, log: Logger
    ) async -> EligibilityRules.Ineligible? {
        let answer: IssuerV1.CardEligibilityResponse
        do {
            var question = IssuerV1.CardEligibilityRequest()
            question.encryptedCardData = try encrypt(card, to: issuer)
            question.inputMethod = request.eligibilityData?.inputMethod ?? .unspecified
            question.walletAccountID = request.walletAccountID
            answer = try await issuers.decisions(for: issuer).checkCardEligibility(
                question, options: .answeringInTime(atMost: configuration.issuerDeadline))
        } catch let error as RPCError where DigitizationOutcome.refusals.contains(error.code) && !Task.isCancelled {
            // Reached, and refusing the question (the card data is not for it, the request is wrong for it): the
            // TSP's own checks do not stand in for an issuer that answered.
            let code = error.code.protoValueName ?? String(error.code.rawValue)
            log.warning("issuer refused the eligibility check", ["issuer": issuer.id, "code": code])
            // Masked as Digitize masks the issuer's words: this answer goes back in a response body, which nothing
            // else masks, to a wallet that shows it.
            return EligibilityRules.Ineligible(
                reason: .issuerDeclined,
                message: "the issuer refused the eligibility check (\(code)): \(Self.peerText(error.message))")
        } catch {
            // Cancelled because the caller gave up, the issuer is not to blame: the caller says so.
            guard !Task.isCancelled else { return nil }
            log.warning(
                "issuer did not answer eligibility; the TSP's checks stand",
                ["issuer": issuer.id, "error": String(describing: error)])
            return nil
        }
        guard !answer.eligible else { return nil }
        let why =
            answer.reason.isEmpty
            ? "the card issuer does not allow this card in this wallet" : Self.peerText(answer.reason)
        log.info("issuer declined eligibility", ["issuer": issuer.id, "last4": card.last4, "reason": why])
        return EligibilityRules.Ineligible(reason: .issuerDeclined, message: why)
    }

    /// An issuer's words as the wallet is given them: card numbers masked, cut to 500 characters (an answer is
    /// shown in a wallet's screen and kept with nothing else; a 4 MiB reason was passed on whole).
    static func peerText(_ text: String) -> String {
        let masked = maskPAN(text)
        guard masked.count > 500 else { return masked }
        return String(masked.prefix(500)) + "…"
    }

    /// Card data re-encrypted as a JWE to the issuer's registered key.
    func encrypt(_ card: CardData, to issuer: IssuerRecord) throws -> CardV1.EncryptedCardData {
        let key = try RSAPublicKey(pem: issuer.encryptionKeyPEM)
        return CardV1.EncryptedCardData(jwe: try JWE.encrypt(card, to: key, kid: key.kid), publicKeyIdentifier: key.kid)
    }
}

extension CardData {
    /// The last four digits of the account number, safe to log.
    var last4: String { String(accountNumber.suffix(4)) }
}
