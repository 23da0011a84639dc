import Foundation
import TokenetRPC
import TokenetTransport

/// `tokenet-bench server`: serves the benchmark service over mutual TLS on 127.0.0.1, and a transport echo on a
/// second port, and prints `PORT n ECHO m`.
struct BenchServer {
    let options: BenchOptions

    func run() async throws {
        let files = try options.credentials()
        let loop = try EventLoop(name: "bench-server", idlePoll: options.idlePoll)
        let context = try TLSContext(
            configuration: .server(
                certificateChainFile: files.certificate, privateKeyFile: files.key, trustedCAFile: files.ca)
        )
        let listener = try await TLSListener.bind(host: "127.0.0.1", port: 0, context: context, on: loop)
        // The echo handlers never block, so they run on the connection's loop (see `RPCServer`).
        let server = RPCServer(router: BenchService.router, handlersOnConnectionLoop: true)
        let serving = Task { await server.serve(listener: listener) }
        let echoListener = try await TLSListener.bind(host: "127.0.0.1", port: 0, context: context, on: loop)
        let echoing = Task { await TransportEcho.serve(echoListener) }
        FileHandle.standardOutput.write(Data("PORT \(listener.port) ECHO \(echoListener.port)\n".utf8))
        // The parent stops the server with SIGTERM; a parent that died without (SIGKILL) leaves it to the lifetime,
        // or to the moment it finds itself handed to another parent.
        let parent = getppid()
        let end = ContinuousClock.now + .seconds(options.lifetime)
        while ContinuousClock.now < end, getppid() == parent {
            try? await Task.sleep(for: .milliseconds(200))
        }
        server.shutdown()
        await listener.close()
        await echoListener.close()
        serving.cancel()
        echoing.cancel()
        loop.shutdown()
    }
}
