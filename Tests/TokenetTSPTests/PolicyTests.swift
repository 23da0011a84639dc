import Foundation
import Testing
import TokenetCard
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
        #expect(EligibilityRules.reason(for: .malformedExpiry) == .cardExpired)
    }

    @Test func decisionsMapToTokenStates() {
        #expect(DigitizationOutcome.issuer(.init(decision: .approved))?.state == .active)
        #expect(DigitizationOutcome.issuer(.init(decision: .declined))?.state == .deactivated)
        #expect(DigitizationOutcome.issuer(.init(decision: .requireAdditionalAuthentication))?.state == .inactive)
        #expect(DigitizationOutcome.issuer(.init()) == nil)
        #expect(DigitizationOutcome.standIn(.approve, issuerProblem: "down").decidedBy == "stand-in")
    }
}

extension CardV1.WalletRiskData {
    init(_ account: UInt32, _ device: UInt32) {
        self.init(accountScore: account, deviceScore: device, recommendation: .approve)
    }
}
