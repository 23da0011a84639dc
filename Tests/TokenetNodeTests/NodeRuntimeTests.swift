import Foundation
import Testing

@testable import TokenetNode

@Suite struct NodeRuntimeTests {
    @Test func plainListenerBindsAFreePortAndAccepts() throws {
        let logger = Logger(node: "test", sink: MemoryLogSink())
        let listener = try PlainTCPListener(address: HostPort(host: "127.0.0.1", port: 0), logger: logger)
        #expect(listener.boundAddress.host == "127.0.0.1")
        #expect(listener.boundAddress.port != 0)
        #expect(try connects(to: listener.boundAddress))
        listener.stop()
        #expect(try !connects(to: listener.boundAddress))
    }

    @Test func bindingAnAddressInUseFails() throws {
        let logger = Logger(node: "test", sink: MemoryLogSink())
        let first = try PlainTCPListener(address: HostPort(host: "127.0.0.1", port: 0), logger: logger)
        defer { first.stop() }
        #expect {
            _ = try PlainTCPListener(address: first.boundAddress, logger: logger)
        } throws: { error in
            (error as? NodeError)?.code == .listen && "\(error)".contains("bind")
        }
    }

    @Test func startAnnouncesReadinessAndStopWithdrawsIt() throws {
        let directory = try TemporaryDirectory()
        var options = NodeOptions()
        options.plaintext = true
        options.dataDirectory = directory.path("data/nested")
        options.readyFile = directory.path("ready.json")
        let sink = MemoryLogSink()
        var announced: [String] = []
        let runtime = try NodeRuntime.start(
            spec: .issuer, options: options, logger: Logger(node: "issuer-node", sink: sink),
            announce: { announced.append($0) })
        let ready = try ReadyFile.read(from: directory.path("ready.json"))
        #expect(ready == runtime.ready)
        #expect(ready.node == "issuer-node")
        #expect(ready.pid == getpid())
        #expect(announced == [ready.line])
        #expect(FileManager.default.fileExists(atPath: directory.path("data/nested")))
        #expect(sink.lines.contains { $0.contains("issuer-node: ready listen=\(ready.listen)") })
        runtime.stop()
        #expect(!FileManager.default.fileExists(atPath: directory.path("ready.json")))
    }

    @Test func missingTLSFileIsAConfigError() throws {
        var options = NodeOptions()
        options.certificatePath = "/nonexistent/tsp.pem"
        options.privateKeyPath = "/nonexistent/tsp.key"
        options.caPath = "/nonexistent/ca.pem"
        #expect {
            _ = try NodeRuntime.start(
                spec: .tsp, options: options, logger: Logger(node: "tsp-node", sink: MemoryLogSink()),
                announce: { _ in })
        } throws: { error in
            guard let error = error as? NodeError else { return false }
            return error.exitStatus == 2 && error.description.contains("--cert: cannot read /nonexistent/tsp.pem")
        }
    }

    /// Whether a TCP connection to `address` succeeds.
    private func connects(to address: HostPort) throws -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = address.port.bigEndian
        inet_pton(AF_INET, address.host, &socketAddress.sin_addr)
        let status = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return status == 0
    }
}
