import Foundation
import Glibc
import Testing
import TokenetTestSupport
import TokenetTransport

@testable import TokenetNode

/// Whether this machine has an IPv6 loopback to test on (a container may run without IPv6).
private let ipv6Loopback: Bool = {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
        }
    }
}()

/// A node on an IPv6 address, reached by the CLI and through the fault proxy, both by `[ADDRESS]:PORT`.
@Suite(.timeLimit(.minutes(3)), .enabled(if: ipv6Loopback, "this machine has no IPv6 loopback"))
struct IPv6NodeTests {
    let pki = DevelopmentPKI.shared

    var tls: [String] {
        ["--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key")]
    }

    @Test func aNodeListensOnIPv6AndIsReachedThereDirectlyAndThroughTheProxy() async throws {
        let data = try TemporaryDirectory()
        let readyFile = data.path("ready.json")
        let node = try LaunchedProcess.tspNode(in: data, listen: "[::1]:0")
        defer {
            node.process.send(SIGTERM)
            node.process.waitUntilExit(killingAfter: 30)
        }
        let address = try await PythonClientInteropTests.waitFor(node.process, "tsp-node's ready file") {
            FileManager.default.fileExists(atPath: readyFile) ? try ReadyFile.read(from: readyFile).listen : nil
        }
        #expect(address.hasPrefix("[::1]:"), "\(address)")
        #expect(HostPort(parsing: address)?.host == "::1")

        let direct = try await runTokenet(["call", address, "tokenet.health.v1.Health/Check"] + tls)
        #expect(direct.status == 0, "\(direct.stderr)")
        #expect(direct.stdout.contains("SERVING_STATUS_SERVING"), "\(direct.stdout)")

        // The proxy listens on IPv6 too, and carries the call to the node's IPv6 address.
        let output = data.path("proxy.out")
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let outputHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        defer { try? outputHandle.close() }
        let proxy = try SpawnedProcess(
            try BuiltExecutables.url(of: "tokenet").path, ["proxy", "--to", address, "--listen", "[::1]:0"],
            standardInput: .pipe, standardOutput: .descriptor(outputHandle.fileDescriptor),
            standardError: .descriptor(outputHandle.fileDescriptor))
        defer {
            proxy.send(SIGTERM)
            _ = proxy.waitUntilExit(killingAfter: 30)
        }
        let banner = try await PythonClientInteropTests.waitFor(proxy, "the proxy's banner") {
            (try? String(contentsOfFile: output, encoding: .utf8))?.split(separator: "\n").first.map(String.init)
        }
        let words = banner.split(separator: " ")
        #expect(words.first == "PROXY", "\(banner)")
        #expect(words.count > 2 && words[2] == "to=\(address)", "\(banner)")
        let proxied = try #require(words.dropFirst().first.map { String($0.dropFirst("listen=".count)) })
        #expect(proxied.hasPrefix("[::1]:"), "\(banner)")

        let throughProxy = try await runTokenet(["call", proxied, "tokenet.health.v1.Health/Check"] + tls)
        #expect(throughProxy.status == 0, "\(throughProxy.stderr)")
        #expect(throughProxy.stdout.contains("SERVING_STATUS_SERVING"), "\(throughProxy.stdout)")
    }

    /// An IPv6 address that nothing listens on is named as written, in brackets.
    @Test func aRefusedIPv6AddressIsNamedInBrackets() async throws {
        let result = try await runTokenet(["list", "[::1]:1", "--deadline", "5s"] + tls)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("tokenet: cannot connect to [::1]:1: "), "\(result.stderr)")
    }
}
