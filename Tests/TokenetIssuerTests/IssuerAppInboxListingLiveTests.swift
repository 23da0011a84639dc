import Foundation
import Testing
import TokenetNode
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetIssuer

/// `tokenet issuer-app notifications` against an issuer-node whose app kept more authentication requests than one
/// page of the largest size (`PageRequest.maximumSize`) holds, beside its 500 notifications: the CLI walks every
/// page and prints each item once, in order, as a table and as one JSON listing.
@Suite(.serialized) struct IssuerAppInboxListingLiveTests {
    static let count = PageRequest.maximumSize + 203

    @Test(.timeLimit(.minutes(3))) func everyPageIsListed() async throws {
        try await offThePool { try Self.listEveryPage() }
    }

    static func listEveryPage() throws {
        let data = try TestScratch.directory("issuer-app-listing")
        let directory = data.appendingPathComponent("issuer").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The app rebuilds its inbox from what it kept when it starts: `count` AUTHN messages kept by an earlier run
        // give it `count` authentication requests and its newest `IssuerAppInbox.capacity` messages.
        let store = try IssuerStore.open(directory: directory)
        let nowMs = UInt64(Date().timeIntervalSince1970 * 1000)
        for index in 1...count {
            var message = TspV1.Notification(
                messageID: "m-\(index)", sender: "TNS", topic: "D1_NOTIFICATION", messageType: "AUTHN",
                cardID: "DC-1")
            message.body = .authn(.init(authnRequestID: "ar-\(index)", amountMinor: 100, currency: "USD"))
            _ = try store.keepAppNotification(
                message, action: IssuerAppInbox.classify(message).1, nowMs: nowMs, capacity: count)
        }
        try store.database.close()

        let pki = DevelopmentPKI.shared
        let address = "127.0.0.1:\(try freeLoopbackPort())"
        let ready = data.appendingPathComponent("issuer.ready").path
        let node = try launch(
            "issuer-node",
            [
                "--cert", pki.path("issuer.pem"), "--key", pki.path("issuer.key"), "--ca", pki.path("ca.pem"),
                "--listen", address, "--tsp", "127.0.0.1:\(try freeLoopbackPort())", "--fixtures",
                Support.fixturePath, "--data-dir", directory, "--ready-file", ready, "--parent-pid", "\(getpid())",
            ])
        defer {
            node.send(SIGTERM)
            node.waitUntilExit(killingAfter: 30)
        }
        let deadline = Date().addingTimeInterval(120)
        while !FileManager.default.fileExists(atPath: ready) {
            try #require(node.isRunning && Date() < deadline, "issuer-node did not get ready")
            Thread.sleep(forTimeInterval: 0.05)
        }
        let operatorTLS = [
            "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
        ]
        let requests = (1...count).map { "ar-\($0)" }

        let json = try run("tokenet", ["issuer-app", "notifications", address, "--json"] + operatorTLS)
        let listing = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(listing["nextPageToken"] == nil)
        let notifications = try #require(listing["notifications"] as? [[String: Any]])
        #expect(
            notifications.compactMap { ($0["notification"] as? [String: Any])?["messageId"] as? String }
                == (count - IssuerAppInbox.capacity + 1...count).map { "m-\($0)" })
        let authn = try #require(listing["authnRequests"] as? [[String: Any]])
        #expect(authn.compactMap { $0["authnRequestId"] as? String } == requests)

        let table = try run("tokenet", ["issuer-app", "notifications", address] + operatorTLS)
        let section = try #require(table.range(of: "Authentication requests:\n"))
        let rows = table[section.upperBound...].split(separator: "\n").dropFirst()
            .map { String($0.prefix { $0 != " " }) }
        #expect(rows.filter { $0.hasPrefix("ar-") } == requests)
        // Each request names its card, from the AUTHN message the app still keeps.
        let last = try #require(table.split(separator: "\n").last { $0.hasPrefix("ar-\(count) ") })
        #expect(last.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first == "DC-1", "\(last)")
    }

    /// Starts `name`, its standard output in a pipe (`SpawnedProcess.standardOutput`) when `output`, else dropped.
    static func launch(_ name: String, _ arguments: [String], output: Bool = false) throws -> SpawnedProcess {
        try SpawnedProcess(
            try BuiltExecutables.url(of: name).path, arguments, standardOutput: output ? .pipe : .nullDevice,
            standardError: .nullDevice)
    }

    /// The standard output of a `tokenet` command that succeeds.
    static func run(_ name: String, _ arguments: [String]) throws -> String {
        let process = try launch(name, arguments, output: true)
        let data = process.standardOutput!.readDataToEndOfFile()
        let termination = process.waitUntilExit(killingAfter: 60)
        try #require(termination.status == 0, "\(name) \(arguments) exited \(termination.status)")
        return String(decoding: data, as: UTF8.self)
    }
}
