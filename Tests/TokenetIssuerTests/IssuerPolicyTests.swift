import Foundation
import Testing
import TokenetNode
import TokenetTestSupport

@testable import TokenetIssuer

/// `issuer-policy.json` in the issuer's data directory: optional, strict.
@Suite struct IssuerPolicyTests {
    func directory(_ json: String?) throws -> String {
        let directory = try TestScratch.path("issuer-policy")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if let json {
            try json.write(toFile: directory + "/" + IssuerPolicy.fileName, atomically: true, encoding: .utf8)
        }
        return directory
    }

    @Test func theRetentionIsReadFromThePolicyFile() throws {
        #expect(try IssuerPolicy.load(dataDirectory: directory(nil)).appAuthnRetention == IssuerRetention())
        let policy = try IssuerPolicy.load(dataDirectory: directory(#"{"app_authn_retention_s": 86400}"#))
        #expect(policy.appAuthnRetention.keep == .seconds(86_400))
    }

    @Test func theOutboxRetentionIsReadFromThePolicyFile() throws {
        #expect(try IssuerPolicy.load(dataDirectory: directory(nil)).outboxRetention == IssuerRetention())
        let policy = try IssuerPolicy.load(dataDirectory: directory(#"{"outbox_retention_s": 3600}"#))
        #expect(policy.outboxRetention.keep == .seconds(3600))
        #expect(policy.appAuthnRetention == IssuerRetention())
    }

    @Test(arguments: [
        #"{"app_authn_retention": 60}"#, #"{"app_authn_retention_s": 0}"#, #"{"app_authn_retention_s": "60"}"#,
        #"{"app_authn_retention_s": true}"#, #"{"app_authn_retention_s": 60, "app_authn_retention_s": 61}"#, "[]",
        #"{"outbox_retention_s": 0}"#, #"{"outbox_retention_s": 31622401}"#, #"{"outbox_retention_s": "3600"}"#,
    ])
    func aBadPolicyFileStopsTheNode(json: String) throws {
        let error = #expect(throws: NodeError.self) { try IssuerPolicy.load(dataDirectory: directory(json)) }
        #expect(error?.code == .config)
        #expect(error?.message.contains(IssuerPolicy.fileName) == true)
    }
}
