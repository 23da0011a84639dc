import Foundation
import Testing
import TokenetCard
import TokenetNode
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
        for (id, name, message) in [
            ("bank\u{202E}a", "Bank A", "issuer_id must be 1 to 64 characters without spaces, control or format"),
            ("bank 4111111111111111", "Bank A", "issuer_id must be 1 to 64 characters without spaces"),
            ("bank-4111111111111111", "Bank A", "issuer_id must be free of card numbers"),
            ("bank-a", "Bank\r\nX", "display_name must be 1 to 100 characters without control or format"),
            ("bank-a", "Bank 5500 0000 0000 0004", "display_name must be free of card numbers"),
        ] {
            await expectRPCError(.invalidArgument, message) {
                try await tsp.issuers.registerIssuer(
                    .init(
                        issuerID: id, displayName: name, binRanges: [.init(low: "4", high: "4")],
                        encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
            }
        }
        await expectRPCError(.invalidArgument, "bin_ranges holds 1001 ranges; at most 1000") {
            try await tsp.registerIssuer(ranges: (0...1_000).map { (String(100_000 + $0), String(100_000 + $0)) })
        }
        try await tsp.registerIssuer()
        // A node speaks for one issuer: a second id made the issuer of its enrolments a guess.
        await expectRPCError(.failedPrecondition, "node \"issuer-1\" already registered issuer \"bank-a\"") {
            try await tsp.registerIssuer(id: "bank-b", ranges: [("42", "42")])
        }
        let other = TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: .init(role: .issuer, nodeID: "issuer-2")))
        await expectRPCError(.failedPrecondition, "overlaps") {
            try await other.registerIssuer(
                .init(
                    issuerID: "bank-b", binRanges: [.init(low: "41", high: "41")],
                    encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        }
        // Both ranges are named, in words a log's masking leaves alone: joined by a dash, two 8-digit prefixes
        // read as a card number and were masked in the answer.
        let expected = "BIN range 41111100 to 41111120 overlaps issuer \"bank-a\"'s range 411111 to 411111"
        await expectRPCError(.failedPrecondition, expected) {
            try await other.registerIssuer(
                .init(
                    issuerID: "bank-b", binRanges: [.init(low: "41111100", high: "41111120")],
                    encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        }
        #expect(maskPAN(expected) == expected)
        // Two ranges of one request may not overlap either: a card number fell in two of the issuer's ranges.
        await expectRPCError(.invalidArgument, "range 42150 to 42160 overlaps range 42100 to 42199 of the same request")
        {
            try await other.registerIssuer(
                .init(
                    issuerID: "bank-b",
                    binRanges: [.init(low: "42100", high: "42199"), .init(low: "42150", high: "42160")],
                    encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
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
