import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// Suspend, resume and delete through the services, by each initiator, with the notifications they publish.
@Suite struct LifecycleTests {
    static let wallet1 = PeerIdentity(role: .wallet, nodeID: "wallet-1")
    static let wallet2 = PeerIdentity(role: .wallet, nodeID: "wallet-2")
    static let issuer1 = PeerIdentity(role: .issuer, nodeID: "issuer-1")
    static let issuer2 = PeerIdentity(role: .issuer, nodeID: "issuer-2")
    static let operator1 = PeerIdentity(role: .operator, nodeID: "op-1")
    static let bothQueues = ["wallet/wallet-1", "issuer/issuer-1"]

    static func lifecycle(_ tsp: TSPHarness, as peer: PeerIdentity) -> TspV1.TokenLifecycle.Client {
        TspV1.TokenLifecycle.Client(TSPHarness.connect(tsp.router, as: peer))
    }

    /// An ACTIVE Visa token digitized by wallet-1 for issuer bank-a (registered by issuer-1).
    static func activeToken(_ tsp: TSPHarness) async throws -> String {
        let response = try await tsp.digitize(try await tsp.eligibleVisa())
        try #require(response.tokenState == .active && response.stateVersion == 2)
        return response.digitalCardID
    }

    static func change(_ id: String, _ action: TspV1.LifecycleAction, _ reason: String = "USER_REQUEST")
        -> TspV1.ChangeTokenStateRequest
    {
        TspV1.ChangeTokenStateRequest(digitalCardID: id, action: action, reasonCode: reason)
    }

    @Test func walletSuspendsResumesAndDeletesItsTokenAndEveryPartyIsNotified() async throws {
        let tsp = try TSPHarness.make()
        let id = try await Self.activeToken(tsp)
        let wallet = Self.lifecycle(tsp, as: Self.wallet1)

        // Made INACTIVE (version 1), then approved ACTIVE (2): each change of state is one version more.
        let suspended = try await wallet.changeTokenState(Self.change(id, .suspend))
        #expect(suspended.previousState == .active)
        #expect(suspended.tokenState == .suspended && suspended.stateVersion == 3)
        let resumed = try await wallet.changeTokenState(Self.change(id, .resume))
        #expect(resumed.tokenState == .active && resumed.stateVersion == 4)
        let deleted = try await wallet.changeTokenState(Self.change(id, .delete))
        #expect(deleted.tokenState == .deactivated && deleted.stateVersion == 5)

        let published = tsp.published.of("CARD_STATE")
        #expect(published.count == 3)
        #expect(published.allSatisfy { $0.queues == Self.bothQueues })
        let expected: [(CardV1.TokenState, UInt64)] = [(.suspended, 3), (.active, 4), (.deactivated, 5)]
        for (publish, (state, version)) in zip(published, expected) {
            let message = publish.notification
            #expect(message.sender == "CPS")
            #expect(message.topic == "D1_NOTIFICATION")
            #expect(message.cardID == id)
            #expect(
                message.body
                    == .cardState(
                        .init(
                            tokenState: state, reasonCode: "USER_REQUEST", initiator: "wallet", stateVersion: version,
                            suspensions: state == .suspended ? [.init(party: "wallet", reasonCode: "USER_REQUEST")] : []
                        )
                    ))
        }
        let history = try await tsp.control.tokenHistory(.init(digitalCardID: id))
        #expect(history.events.map(\.toState) == [.inactive, .active, .suspended, .active, .deactivated])
        #expect(history.events.suffix(3).allSatisfy { $0.actor == "wallet:wallet-1" && $0.reason == "USER_REQUEST" })
    }

    @Test func invalidTransitionsAreRefusedWithTheStateMachinesMessageAndPublishNothing() async throws {
        let tsp = try TSPHarness.make()
        let id = try await Self.activeToken(tsp)
        let wallet = Self.lifecycle(tsp, as: Self.wallet1)
        await expectRPCError(.failedPrecondition, "only a SUSPENDED token can be resumed") {
            try await wallet.changeTokenState(Self.change(id, .resume))
        }
        _ = try await wallet.changeTokenState(Self.change(id, .suspend))
        await expectRPCError(
            .failedPrecondition, "token \"\(id)\" is already SUSPENDED (by the wallet, USER_REQUEST)"
        ) {
            try await wallet.changeTokenState(Self.change(id, .suspend))
        }
        let deleted = try await wallet.changeTokenState(Self.change(id, .delete))
        for action in [TspV1.LifecycleAction.suspend, .resume] {
            await expectRPCError(.failedPrecondition, "a deactivated token never changes state again") {
                try await wallet.changeTokenState(Self.change(id, action))
            }
        }
        // A second delete finds what it asked for: answered with the token as it is, announced to no one.
        let again = try await wallet.changeTokenState(Self.change(id, .delete))
        #expect(again.tokenState == .deactivated && again.stateVersion == deleted.stateVersion)
        #expect(tsp.published.of("CARD_STATE").count == 2)
        let token = try await tsp.control.listTokens(.init()).tokens.first
        #expect(token?.state == .deactivated)
        // The listing names the wallet node that holds the token, as two wallets' names may be the same.
        #expect(token?.walletNodeID == "wallet-1")
    }

    @Test func badRequestsAndOtherWalletsAreRefused() async throws {
        let tsp = try TSPHarness.make()
        let id = try await Self.activeToken(tsp)
        let wallet = Self.lifecycle(tsp, as: Self.wallet1)
        await expectRPCError(.permissionDenied, "not digitized through this wallet") {
            try await Self.lifecycle(tsp, as: Self.wallet2).changeTokenState(Self.change(id, .suspend))
        }
        await expectRPCError(.invalidArgument, "reason_code is required") {
            try await wallet.changeTokenState(Self.change(id, .suspend, ""))
        }
        await expectRPCError(.invalidArgument, "reason_code must be") {
            try await wallet.changeTokenState(Self.change(id, .suspend, "lost card"))
        }
        // A card number would be kept in the token's history and told to every party.
        for code in ["4761000010000009", "X4761_0000_1000_0009"] {
            await expectRPCError(.invalidArgument, "reason_code holds what looks like a card number") {
                try await wallet.changeTokenState(Self.change(id, .suspend, code))
            }
        }
        #expect(tsp.published.of("CARD_STATE").isEmpty)
        await expectRPCError(.invalidArgument, "action must be") {
            try await wallet.changeTokenState(Self.change(id, .unspecified))
        }
        await expectRPCError(.notFound, "no token") {
            try await wallet.changeTokenState(Self.change("DNITHE000000000000000000", .suspend))
        }
        await expectRPCError(.permissionDenied, "role issuer may not call") {
            try await Self.lifecycle(tsp, as: Self.issuer1).changeTokenState(Self.change(id, .suspend))
        }
        #expect(tsp.published.publishes.isEmpty)
        #expect(try await tsp.control.listTokens(.init()).tokens.first?.state == .active)
    }

    @Test func operatorActsForTheTSP() async throws {
        let tsp = try TSPHarness.make()
        let id = try await Self.activeToken(tsp)
        let response = try await Self.lifecycle(tsp, as: Self.operator1).changeTokenState(
            Self.change(id, .suspend, "FRAUD_SUSPECTED"))
        #expect(response.tokenState == .suspended)
        let publish = try #require(tsp.published.of("CARD_STATE").first)
        #expect(publish.queues == Self.bothQueues)
        #expect(
            publish.notification.body
                == .cardState(
                    .init(
                        tokenState: .suspended, reasonCode: "FRAUD_SUSPECTED", initiator: "tsp", stateVersion: 3,
                        suspensions: [.init(party: "tsp", reasonCode: "FRAUD_SUSPECTED")])))
        let history = try await tsp.control.tokenHistory(.init(digitalCardID: id))
        #expect(history.events.last?.actor == "tsp")
    }

    @Test func aChangeStandsWhenTheBrokerFails() async throws {
        let tsp = try TSPHarness.make()
        let id = try await Self.activeToken(tsp)
        tsp.published.fail(true)
        let response = try await Self.lifecycle(tsp, as: Self.wallet1).changeTokenState(Self.change(id, .suspend))
        #expect(response.tokenState == .suspended)
        #expect(try await tsp.control.listTokens(.init()).tokens.first?.state == .suspended)
        #expect(tsp.logs.lines.contains { $0.contains("notification could not be published") })
    }

    @Test func issuerActsOnUpToTenTokensWithAResultPerToken() async throws {
        let tsp = try TSPHarness.make()
        let visa = try await Self.activeToken(tsp)
        let mastercard = try await tsp.digitize(try await tsp.checkEligibility(pan: TSPHarness.mastercard))
            .digitalCardID
        _ = try await Self.lifecycle(tsp, as: Self.wallet1).changeTokenState(Self.change(mastercard, .suspend))
        let issuer = Self.lifecycle(tsp, as: Self.issuer1)
        let unknown = "DNITHE999999999999999999"
        let response = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [visa, mastercard, unknown], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(response.results.map(\.digitalCardID) == [visa, mastercard, unknown])
        #expect(response.results.map(\.tokenState) == [.suspended, .suspended, .unspecified])
        // The token the wallet had suspended now holds the issuer's suspension beside it (see
        // SuspensionAuthorityTests).
        #expect(response.results.map(\.statusCode) == [0, 0, StatusCode.notFound.rawValue])
        let issuerPublishes = tsp.published.of("CARD_STATE").filter {
            if case .cardState(let body) = $0.notification.body { return body.initiator == "issuer" }
            return false
        }
        // The suspension placed beside the wallet's is told too (see SuspensionAuthorityTests).
        #expect(issuerPublishes.map(\.notification.cardID) == [visa, mastercard])

        let resumed = try await issuer.changeIssuerTokenStates(
            .init(digitalCardIds: [visa, mastercard], action: .resume, reasonCode: "CARD_FOUND"))
        #expect(resumed.results.map(\.statusCode) == [0, 0])
        // The issuer lifts its own suspensions; the wallet's keeps its token SUSPENDED.
        #expect(resumed.results.map(\.tokenState) == [.active, .suspended])
        // Each result names its token's state version, as the token's CARD_STATE does; an unknown token none.
        for result in resumed.results {
            let published = tsp.published.of("CARD_STATE").last { $0.notification.cardID == result.digitalCardID }
            guard case .cardState(let body)? = published?.notification.body else {
                Issue.record("no CARD_STATE for \(result.digitalCardID)")
                continue
            }
            #expect(result.stateVersion == body.stateVersion && result.stateVersion > 1)
        }
        #expect(response.results.last?.stateVersion == 0)
    }

    @Test func issuerBatchLimitsAndOwnership() async throws {
        let tsp = try TSPHarness.make()
        let id = try await Self.activeToken(tsp)
        let issuer = Self.lifecycle(tsp, as: Self.issuer1)
        await expectRPCError(.invalidArgument, "at most 10 tokens") {
            try await issuer.changeIssuerTokenStates(
                .init(digitalCardIds: (0..<11).map { "id-\($0)" }, action: .suspend, reasonCode: "LOST_CARD"))
        }
        await expectRPCError(.invalidArgument, "digital_card_ids is required") {
            try await issuer.changeIssuerTokenStates(.init(digitalCardIds: [], action: .suspend, reasonCode: "X"))
        }
        await expectRPCError(.invalidArgument, "digital_card_ids names \"\(id)\" more than once") {
            try await issuer.changeIssuerTokenStates(
                .init(digitalCardIds: [id, id], action: .suspend, reasonCode: "LOST_CARD"))
        }
        await expectRPCError(.failedPrecondition, "has not registered an issuer") {
            try await Self.lifecycle(tsp, as: Self.issuer2).changeIssuerTokenStates(
                .init(digitalCardIds: [id], action: .suspend, reasonCode: "LOST_CARD"))
        }
        #expect(tsp.published.publishes.isEmpty)
    }

    @Test func anotherIssuersTokenIsRefusedPerToken() async throws {
        let tsp = try TSPHarness.make()
        let id = try await Self.activeToken(tsp)
        let other = TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: Self.issuer2))
        _ = try await other.registerIssuer(
            TspV1.RegisterIssuerRequest(
                issuerID: "bank-b", displayName: "Bank B", binRanges: [TspV1.BinRange(low: "400005", high: "400005")],
                encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        let response = try await Self.lifecycle(tsp, as: Self.issuer2).changeIssuerTokenStates(
            .init(digitalCardIds: [id], action: .delete, reasonCode: "LOST_CARD"))
        #expect(response.results.first?.statusCode == StatusCode.permissionDenied.rawValue)
        // The other issuer does not learn the token's state (it reported ACTIVE).
        #expect(response.results.first?.tokenState == .unspecified)
    }
}
