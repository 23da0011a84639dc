import Foundation
import TokenetRPC
import TokenetTestSupport
import TokenetTransport

/// Runs `tokenet` against an in-process plaintext server that serves `router`, for what no node does on purpose (a
/// status code from a later protocol, a handler that reports the metadata it received). `arguments` gets the
/// server's address; `stdin` is the command's standard input.
/// With `atTerminal`, `tokenet` runs under `script(1)`, its standard streams a terminal; the result's `stdout` holds
/// what it wrote to both.
func runTokenet(
    servedBy router: RPCRouter, stdin: String = "", atTerminal: Bool = false, _ arguments: (String) -> [String]
) async throws -> ProcessResult {
    let loop = try EventLoop(name: "tokenet-cli-test")
    let listener = try await PlainListener.bind(on: loop)
    return try await run(router, on: loop, port: listener.port, stdin: stdin, atTerminal: atTerminal, arguments) {
        server in
        await server.serve(listener: listener)
    } close: {
        await listener.close()
    }
}

/// Runs `tokenet` against an in-process server that serves `router` over mutual TLS as the TSP of the development
/// PKI, for methods that need the caller's role (an operator's, with the PKI's operator certificate). `certificate`
/// and `key` serve another certificate instead of the TSP's.
func runTokenet(
    servedOverTLSBy router: RPCRouter, certificate: String? = nil, key: String? = nil,
    standardInput: FileHandle? = nil, _ arguments: (String) -> [String]
) async throws -> ProcessResult {
    let pki = DevelopmentPKI.shared
    let context = try TLSContext(
        configuration: .server(
            certificateChainFile: certificate ?? pki.path("tsp.pem"), privateKeyFile: key ?? pki.path("tsp.key"),
            trustedCAFile: pki.path("ca.pem")))
    let loop = try EventLoop(name: "tokenet-cli-test")
    let listener = try await TLSListener.bind(context: context, on: loop)
    return try await run(router, on: loop, port: listener.port, standardInput: standardInput, arguments) { server in
        await server.serve(listener: listener)
    } close: {
        await listener.close()
    }
}

private func run(
    _ router: RPCRouter, on loop: EventLoop, port: UInt16, stdin: String = "", standardInput: FileHandle? = nil,
    atTerminal: Bool = false, _ arguments: (String) -> [String],
    serve: @escaping @Sendable (RPCServer) async -> Void, close: () async -> Void
) async throws -> ProcessResult {
    // Accepting, serving and the handlers all run on the server's own loop thread: the full suite keeps the shared
    // concurrency pool busy with a thousand other tests, and a server queued behind them answered the command only
    // after its connect or call deadline had passed.
    let server = RPCServer(router: router, handlersOnConnectionLoop: true)
    let serving = Task(executorPreference: loop) { await serve(server) }
    let command = arguments("127.0.0.1:\(port)")
    let result: Result<ProcessResult, any Error>
    do {
        if atTerminal {
            let line = try ([BuiltExecutables.url(of: "tokenet").path] + command)
                .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
            result = .success(
                try await offThePool {
                    try runProgram("/usr/bin/script", ["-qec", line, "/dev/null"])
                })
        } else {
            result = .success(
                try await offThePool { try runTokenet(command, stdin: stdin, standardInput: standardInput) })
        }
    } catch {
        result = .failure(error)
    }
    server.shutdown()
    serving.cancel()
    await close()
    loop.shutdown()
    return try result.get()
}
