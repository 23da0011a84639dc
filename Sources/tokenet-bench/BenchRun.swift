import Foundation
import TokenetNode
import TokenetTransport

/// `tokenet-bench` / `tokenet-bench run`: makes a PKI with Tools/gen-certs, starts the server as a separate
/// process, runs the client cases in this process, prints the table and stops the server.
struct BenchRun {
    let options: BenchOptions

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("tokenet-bench-\(ProcessInfo.processInfo.processIdentifier)")
        defer { InterruptCleanup.removeUnlessStopping(directory.path) }
        // Ctrl-C stops the server child (in a process group of its own, out of the terminal's reach) and removes
        // the directory with the PKI's keys.
        let cleanup = InterruptCleanup(tool: "tokenet-bench")
        defer { withExtendedLifetime(cleanup) {} }
        cleanup.removeOnStop(directory.path)
        try runTool(try Self.genCerts(), [directory.path])
        func file(_ name: String) -> String { directory.appendingPathComponent(name).path }

        let (serverCPU, clientCPU): (String?, String?) =
            switch options.pin {
            case .none: (nil, nil)
            case .same: ("0", "0")
            case .split: ("0", "1")
            }
        if let clientCPU {
            // -a: every thread of this process; threads started later inherit the mask.
            try runTool("/usr/bin/taskset", ["-a", "-p", "-c", clientCPU, "\(getpid())"])
        }
        let serverArguments = [
            "server", "--cert", file("tsp.pem"), "--key", file("tsp.key"), "--ca", file("ca.pem"),
            "--idle-poll-us", "\(options.idlePollMicroseconds)",
        ]
        let me = try Self.executablePath()
        let server =
            if let serverCPU {
                try SpawnedProcess("/usr/bin/taskset", ["-c", serverCPU, me] + serverArguments, standardOutput: .pipe)
            } else {
                try SpawnedProcess(me, serverArguments, standardOutput: .pipe)
            }
        let tracked = cleanup.track(server)
        defer {
            server.send(SIGTERM)
            server.waitUntilExit()
            cleanup.untrack(tracked)
        }
        let ports = try Self.readPorts(server.standardOutput!)

        var clientOptions = options
        clientOptions.port = ports.rpc
        clientOptions.echoPort = ports.echo
        clientOptions.certificate = file("wallet.pem")
        clientOptions.key = file("wallet.key")
        clientOptions.ca = file("ca.pem")
        let load =
            (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
            .split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        print(
            "== \(Self.timestamp()) UTC  \(ProcessInfo.processInfo.activeProcessorCount) cores  "
                + "load avg before: \(load)  PIN=\(options.pin.rawValue) SECS=\(options.seconds) "
                + "WARMUP=\(options.warmup)")
        let results = try await BenchClient(options: clientOptions, serverPID: server.pid).run()
        for result in results { print(result.resultLine) }
        print()
        print(BenchResult.tableHeader)
        for result in results { print(result.tableRow) }
    }

    /// Reads the server's `PORT n ECHO m` line; the server's stdout ends (and this fails) if it could not start.
    private static func readPorts(_ handle: FileHandle) throws -> (rpc: UInt16, echo: UInt16) {
        var text = ""
        while !text.contains("\n") {
            let chunk = handle.availableData
            guard !chunk.isEmpty else { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        let words = text.split(separator: "\n").first?.split(separator: " ") ?? []
        guard words.count == 4, words[0] == "PORT", words[2] == "ECHO", let rpc = UInt16(words[1]),
            let echo = UInt16(words[3])
        else {
            throw BenchError("the server did not report its ports (it printed: \(text))")
        }
        return (rpc, echo)
    }

    private func runTool(_ path: String, _ arguments: [String]) throws {
        let termination = try SpawnedProcess(path, arguments, standardOutput: .nullDevice).waitUntilExit()
        guard termination.reason == .exit, termination.status == 0 else {
            throw BenchError("\(path) \(arguments.joined(separator: " ")) failed (\(termination.status))")
        }
    }

    private static func executablePath() throws -> String {
        try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    }

    /// Tools/gen-certs of the checkout this binary was built in (found above the working directory or the
    /// executable, which SwiftPM puts in .build/<configuration>/).
    private static func genCerts() throws -> String {
        var starts = [FileManager.default.currentDirectoryPath]
        if let me = try? executablePath() { starts.append((me as NSString).deletingLastPathComponent) }
        for start in starts {
            var directory = URL(fileURLWithPath: start)
            while directory.path != "/" {
                let candidate = directory.appendingPathComponent("Tools/gen-certs").path
                if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
                directory.deleteLastPathComponent()
            }
        }
        throw BenchError("Tools/gen-certs not found above the working directory or the executable")
    }

    private static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date())
    }
}
