import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// Card renewal: the issuer changes a card's number or expiry and tells the TSP about each of its tokens.
extension CardCareTests {
    @Test func renewalUpdatesTheCardAndTellsTheTSPAboutItsTokens() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE2", outcome: .declined(reason: "no"))
        // Grouped as printed on the card, as an operator types it.
        let response = try await care.renewCard(
            .init(cardID: Cards.visaApprove.0, pan: "4761 0000-1000 0017", expiry: "12/32"))
        #expect(response.renewedDigitalCardIds == ["DNITHE1"])
        #expect(response.maskedPAN.hasSuffix("0017"))
        #expect(response.expiry == "12/32")
        let renewals = tsp.state.withLock { $0.renewals }
        #expect(renewals.map(\.0.digitalCardIds) == [["DNITHE1"]])
        #expect(renewals.map(\.0.previousCardID) == [Cards.visaApprove.0])
        #expect(try renewals.first?.1.pan().last4 == "0017")
        let stored = try #require(try party.store.card(id: Cards.visaApprove.0))
        #expect(stored.pan.last4 == "0017")
        #expect(stored.expiry.description == "12/32")
        #expect(!sink.lines.joined().contains("4761000010000017"))
    }

    @Test func renewalRefusals() async throws {
        let cases: [(IssuerV1.IssuerRenewCardRequest, StatusCode)] = [
            (.init(cardID: "", pan: "4761000010000017"), .invalidArgument),
            (.init(cardID: Cards.visaApprove.0), .invalidArgument),
            (.init(cardID: "card-nope", expiry: "12/32"), .notFound),
            (.init(cardID: Cards.visaApprove.0, pan: "4761000010000018"), .invalidArgument),
            (.init(cardID: Cards.visaApprove.0, pan: "4761/0000/1000/0017"), .invalidArgument),
            // Hyphens at an end or doubled were dropped with the others and the number taken.
            (.init(cardID: Cards.visaApprove.0, pan: "-4761000010000017-"), .invalidArgument),
            (.init(cardID: Cards.visaApprove.0, pan: "4761--0000--1000--0017"), .invalidArgument),
            (.init(cardID: Cards.visaApprove.0, pan: "5400000010000037"), .failedPrecondition),
        ]
        for (request, code) in cases {
            let error = await Support.rpcError { _ = try await care.renewCard(request) }
            #expect(error?.code == code, "\(request)")
        }
        let hyphens = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761--0000--1000--0017"))
        }
        #expect(
            hyphens?.message
                == "the renewed card is not valid: the card number may hold only the digits 0-9, with spaces or one "
                + "hyphen between groups")
        #expect(tsp.state.withLock { $0.renewals.isEmpty })
    }

    /// A renewed number must pass the fixture loader's checks: inside the issuer's BIN ranges, a valid Luhn check
    /// digit, and not carried by another card (checked before the TSP is told, and again when the store writes).
    @Test func aRenewedNumberMustBeTheIssuersAndUnused() async throws {
        try decide(Cards.visaStepUp.0, digitalCardID: "DNITHE1", outcome: .approved)
        _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        let cases: [(String, StatusCode, String)] = [
            ("4761000010000017", .alreadyExists, "ending 0017 is already used by card \(Cards.visaApprove.0)"),
            (Cards.visaSession.1, .alreadyExists, "ending 0023 is already used by card \(Cards.visaSession.0)"),
            ("4111111111111111", .invalidArgument, "ending 1111 is outside the issuer's BIN ranges"),
            ("4761000010000018", .invalidArgument, "not valid"),
        ]
        for (pan, code, message) in cases {
            let error = await Support.rpcError {
                _ = try await care.renewCard(.init(cardID: Cards.visaStepUp.0, pan: pan))
            }
            #expect(error?.code == code, "\(pan)")
            #expect(error?.message.contains(message) == true, "\(String(describing: error))")
            #expect(error?.message.contains(pan) == false, "the full number must not appear")
        }
        #expect(try party.store.card(id: Cards.visaStepUp.0)?.pan.digits == Cards.visaStepUp.1)
        #expect(tsp.state.withLock { $0.renewals.count } == 0)

        // The store's reservation is where the checks are made, in the transaction that reserves the number.
        #expect {
            try party.store.reserveRenewal(
                id: Cards.visaStepUp.0, pan: try PAN("4761000010000017"), expiry: try CardExpiry(parsing: "12/32"))
        } throws: { ($0 as? IssuerError)?.code == .alreadyExists }
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaStepUp.0) == nil)
        #expect(try party.store.card(id: Cards.visaStepUp.0)?.pan.digits == Cards.visaStepUp.1)
    }

    /// The test clock is 21 September 2026: a card renewed to 08/26 would already have expired, so nothing is
    /// stored or sent to the TSP; 09/26 is good to the end of the month.
    @Test func aRenewalToAnExpiryThatHasPassedIsRefused() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        let before = try #require(try party.store.card(id: Cards.visaApprove.0))
        let error = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, expiry: "08/26"))
        }
        #expect(error?.code == .invalidArgument)
        #expect(
            error?.message.contains("would have expired at the end of 08/26") == true, "\(String(describing: error))")
        #expect(tsp.state.withLock { $0.renewals.isEmpty })
        #expect(try party.store.card(id: Cards.visaApprove.0)?.expiry == before.expiry)

        let response = try await care.renewCard(.init(cardID: Cards.visaApprove.0, expiry: "09/26"))
        #expect(response.expiry == "09/26")
    }

    /// A renewal to the card's own number and expiry changes nothing, so it is refused before the TSP hears of it.
    @Test func aRenewalThatChangesNothingIsRefused() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        let card = try #require(try party.store.card(id: Cards.visaApprove.0))
        let error = await Support.rpcError {
            _ = try await care.renewCard(
                .init(cardID: Cards.visaApprove.0, pan: Cards.visaApprove.1, expiry: card.expiry.description))
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("already has the number ending 0009") == true, "\(String(describing: error))")
        #expect(tsp.state.withLock { $0.renewals.isEmpty })
    }

    /// A number a card gave up in a renewal is not given to another card: a token the TSP's stand-in made from it
    /// is still the first card's. The card itself may go back to it.
    @Test func aNumberAnotherCardGaveUpIsNotGivenToAnother() async throws {
        _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        let refused = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaStepUp.0, pan: Cards.visaApprove.1))
        }
        #expect(refused?.code == .alreadyExists, "\(String(describing: refused))")
        #expect(
            refused?.message.contains(
                "the card number ending 0009 was card \(Cards.visaApprove.0)'s before a renewal; a renewed card needs a "
                    + "number no other card has had") == true, "\(String(describing: refused))")
        let back = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: Cards.visaApprove.1))
        #expect(back.maskedPAN.hasSuffix("0009"), "\(back)")
    }

    /// Two cards renewed to one new number at once: the first reserves the number in the issuer's store before the
    /// TSP hears of it, so the second is refused before it reaches the TSP, which only ever holds the number for the
    /// card the issuer gives it to. A second renewal of the card under way is turned away too.
    @Test func twoRenewalsRacingForOneNumberReachTheTSPOnce() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        try decide(Cards.visaStepUp.0, digitalCardID: "DNITHE2", outcome: .approved)
        let gate = Gate()
        tsp.state.withLock { $0.holdNextRenewal = gate }
        let first = Task { [care] in
            try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        try await gate.arrived(1)

        let second = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaStepUp.0, pan: "4761000010000017"))
        }
        #expect(second?.code == .alreadyExists, "\(String(describing: second))")
        #expect(
            second?.message.contains(
                "ending 0017 is held by card \(Cards.visaApprove.0)'s renewal, which waits for the TSP's answer")
                == true,
            "\(String(describing: second))")
        let again = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        #expect(again?.code == .aborted, "\(String(describing: again))")
        gate.open()

        #expect(try await first.value.renewedDigitalCardIds == ["DNITHE1"])
        #expect(tsp.state.withLock { $0.renewals.map(\.0.previousCardID) } == [Cards.visaApprove.0])
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(try party.store.card(id: Cards.visaStepUp.0)?.pan.digits == Cards.visaStepUp.1)
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
    }

    /// The number is reserved while the TSP decides; when the TSP refuses, the card keeps its number and expiry and
    /// the number is free again for another card.
    @Test func aRenewalTheTSPRefusesGivesTheNumberBack() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        try decide(Cards.visaStepUp.0, digitalCardID: "DNITHE2", outcome: .approved)
        let before = try #require(try party.store.card(id: Cards.visaApprove.0))
        let gate = Gate()
        tsp.state.withLock {
            $0.holdNextRenewal = gate
            $0.refusal = RPCError(.failedPrecondition, "token \"DNITHE1\" is not this issuer's")
        }
        let first = Task { [care] in
            await Support.rpcError {
                _ = try await care.renewCard(
                    .init(cardID: Cards.visaApprove.0, pan: "4761000010000017", expiry: "12/32"))
            }
        }
        try await gate.arrived(1)
        #expect(
            try party.store.pendingRenewal(ofCard: Cards.visaApprove.0)
                == PendingRenewal(pan: try PAN("4761000010000017"), expiry: try CardExpiry(parsing: "12/32")))
        let taken = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaStepUp.0, pan: "4761000010000017"))
        }
        #expect(taken?.code == .alreadyExists, "\(String(describing: taken))")
        gate.open()

        let refused = await first.value
        #expect(refused?.code == .failedPrecondition, "\(String(describing: refused))")
        #expect(refused?.message.contains("keeps its number and expiry: token \"DNITHE1\"") == true)
        let after = try #require(try party.store.card(id: Cards.visaApprove.0))
        #expect(after.pan == before.pan && after.expiry == before.expiry)
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
        #expect(tsp.state.withLock { $0.renewals.isEmpty })

        tsp.state.withLock { $0.refusal = nil }
        _ = try await care.renewCard(.init(cardID: Cards.visaStepUp.0, pan: "4761000010000017"))
        #expect(try party.store.card(id: Cards.visaStepUp.0)?.pan.last4 == "0017")
        #expect(!sink.lines.joined().contains("4761000010000017"))
    }

    /// A renewal whose TSP answer is lost may have moved the tokens: the issuer keeps the number reserved (no other
    /// card can take it, and the card takes no other number) until the same renewal, repeated, completes it.
    @Test func aRenewalWhoseAnswerIsLostStaysPendingUntilRepeated() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        tsp.state.withLock { $0.lostAnswers = 1 }
        let lost = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        #expect(lost?.code == .unavailable)
        #expect(
            lost?.message.contains("ending 0017, 12/29 stays pending: repeat it") == true, "\(String(describing: lost))"
        )
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.digits == Cards.visaApprove.1)
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(sink.lines.contains { $0.contains("renewal pending") && $0.contains("0017") })

        let taken = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaStepUp.0, pan: "4761000010000017"))
        }
        #expect(taken?.code == .alreadyExists)
        let other = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000025"))
        }
        #expect(other?.code == .failedPrecondition)
        #expect(other?.message.contains("renewal to the number ending 0017, 12/29, waiting") == true)

        // Repeated, the renewal asks the TSP first: it had applied it, so the card takes the number without a resend.
        let repeated = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        #expect(repeated.renewedDigitalCardIds == ["DNITHE1"])
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
        #expect(tsp.state.withLock { ($0.renewals.count, $0.fundingAsks) } == (1, 1))
    }

    /// Leaves a renewal of card-visa-approve to the number ending 0017 pending: its answer lost after the TSP applied
    /// it (`applied`), or lost on the way so that the TSP never saw it.
    func pendingRenewal(applied: Bool) async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        tsp.state.withLock { state in
            if applied { state.lostAnswers = 1 } else { state.droppedRenewals = 1 }
        }
        let lost = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        #expect(lost?.code == .unavailable)
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0)?.pan.last4 == "0017")
    }

    /// A pending renewal the TSP never applied can be abandoned: the issuer asks the TSP first, then gives the
    /// number back, and the card keeps its own.
    @Test func abandoningARenewalTheTSPNeverAppliedGivesTheNumberBack() async throws {
        try await pendingRenewal(applied: false)
        let abandoned = try await care.renewCard(.init(cardID: Cards.visaApprove.0, abandon: true))
        #expect(abandoned.abandoned)
        #expect(abandoned.maskedPAN == "************0009" && abandoned.expiry == "12/29")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.digits == Cards.visaApprove.1)
        #expect(tsp.state.withLock { ($0.renewals.count, $0.fundingAsks) } == (0, 1))
        #expect(sink.lines.contains { $0.contains("renewal abandoned") && $0.contains("0017") })
        #expect(!sink.lines.joined().contains("4761000010000017"))

        _ = try await care.renewCard(.init(cardID: Cards.visaStepUp.0, pan: "4761000010000017"))
        #expect(try party.store.card(id: Cards.visaStepUp.0)?.pan.last4 == "0017")
    }

    /// Abandoning a renewal the TSP applied (only its answer was lost) would leave the tokens on a number the card
    /// no longer has, so the issuer completes it instead and says so.
    @Test func abandoningARenewalTheTSPAppliedCompletesIt() async throws {
        try await pendingRenewal(applied: true)
        let answer = try await care.renewCard(.init(cardID: Cards.visaApprove.0, abandon: true))
        #expect(!answer.abandoned)
        #expect(answer.maskedPAN == "************0017" && answer.renewedDigitalCardIds == ["DNITHE1"])
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
        #expect(tsp.state.withLock { ($0.renewals.count, $0.fundingAsks) } == (1, 1))
    }

    /// While the TSP cannot say what it holds, abandoning is refused and the renewal stays pending; once it can, the
    /// abandon goes through.
    @Test func aRenewalIsNotAbandonedWhileTheTSPCannotBeAsked() async throws {
        try await pendingRenewal(applied: false)
        tsp.state.withLock { $0.fundingFailure = RPCError(.unavailable, "the TSP is out of reach") }
        let refused = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, abandon: true))
        }
        #expect(refused?.code == .unavailable)
        #expect(
            refused?.message.contains("the renewal to the number ending 0017, 12/29 stays pending: abandon or repeat")
                == true, "\(String(describing: refused))")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0)?.pan.last4 == "0017")

        tsp.state.withLock { $0.fundingFailure = nil }
        #expect(try await care.renewCard(.init(cardID: Cards.visaApprove.0, abandon: true)).abandoned)
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
    }

    /// A repeated renewal the TSP never applied is sent again (after asking), and completes.
    @Test func aRepeatedRenewalTheTSPNeverAppliedIsSentAgain() async throws {
        try await pendingRenewal(applied: false)
        let repeated = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        #expect(repeated.renewedDigitalCardIds == ["DNITHE1"] && !repeated.abandoned)
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(tsp.state.withLock { ($0.renewals.count, $0.fundingAsks) } == (1, 1))
    }

    @Test func abandonRefusals() async throws {
        let nothing = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, abandon: true))
        }
        #expect(nothing?.code == .failedPrecondition)
        #expect(nothing?.message.contains("has no pending renewal to abandon") == true)
        let withNumber = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017", abandon: true))
        }
        #expect(withNumber?.code == .invalidArgument)
        let unknown = await Support.rpcError { _ = try await care.renewCard(.init(cardID: "card-x", abandon: true)) }
        #expect(unknown?.code == .notFound)
    }

    /// ListCards shows a pending renewal with its card: the reserved number masked, its expiry and since when, so an
    /// operator sees which renewals wait to be repeated (or abandoned) without reading the issuer's log.
    @Test func aPendingRenewalIsListedWithItsCard() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        let control = IssuerV1.IssuerControl.Client(Support.connect(Support.router(party), as: .operator))
        tsp.state.withLock { $0.lostAnswers = 1 }
        _ = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017", expiry: "12/32"))
        }
        let listed = try await control.listCards(.init()).cards
        let card = try #require(listed.first { $0.cardID == Cards.visaApprove.0 })
        #expect(card.maskedPAN == "************0009" && card.expiry == "12/29")
        #expect(
            card.pendingRenewal
                == IssuerV1.PendingCardRenewal(
                    maskedPAN: "************0017", expiry: "12/32",
                    sinceMs: UInt64(Support.now.timeIntervalSince1970 * 1000)))
        #expect(listed.filter { $0.pendingRenewal != nil }.count == 1)

        _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017", expiry: "12/32"))
        let after = try await control.listCards(.init()).cards
        #expect(after.allSatisfy { $0.pendingRenewal == nil })
        #expect(after.first { $0.cardID == Cards.visaApprove.0 }?.maskedPAN == "************0017")
    }

    /// Which TSP failures give a reserved number back: only refusals made before the TSP changed anything.
    @Test func aFailedRenewalIsSettledByWhatTheTSPSaid() {
        #expect(RenewalSettlement(failure: RPCError(.failedPrecondition, "")) == .release)
        #expect(RenewalSettlement(failure: RPCError(.notFound, "")) == .release)
        #expect(RenewalSettlement(failure: RPCError(.permissionDenied, "")) == .release)
        #expect(RenewalSettlement(failure: RPCError(.unavailable, "")) == .keepPending)
        // The TSP could not be reached: the renewal never left the issuer.
        let notConnected = RPCError(.unavailable, "cannot connect", cause: NotConnected(reason: "connection refused"))
        #expect(RenewalSettlement(failure: notConnected) == .release)
        #expect(RenewalSettlement(failure: RPCError(.deadlineExceeded, "")) == .keepPending)
        #expect(RenewalSettlement(failure: RPCError(.internal, "")) == .keepPending)
        #expect(RenewalSettlement(failure: CancellationError()) == .keepPending)
    }

    /// A card with more tokens than one TSP call takes (a cardholder with many devices) is renewed whole: every
    /// token, a batch of at most 10 a call, so none is left on the old number.
    @Test func aCardWithManyTokensIsRenewedWhole() async throws {
        let ids = try manyTokens(23)
        let response = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        #expect(response.renewedDigitalCardIds == ids)
        let (sent, held) = tsp.state.withLock { ($0.renewals.map(\.0.digitalCardIds), $0.held) }
        #expect(sent == [Array(ids[0..<10]), Array(ids[10..<20]), Array(ids[20...])])
        #expect(try ids.allSatisfy { try held[$0]?.pan().last4 == "0017" })
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
    }

    /// A renewal that fails after its first batch leaves the TSP holding the new number for some tokens: even a
    /// refusal keeps it pending (giving the number back would strand those tokens), an abandon is refused since the
    /// TSP, asked about every token, holds it in part, and the repeat sends every batch again and completes it.
    @Test func aRenewalFailingAfterItsFirstBatchStaysPendingUntilRepeated() async throws {
        let ids = try manyTokens(23)
        tsp.state.withLock { $0.failingRenewalCalls[2] = RPCError(.failedPrecondition, "the TSP refused") }
        let failed = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        #expect(failed?.code == .failedPrecondition)
        #expect(
            failed?.message.contains("renewed 10 of card \(Cards.visaApprove.0)'s tokens, answering 1 of 3 calls")
                == true, "\(String(describing: failed))")
        #expect(failed?.message.contains("stays pending: repeat it") == true)
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.digits == Cards.visaApprove.1)
        #expect(sink.lines.contains { $0.contains("renewed some tokens only") && $0.contains("0017") })

        let abandon = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, abandon: true))
        }
        #expect(abandon?.code == .failedPrecondition, "\(String(describing: abandon))")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(tsp.state.withLock { $0.fundingAsks } == 3)

        let repeated = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        #expect(repeated.renewedDigitalCardIds == ids)
        let held = tsp.state.withLock { $0.held }
        #expect(try ids.allSatisfy { try held[$0]?.pan().last4 == "0017" })
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
        #expect(tsp.state.withLock { ($0.renewalCalls, $0.fundingAsks) } == (5, 6))
        #expect(!sink.lines.joined().contains("4761000010000017"))
    }

    /// A token of the first batch the TSP fails for a reason that may pass keeps the renewal pending (the batch's
    /// other tokens hold the new number), and the error counts the tokens renewed, not the calls answered.
    @Test func aTokenFailingForNowKeepsTheRenewalPendingAndIsNotCountedRenewed() async throws {
        let ids = try manyTokens(23)
        tsp.state.withLock { $0.failingTokens[ids[3]] = .unavailable }
        let failed = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        #expect(failed?.code == .unavailable, "\(String(describing: failed))")
        #expect(
            failed?.message.contains("renewed 9 of card \(Cards.visaApprove.0)'s tokens, answering 1 of 3 calls")
                == true, "\(String(describing: failed))")
        #expect(failed?.message.contains("could not renew token \(ids[3])") == true, "\(String(describing: failed))")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(tsp.state.withLock { $0.renewalCalls } == 1)

        tsp.state.withLock { $0.failingTokens = [:] }
        let repeated = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        #expect(repeated.renewedDigitalCardIds == ids)
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
    }

    /// Tokens that cannot take a renewal do not hold it back: a token the TSP has deleted is left out (and recorded,
    /// so the next renewal does not send it), and one the TSP refuses for good (unknown to it) is named in the answer,
    /// while every live token takes the new number and the renewal completes.
    @Test func tokensThatCannotTakeARenewalDoNotHoldItBack() async throws {
        let ids = try manyTokens(23)
        tsp.state.withLock { state in
            state.unknown = [ids[14]]
            state.deleted = [ids[21]]
        }
        let response = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        #expect(response.renewedDigitalCardIds == ids.filter { $0 != ids[14] && $0 != ids[21] })
        #expect(response.notRenewedDigitalCardIds == [ids[14]])
        #expect(response.deletedTokensSkipped == 1)
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
        #expect(sink.lines.contains { $0.contains("refused tokens of a renewal for good") && $0.contains(ids[14]) })

        // The token the TSP does not know is recorded so: the next renewal and card-wide changes skip it too.
        #expect(try party.store.tokens(ofCard: Cards.visaApprove.0).unknown == [ids[14]])
        let again = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000025"))
        #expect(again.deletedTokensSkipped == 1 && again.unknownTokensSkipped == 1)
        #expect(again.notRenewedDigitalCardIds.isEmpty)
        let sent = tsp.state.withLock { $0.renewals.map(\.0.digitalCardIds) }
        #expect(sent.count == 6 && !sent[3...].joined().contains(ids[21]) && !sent[3...].joined().contains(ids[14]))
        #expect(sent[3...].joined().count == 21)
        #expect(!sink.lines.joined().contains("4761000010000025"))
        let changed = try await care.changeTokenStates(
            .init(action: .suspend, reasonCode: "LOST_CARD", cardID: Cards.visaApprove.0))
        #expect(changed.results.count == 21 && changed.deletedTokensSkipped == 1 && changed.unknownTokensSkipped == 1)
        #expect(!tsp.state.withLock { $0.changes }.flatMap(\.digitalCardIds).contains(ids[14]))
    }

    /// A renewal that repeating cannot complete (the TSP holds it for the first batch only and refuses the rest,
    /// here a card it cannot read) is the operator's to force complete: refused while the TSP cannot be asked, then
    /// completed with the tokens that do not hold the new card named.
    @Test func aRenewalRepeatingCannotCompleteIsForcedComplete() async throws {
        let ids = try manyTokens(23)
        tsp.state.withLock { $0.failingRenewalCalls[2] = RPCError(.unavailable, "the TSP is out of reach") }
        _ = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        tsp.state.withLock { $0.refusal = RPCError(.invalidArgument, "card_data does not decrypt") }
        let repeated = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        #expect(repeated?.code == .invalidArgument, "\(String(describing: repeated))")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0)?.pan.last4 == "0017")
        let abandon = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, abandon: true))
        }
        #expect(abandon?.code == .failedPrecondition)
        #expect(
            abandon?.message.contains("or force it complete: tokenet issuer renew-card --force-complete") == true,
            "\(String(describing: abandon))")

        tsp.state.withLock { $0.fundingFailure = RPCError(.unavailable, "the TSP is out of reach") }
        let unasked = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, forceComplete: true))
        }
        #expect(unasked?.code == .unavailable)
        #expect(
            unasked?.message.contains("is not forced complete and stays pending") == true,
            "\(String(describing: unasked))")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0)?.pan.last4 == "0017")

        tsp.state.withLock { $0.fundingFailure = nil }
        let calls = tsp.state.withLock { $0.renewalCalls }
        let forced = try await care.renewCard(.init(cardID: Cards.visaApprove.0, forceComplete: true))
        #expect(!forced.abandoned && forced.maskedPAN == "************0017")
        #expect(forced.renewedDigitalCardIds == Array(ids[0..<10]))
        #expect(forced.notRenewedDigitalCardIds == Array(ids[10...]))
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.last4 == "0017")
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
        #expect(tsp.state.withLock { $0.renewalCalls } == calls)
        #expect(sink.lines.contains { $0.contains("renewal forced complete") && $0.contains("0017") })
        #expect(!sink.lines.joined().contains("4761000010000017"))
    }

    /// Among a card's tokens, one of another issuer and one the TSP does not know are refused by the TSP in their
    /// own answers when the issuer asks what they hold: neither keeps a pending renewal from being abandoned or
    /// forced complete, both are named, and the unknown one is recorded so and skipped from then on.
    @Test func tokensTheTSPWillNotAnswerAboutDoNotKeepARenewalPending() async throws {
        try await pendingRenewal(applied: false)
        for id in ["DNIFOREIGN", "DNIUNKNOWN"] {
            try decide(Cards.visaApprove.0, digitalCardID: id, outcome: .approved)
        }
        tsp.state.withLock { state in
            state.foreign = ["DNIFOREIGN"]
            state.unknown = ["DNIUNKNOWN"]
        }
        let abandoned = try await care.renewCard(.init(cardID: Cards.visaApprove.0, abandon: true))
        #expect(abandoned.abandoned && abandoned.notRenewedDigitalCardIds == ["DNIFOREIGN", "DNIUNKNOWN"])
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
        #expect(try party.store.tokens(ofCard: Cards.visaApprove.0).unknown == ["DNIUNKNOWN"])

        // Pending again, and a TSP that refuses the renewed card: forced complete, naming the tokens left behind.
        tsp.state.withLock { $0.droppedRenewals = 1 }
        _ = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        #expect(tsp.state.withLock { $0.renewals.isEmpty })
        tsp.state.withLock { $0.refusal = RPCError(.invalidArgument, "card_data does not decrypt") }
        let asks = tsp.state.withLock { $0.fundingAsks }
        let forced = try await care.renewCard(.init(cardID: Cards.visaApprove.0, forceComplete: true))
        #expect(!forced.abandoned && forced.maskedPAN == "************0017")
        #expect(forced.notRenewedDigitalCardIds == ["DNITHE1", "DNIFOREIGN"] && forced.unknownTokensSkipped == 1)
        #expect(tsp.state.withLock { $0.fundingAsks } == asks + 1)
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.last4 == "0017")
    }

    /// A token named one by one that the TSP answered it does not know is not sent again: the issuer refuses it by
    /// name (NOT_FOUND), saying why.
    @Test func aNamedTokenTheTSPDoesNotKnowIsNotSentAgain() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNIGONE", outcome: .approved)
        tsp.state.withLock { $0.unknown = ["DNIGONE"] }
        let first = try await care.changeTokenStates(
            .init(digitalCardIds: ["DNIGONE"], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(first.results.map(\.statusCode) == [StatusCode.notFound.rawValue])
        let calls = tsp.state.withLock { $0.changeCalls }
        let again = try await care.changeTokenStates(
            .init(digitalCardIds: ["DNIGONE"], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(again.results.map(\.statusCode) == [StatusCode.notFound.rawValue])
        #expect(
            again.results.first?.message.contains("the TSP does not know token \"DNIGONE\"") == true,
            "\(again.results)")
        #expect(tsp.state.withLock { $0.changeCalls } == calls)
    }

    /// An id the TSP does not know and the issuer never heard of (a typo) is answered NOT_FOUND naming it, and is
    /// not recorded unknown: asked again, it goes to the TSP again, and `unknown_tokens` does not grow with typos.
    /// A token the issuer approved beside it is still recorded.
    @Test func aMistypedTokenIdIsAnsweredNotFoundAndNotRecorded() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNIGONE", outcome: .approved)
        tsp.state.withLock { $0.unknown = ["DNITYPO", "DNIGONE"] }
        let first = try await care.changeTokenStates(
            .init(digitalCardIds: ["DNITYPO", "DNIGONE"], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(first.results.map(\.statusCode) == [StatusCode.notFound.rawValue, StatusCode.notFound.rawValue])
        let typo = try #require(first.results.first)
        #expect(typo.message.contains("\"DNITYPO\"") && typo.message.contains("neither the TSP nor the issuer"))
        #expect(try party.store.goneTokens(["DNITYPO", "DNIGONE"]).mapValues(\.isUnknownToTSP) == ["DNIGONE": true])
        #expect(sink.lines.contains { $0.contains("neither the TSP nor the issuer knows") && $0.contains("DNITYPO") })

        let calls = tsp.state.withLock { $0.changeCalls }
        let again = try await care.changeTokenStates(
            .init(digitalCardIds: ["DNITYPO"], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(again.results.map(\.statusCode) == [StatusCode.notFound.rawValue])
        #expect(tsp.state.withLock { $0.changeCalls } == calls + 1)
        #expect(try party.store.goneTokens(["DNITYPO"]).isEmpty)
    }

    @Test func forceCompleteRefusals() async throws {
        let cases: [(IssuerV1.IssuerRenewCardRequest, StatusCode, String)] = [
            (
                .init(cardID: Cards.visaApprove.0, forceComplete: true), .failedPrecondition,
                "no pending renewal to force"
            ),
            (.init(cardID: Cards.visaApprove.0, abandon: true, forceComplete: true), .invalidArgument, "not both"),
            (
                .init(cardID: Cards.visaApprove.0, expiry: "12/32", forceComplete: true), .invalidArgument,
                "force_complete takes no pan or expiry"
            ),
            (.init(cardID: "card-x", forceComplete: true), .notFound, "no card"),
        ]
        for (request, code, message) in cases {
            let error = await Support.rpcError { _ = try await care.renewCard(request) }
            #expect(error?.code == code && error?.message.contains(message) == true, "\(String(describing: error))")
        }
    }

    /// A refusal of the first batch changed nothing at the TSP, so it gives the number back as a single call's does.
    @Test func aRenewalRefusedAtItsFirstBatchGivesTheNumberBack() async throws {
        _ = try manyTokens(23)
        tsp.state.withLock { $0.failingRenewalCalls[1] = RPCError(.failedPrecondition, "the TSP refused") }
        let refused = await Support.rpcError {
            _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        }
        #expect(refused?.code == .failedPrecondition)
        #expect(try party.store.pendingRenewal(ofCard: Cards.visaApprove.0) == nil)
        #expect(tsp.state.withLock { $0.renewalCalls } == 1)
    }

    /// How a renewal sent in batches is settled: by the first batch's failure as a single call's, and pending after
    /// a later one whatever it was.
    @Test func aRenewalSentInBatchesIsSettledByHowFarItGot() {
        var sent = RenewalSent(batches: 3)
        sent.answered = 3
        #expect(sent.settlement == .complete)
        sent.answered = 0
        sent.failure = RPCError(.failedPrecondition, "")
        #expect(sent.settlement == .release)
        sent.failure = RPCError(.unavailable, "")
        #expect(sent.settlement == .keepPending)
        sent.answered = 1
        sent.failure = RPCError(.failedPrecondition, "")
        #expect(sent.settlement == .keepPending)
        #expect(LifecycleLimits.batches([]) == [])
        #expect(LifecycleLimits.batches((1...21).map(String.init)).map(\.count) == [10, 10, 1])
    }
}
