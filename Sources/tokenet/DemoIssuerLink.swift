import TokenetFaults
import TokenetNode
import TokenetTransport

/// The demo's fault proxy between the TSP and the issuer: `tsp-node --issuer` points at it, and the scenario "the
/// TSP cut off from the issuer" partitions, heals and cuts it while the nodes run (the other scenarios see it carry
/// every byte untouched; TLS passes through it end to end).
final class DemoIssuerLink: Sendable {
    let proxy: FaultProxy
    private let loop: EventLoop
    private let serving: Task<Void, Never>

    var address: HostPort { HostPort(host: proxy.host, port: proxy.port) }

    private init(proxy: FaultProxy, loop: EventLoop) {
        self.proxy = proxy
        self.loop = loop
        serving = Task { await proxy.serve() }
    }

    static func start(to issuer: HostPort) throws(CLIError) -> DemoIssuerLink {
        let started: Result<DemoIssuerLink, CLIError> = runBlocking {
            do {
                let loop = try EventLoop(name: "tokenet-demo-proxy")
                do {
                    let proxy = try await FaultProxy.bind(
                        upstreamHost: issuer.host, upstreamPort: issuer.port, on: loop)
                    return .success(DemoIssuerLink(proxy: proxy, loop: loop))
                } catch {
                    loop.shutdown()
                    return .failure(CLIError(.setup, "cannot start the fault proxy to issuer-node: \(error)"))
                }
            } catch {
                return .failure(CLIError(.setup, "cannot start the fault proxy's event loop: \(error)"))
            }
        }
        return try started.get()
    }

    /// Cuts what it still carries and stops.
    func stop() {
        let (proxy, serving) = (proxy, serving)
        runBlocking {
            await proxy.close()
            await serving.value
        }
        loop.shutdown()
    }
}
