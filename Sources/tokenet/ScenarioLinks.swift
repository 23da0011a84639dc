import TokenetFaults
import TokenetNode
import TokenetScenario
import TokenetTransport

/// The fault proxies of a scenario's sandbox: every connection a node opens to a peer goes through one
/// (`ScenarioLink.all`), so that `fault LINK COMMAND` can delay, partition, refuse or cut it. Until a step says
/// otherwise each proxy carries every byte untouched; TLS passes through end to end.
final class ScenarioLinks: Sendable {
    let proxies: [ScenarioLink: FaultProxy]
    private let loop: EventLoop
    private let serving: [Task<Void, Never>]

    private init(proxies: [ScenarioLink: FaultProxy], loop: EventLoop) {
        self.proxies = proxies
        self.loop = loop
        serving = proxies.values.map { proxy in Task { await proxy.serve() } }
    }

    /// Starts one proxy per link, each towards its callee's address.
    /// `firstPort`: the proxies listen on it and the ports after it, one per link in `ScenarioLink.all` order (on
    /// loopback); free ports chosen at random when nil.
    static func start(to addresses: [ScenarioParty: HostPort], firstPort: UInt16? = nil) throws(CLIError)
        -> ScenarioLinks
    {
        let started: Result<ScenarioLinks, CLIError> = runBlocking {
            let loop: EventLoop
            do {
                loop = try EventLoop(name: "tokenet-scenario-proxies")
            } catch {
                return .failure(CLIError(.setup, "cannot start the fault proxies' event loop: \(error)"))
            }
            var proxies: [ScenarioLink: FaultProxy] = [:]
            for (index, link) in ScenarioLink.all.enumerated() {
                guard let upstream = addresses[link.to] else { continue }
                do {
                    proxies[link] = try await FaultProxy.bind(
                        port: firstPort.map { $0 + UInt16(index) } ?? 0, upstreamHost: upstream.host,
                        upstreamPort: upstream.port, on: loop)
                } catch {
                    for proxy in proxies.values { await proxy.close() }
                    loop.shutdown()
                    return .failure(CLIError(.setup, "cannot start the fault proxy for \(link): \(error)"))
                }
            }
            return .success(ScenarioLinks(proxies: proxies, loop: loop))
        }
        return try started.get()
    }

    /// Where `party`'s connection to `peer` goes.
    func address(_ link: ScenarioLink) -> HostPort? {
        proxies[link].map { HostPort(host: $0.host, port: $0.port) }
    }

    /// Cuts what the proxies still carry and stops them.
    func stop() {
        let (proxies, serving) = (proxies, serving)
        runBlocking {
            for proxy in proxies.values { await proxy.close() }
            for task in serving { await task.value }
        }
        loop.shutdown()
    }
}
