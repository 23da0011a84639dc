import Foundation
import TokenetRPC
import TokenetTestSupport
import TokenetTransport

/// Runs `tokenet` against an in-process plaintext server that serves `router`, for what no node does on purpose (a
/// status code from a later protocol, a handler that reports the metadata it received). `arguments` gets the
/// server's address.
func runTokenet(servedBy router: RPCRouter, _ arguments: (String) -> [String]) async throws -> ProcessResult {
    let loop = try EventLoop(name: "tokenet-cli-test")
    let listener = try await PlainListener.bind(on: loop)
    // Accepting, serving and the handlers all run on the server's own loop thread: the full suite keeps the shared
    // concurrency pool busy with a thousand other tests, and a server queued behind them answered the command only
    // after its connect or call deadline had passed.
    let server = RPCServer(router: router, handlersOnConnectionLoop: true)
    let serving = Task(executorPreference: loop) { await server.serve(listener: listener) }
    let command = arguments("127.0.0.1:\(listener.port)")
    let result: Result<ProcessResult, any Error>
    do {
        result = .success(try await offThePool { try runTokenet(command) })
    } catch {
        result = .failure(error)
    }
    server.shutdown()
    serving.cancel()
    await listener.close()
    loop.shutdown()
    return try result.get()
}
