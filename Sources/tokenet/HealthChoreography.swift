import Dispatch
import Foundation
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

/// Asks every node for its health through the RPC runtime: over mutual TLS as the operator, or over plain TCP when
/// the demo runs without a PKI (`--plaintext` nodes).
///
/// This is the first call the demo makes across the three processes; the provisioning flow builds on the same path.
struct HealthChoreography: DemoChoreography {
    let pkiDirectory: String?

    var title: String {
        pkiDirectory == nil
            ? "Asking every node for its health over plain TCP (debug mode)"
            : "Asking every node for its health over mutual TLS (as operator-1)"
    }

    func run(cluster: DemoCluster, report: (String) -> Void) throws(CLIError) {
        for (role, ready) in cluster.nodes {
            guard let address = HostPort(parsing: ready.listen) else {
                throw CLIError(.node, "\(role.nodeName) reported an unreadable address '\(ready.listen)'")
            }
            let outcome = runBlocking { () -> Result<String, CLIError> in
                await check(address: address, name: role.nodeName)
            }
            report(try outcome.get())
        }
    }

    private func check(address: HostPort, name: String) async -> Result<String, CLIError> {
        let loop: EventLoop
        do {
            loop = try EventLoop(name: "demo")
        } catch {
            return .failure(CLIError(.node, "cannot start an event loop: \(error)"))
        }
        defer { loop.shutdown() }
        do {
            let stream: any ByteStream
            let peer: String
            if let pkiDirectory {
                let context = try TLSContext(
                    configuration: .client(
                        certificateChainFile: "\(pkiDirectory)/operator.pem",
                        privateKeyFile: "\(pkiDirectory)/operator.key",
                        trustedCAFile: "\(pkiDirectory)/ca.pem"
                    )
                )
                let connection = try await TLSConnection.connect(
                    host: address.host,
                    port: address.port,
                    context: context,
                    on: loop
                )
                stream = connection
                peer = connection.peer.uri
            } else {
                stream = try await PlainConnection.connect(host: address.host, port: address.port, on: loop)
                peer = "plaintext"
            }
            let client = RPCClient(stream: stream, timers: InspectSession.timers)
            let started = ContinuousClock.now
            let response = try await client.unary(
                HealthV1.Health.check,
                HealthV1.HealthCheckRequest(),
                options: CallOptions(timeout: .seconds(5))
            )
            let elapsed = ContinuousClock.now - started
            await client.close()
            let status = response.status.protoValueName ?? "\(response.status.rawValue)"
            let micros = elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
            return .success("  \(name) (\(peer)) at \(address): \(status) in \(micros) µs")
        } catch {
            return .failure(CLIError(.node, "\(name) at \(address) did not answer a health check: \(error)"))
        }
    }
}
