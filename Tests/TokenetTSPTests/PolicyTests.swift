import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetWire

@testable import TokenetTSP

/// The pure rules: stand-in, T&C choice, BIN ranges, rejection reasons and decision outcomes.
@Suite struct PolicyTests {
    @Test func standInApprovesOnlyLowRiskWithApproval() {
        let policy = StandInPolicy()
        #expect(policy.decide(risk: .init(accountScore: 2, deviceScore: 1, recommendation: .approve)) == .approve)
        let declines: [CardV1.WalletRiskData?] = [
            nil,
            .init(accountScore: 3, deviceScore: 1, recommendation: .approve),
            .init(accountScore: 1, deviceScore: 3, recommendation: .approve),
            .init(accountScore: 1, deviceScore: 1, recommendation: .requireAuthentication),
            .init(accountScore: 0, deviceScore: 0, recommendation: .approve),
        ]
        for risk in declines {
            guard case .decline = policy.decide(risk: risk) else {
                Issue.record("expected a stand-in decline for \(String(describing: risk))")
                continue
            }
        }
        guard case .decline = StandInPolicy.alwaysDecline.decide(risk: .init(1, 1)) else {
            Issue.record("alwaysDecline approved")
            return
        }
    }

    @Test func termsCatalogChoosesLanguage() {
        #expect(TermsCatalog.sandbox.terms(for: "es_AR")?.language == "es")
        #expect(TermsCatalog.sandbox.terms(for: "de-DE")?.language == "en")
        #expect(TermsCatalog.none.terms(for: "en") == nil)
        let spanishOnly = TermsCatalog(id: "t", version: "1", texts: ["es": .init("hola")])
        #expect(spanishOnly.terms(for: "fr")?.language == "es")
    }

    @Test func binRangesMatchPrefixes() throws {
        let range = try IssuerBINRange(low: "400000", high: "400099")
        #expect(range.contains(try PAN("4000056655665556")))
        #expect(!range.contains(try PAN("4111111111111111")))
        #expect(range.overlaps(try IssuerBINRange(low: "40", high: "40")))
        #expect(!range.overlaps(try IssuerBINRange(low: "400100", high: "400199")))
    }

    @Test func rejectionsMapToReasons() {
        #expect(EligibilityRules.reason(for: .luhnCheckFailed) == .invalidCardNumber)
        #expect(EligibilityRules.reason(for: .invalidLength(5)) == .invalidCardNumber)
        #expect(EligibilityRules.reason(for: .unsupportedScheme) == .unsupportedScheme)
        #expect(EligibilityRules.reason(for: .malformedExpiry) == .invalidExpiry)
        #expect(EligibilityRules.reason(for: .malformedExpirationDate) == .invalidExpiry)
        #expect(EligibilityRules.reason(for: .invalidExpiryMonth(13)) == .invalidExpiry)
        #expect(EligibilityRules.reason(for: .expired(CardExpiry(containing: .distantPast))) == .cardExpired)
    }

    @Test func decisionsMapToTokenStates() {
        #expect(DigitizationOutcome.issuer(.init(decision: .approved))?.state == .active)
        #expect(DigitizationOutcome.issuer(.init(decision: .declined))?.state == .deactivated)
        let sms = CardV1.IdvMethod(id: "otp-sms", type: .otpSms, maskedValue: "***-1234")
        #expect(
            DigitizationOutcome.issuer(.init(decision: .requireAdditionalAuthentication, idvMethods: [sms]))?.state
                == .inactive)
        #expect(DigitizationOutcome.issuer(.init(decision: .requireAdditionalAuthentication)) == nil)
        #expect(DigitizationOutcome.issuer(.init()) == nil)
        #expect(DigitizationOutcome.standIn(.approve, issuerProblem: "down").decidedBy == "stand-in")
    }
}

extension CardV1.WalletRiskData {
    init(_ account: UInt32, _ device: UInt32) {
        self.init(accountScore: account, deviceScore: device, recommendation: .approve)
    }
}

/// The policy file in the data directory.
@Suite struct PolicyFileTests {
    func load(_ json: String?) throws -> TSPConfiguration {
        let directory = try TSPHarness.temporaryDirectory()
        if let json {
            try Data(json.utf8).write(to: URL(fileURLWithPath: directory + "/" + TSPConfiguration.fileName))
        }
        return try TSPConfiguration.load(dataDirectory: directory)
    }

    @Test func absentFileMeansDefaults() throws {
        let configuration = try load(nil)
        #expect(configuration.issuerDeadline == .seconds(5))
        #expect(configuration.standIn == StandInPolicy(maximumApprovedScore: 2))
        #expect(configuration.terms == .sandbox)
        #expect(configuration.eligibilityReceiptTTL == .seconds(600))
        #expect(configuration.pushReceiptTTL == .seconds(900))
    }

    @Test func fileChangesThePolicy() throws {
        let configuration = try load(
            #"{"issuer_deadline_ms": 250, "stand_in_max_score": 0, "terms_required": false, "push_session_ttl_s": 60}"#)
        #expect(configuration.issuerDeadline == .milliseconds(250))
        #expect(configuration.standIn == .alwaysDecline)
        #expect(configuration.terms == .none)
        #expect(configuration.pushSessionTTL == .seconds(60))
    }

    @Test func fileChangesTheOneTimeCodes() throws {
        let configuration = try load(#"{"otp_validity_ms": 1, "otp_max_attempts": 5, "otp_max_resends": 0}"#)
        #expect(configuration.otpValidity == .milliseconds(1))
        #expect(configuration.otpMaxAttempts == 5 && configuration.otpMaxResends == 0)
    }

    @Test func fileChangesTheStepUpWindow() throws {
        #expect(TSPConfiguration().stepUpValidity == .seconds(30 * 86_400))
        #expect(try load(#"{"step_up_ttl_s": 3600}"#).stepUpValidity == .seconds(3600))
    }

    @Test func fileChangesTheAuthnLifetime() throws {
        #expect(TSPConfiguration().authnLifetime == .seconds(300))
        #expect(try load(#"{"authn_ttl_s": 5}"#).authnLifetime == .seconds(5))
    }

    @Test(arguments: [
        (#"{"issuer_deadline": 5}"#, "unknown key \"issuer_deadline\""),
        (#"{"step_up_ttl_s": 59}"#, "from 60 to 31536000"),
        (#"{"authn_ttl_s": 0}"#, "from 1 to 86400"),
        (#"{"issuer_deadline_ms": "5"}"#, "whole number"),
        (#"{"stand_in_max_score": 9}"#, "from 0 to 5"),
        (#"{"terms_required": 1}"#, "true or false"),
        (#"{"otp_validity_ms": 0}"#, "from 1 to 86400000"),
        (#"{"otp_max_attempts": 11}"#, "from 1 to 10"),
        ("[1]", "one JSON object"),
        // In words, not Swift's "Expected to decode Dictionary<String, Any> but found an array instead."
        ("[]", "must hold one JSON object of policy settings: it holds an array, not a JSON object"),
        ("{", "one JSON object"),
        // Foundation's decoder keeps one of two values for a key, and accepts a trailing comma.
        (
            #"{"stand_in_max_score": 0, "otp_max_attempts": 5, "stand_in_max_score": 2}"#,
            #"tsp-policy.json: "stand_in_max_score" appears twice; give each key once"#
        ),
        (#"{"otp_max_attempts": 5,}"#, "tsp-policy.json: not valid JSON: trailing comma before '}'"),
    ])
    func badFilesAreConfigurationErrors(json: String, message: String) throws {
        #expect {
            try load(json)
        } throws: { error in
            guard let error = error as? NodeError else { return false }
            return error.code == .config && error.description.contains(message)
        }
    }
}
