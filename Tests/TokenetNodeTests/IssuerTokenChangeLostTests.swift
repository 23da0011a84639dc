import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// `tokenet issuer suspend-tokens|resume-tokens|delete-tokens` whose own call to the issuer is lost after it was
/// sent: the issuer may have passed the change on to the TSP, which may have made it. The bare DEADLINE_EXCEEDED (or
/// "connection lost") read as a change that did not happen; the message says it may have, and how to find out. The
/// issuer's own account of its call to the TSP is left as it is: it says already what happened there.
@Suite(.timeLimit(.minutes(3))) struct IssuerTokenChangeLostTests {
    @Test(arguments: ["suspend", "resume", "delete"])
    func aChangeWhoseAnswerIsLostMayHaveReachedTheTSP(word: String) async throws {
        var router = RPCRouter()
        router.unary(IssuerV1.IssuerCardCare.changeTokenStates) { (_, _) async throws in
            try await Task.sleep(for: .seconds(600))
            return IssuerV1.IssuerChangeTokenStatesResponse()
        }
        let result = try await run(router, word: word, deadline: "8s")
        #expect(result.status == 64 + StatusCode.deadlineExceeded.rawValue, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "; the change may have reached the TSP and been made there: send the same command again, which "
                    + "answers each token's state, or see the states with tokenet tsp tokens"),
            "\(result.stderr)")
    }

    @Test func theIssuersOwnAccountOfItsTSPCallGetsNoGuess() async throws {
        var router = RPCRouter()
        router.unary(IssuerV1.IssuerCardCare.changeTokenStates) { (_, _) async throws in
            throw RPCError(
                .deadlineExceeded,
                "the TSP could not be reached, so no token was changed: the deadline passed while connecting; try "
                    + "again once the TSP can be reached")
        }
        let result = try await run(router, word: "suspend", deadline: "20s")
        #expect(result.status == 64 + StatusCode.deadlineExceeded.rawValue, "\(result.stderr)")
        #expect(result.stderr.contains("so no token was changed"), "\(result.stderr)")
        #expect(!result.stderr.contains("may have reached the TSP"), "\(result.stderr)")
    }

    /// `issuer activate-token` and `push-card` whose answer does not come in time: the issuer may have had the TSP
    /// activate the token, or made the push receipt, and the message says so and that repeating is safe.
    @Test func anActivationOrAPushWhoseAnswerIsLostMayHaveBeenDone() async throws {
        var router = RPCRouter()
        router.unary(IssuerV1.IssuerCallCentre.activateToken) { (_, _) async throws in
            try await Task.sleep(for: .seconds(600))
            return IssuerV1.CallCentreActivateResponse()
        }
        router.unary(IssuerV1.IssuerControl.pushCard) { (_, _) async throws in
            try await Task.sleep(for: .seconds(600))
            return IssuerV1.PushCardResponse()
        }
        for (arguments, hint) in [
            (
                ["activate-token", "DNITHE1"],
                "; the issuer may have had the TSP activate the token all the same: send the same command again, "
                    + "which says whether the token is ACTIVE"
            ),
            (
                ["push-card", "card-mc-approve", "--mode", "receipt"],
                "; the issuer may have pushed the card all the same; pushing it again is safe (a receipt or session "
                    + "that is not used expires)"
            ),
        ] {
            let result = try await run(router, arguments, deadline: "8s")
            #expect(result.status == 64 + StatusCode.deadlineExceeded.rawValue, "\(result.stderr)")
            #expect(result.stderr.contains(hint), "\(result.stderr)")
        }
    }

    private func run(_ router: RPCRouter, word: String, deadline: String) async throws -> ProcessResult {
        try await run(
            router, ["\(word)-tokens", "--card", "card-visa-approve", "--reason", "LOST_CARD"], deadline: deadline)
    }

    private func run(_ router: RPCRouter, _ arguments: [String], deadline: String) async throws -> ProcessResult {
        let pki = DevelopmentPKI.shared
        return try await runTokenet(
            servedOverTLSBy: router, certificate: pki.path("issuer.pem"), key: pki.path("issuer.key")
        ) {
            ["issuer", arguments[0], $0] + arguments.dropFirst() + [
                "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
                "--deadline", deadline,
            ]
        }
    }
}
