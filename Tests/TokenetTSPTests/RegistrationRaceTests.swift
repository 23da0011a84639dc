import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// Registrations that arrive at once are judged one after the other, each against the issuers the others stored:
/// each was checked against the list as it was before any of them, and several were stored.
@Suite struct RegistrationRaceTests {
    /// Registers `issuerID` with one BIN range from each of `nodes` at once; returns the status of each.
    static func registerAtOnce(_ tsp: TSPHarness, nodes: [String], issuerID: (String) -> String) async throws
        -> [String: StatusCode]
    {
        let pem = try FakeIssuer.key.publicKey.pem()
        return await withTaskGroup(of: (String, StatusCode).self) { group in
            for node in nodes {
                let issuers = TspV1.Issuers.Client(
                    TSPHarness.connect(tsp.router, as: PeerIdentity(role: .issuer, nodeID: node)))
                let id = issuerID(node)
                group.addTask {
                    do {
                        _ = try await issuers.registerIssuer(
                            TspV1.RegisterIssuerRequest(
                                issuerID: id, displayName: "Bank",
                                binRanges: [TspV1.BinRange(low: "777700", high: "777799")],
                                encryptionPublicKeyPem: pem),
                            options: CallOptions(timeout: .seconds(120)))
                        return (node, .ok)
                    } catch let error as RPCError {
                        return (node, error.code)
                    } catch {
                        return (node, .unknown)
                    }
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
    }

    static func registered(_ tsp: TSPHarness) throws -> [IssuerRecord] {
        try TSPStore.open(
            path: tsp.directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory)
        ).issuers()
    }

    /// Two issuers never own one BIN range: of several registering it at once, one is stored.
    @Test func oneOfSeveralIssuersRegisteringOneRangeAtOnceGetsIt() async throws {
        for _ in 0..<3 {
            let tsp = try TSPHarness.make()
            let nodes = (1...8).map { "node-\($0)" }
            let answers = try await Self.registerAtOnce(tsp, nodes: nodes) { "bank-\($0)" }
            #expect(answers.values.filter { $0 == .ok }.count == 1, "\(answers)")
            #expect(answers.values.allSatisfy { $0 == .ok || $0 == .failedPrecondition }, "\(answers)")
            let owners = try Self.registered(tsp).filter { !$0.binRanges.isEmpty }
            #expect(owners.count == 1, "\(owners.map(\.id))")
        }
    }

    /// An issuer id is its first node's: of several nodes registering one new id at once, one gets it and the
    /// others are told it is another node's. The last to write took it, and each was answered OK.
    @Test func oneOfSeveralNodesRegisteringOneIdAtOnceGetsIt() async throws {
        for _ in 0..<3 {
            let tsp = try TSPHarness.make()
            let nodes = (1...8).map { "node-\($0)" }
            let answers = try await Self.registerAtOnce(tsp, nodes: nodes) { _ in "same-bank" }
            let winners = answers.filter { $0.value == .ok }.map(\.key)
            #expect(winners.count == 1, "\(answers)")
            #expect(answers.values.allSatisfy { $0 == .ok || $0 == .permissionDenied }, "\(answers)")
            #expect(try Self.registered(tsp).map(\.peerNodeID) == winners.map { Optional($0) })
        }
    }
}
