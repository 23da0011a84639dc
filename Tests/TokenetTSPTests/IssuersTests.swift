import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// RegisterIssuer: upsert, validation and ownership by the registering node.
@Suite struct IssuersTests {
    @Test func registrationReturnsTheTSPKeyAndUpserts() async throws {
        let tsp = try TSPHarness.make()
        let response = try await tsp.registerIssuer()
        #expect(response.tspPublicKeyIdentifier == TSPHarness.tspKey.kid)
        #expect(response.tspPublicKeyPem == (try TSPHarness.tspKey.publicKey.pem()))
        try await tsp.registerIssuer(ranges: [("555555", "555555")])
        // The Visa range is gone after the upsert.
        #expect(try await tsp.checkEligibility(pan: TSPHarness.visa).reason == .issuerNotParticipating)
        #expect(try await tsp.checkEligibility(pan: TSPHarness.mastercard).eligible)
    }

    @Test func badRegistrationsAreRefused() async throws {
        let tsp = try TSPHarness.make()
        await expectRPCError(.invalidArgument, "BIN range") { try await tsp.registerIssuer(ranges: [("41x", "419")]) }
        await expectRPCError(.invalidArgument, "equal length") {
            try await tsp.registerIssuer(ranges: [("41", "419")])
        }
        await expectRPCError(.invalidArgument, "low end above") {
            try await tsp.registerIssuer(ranges: [("419", "411")])
        }
        await expectRPCError(.invalidArgument, "bin_ranges") { try await tsp.registerIssuer(ranges: []) }
        await expectRPCError(.invalidArgument, "encryption_public_key_pem") {
            try await tsp.issuers.registerIssuer(
                .init(issuerID: "bank-a", binRanges: [.init(low: "4", high: "4")], encryptionPublicKeyPem: "junk"))
        }
        try await tsp.registerIssuer()
        await expectRPCError(.failedPrecondition, "overlaps") {
            try await tsp.registerIssuer(id: "bank-b", ranges: [("41", "41")])
        }
    }

    @Test func anotherNodeCannotTakeOverAnIssuer() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let other = TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: .init(role: .issuer, nodeID: "intruder")))
        await expectRPCError(.permissionDenied, "registered by another node (issuer-1)") {
            try await other.registerIssuer(
                .init(
                    issuerID: "bank-a", binRanges: [.init(low: "411111", high: "411111")],
                    encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        }
        let asWallet = TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: .init(role: .wallet, nodeID: "w")))
        await expectRPCError(.permissionDenied, "may not call") { try await asWallet.registerIssuer(.init()) }
    }
}
