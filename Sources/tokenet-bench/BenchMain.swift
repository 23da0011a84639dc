import Foundation
import TokenetNode

/// `tokenet-bench`: measures the RPC layer over mutual TLS on loopback, in the shape of the reference anchors
/// (`tlsecho` and gRPC C++), so the figures can be put side by side.
///
///     tokenet-bench [run] [--seconds S] [--warmup S] [--pin same|split|none] [--cases a,b,…]
///     tokenet-bench server --cert F --key F --ca F [--lifetime S]
///     tokenet-bench client --port P --cert F --key F --ca F [--seconds S] [--warmup S] [--cases a,b,…]
///     tokenet-bench compare [--pins none,same,split] [--rounds N] [--anchors DIR] [--seconds S] [--warmup S]
@main
struct BenchMain {
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        // Asked for anywhere (`tokenet-bench --help`, `tokenet-bench server -h`), help wins over everything else.
        if arguments.contains(where: { ["-h", "--help", "help"].contains($0) }) {
            print(BenchOptions.usage)
            return
        }
        let command = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 } ?? "run"
        if arguments.first == command { arguments.removeFirst() }
        // A bad option (or subcommand) exits 2, as the nodes' and the CLI's do; a run that fails, 1.
        let options: BenchOptions
        do {
            guard ["run", "server", "client", "compare"].contains(command) else {
                throw BenchError("unknown subcommand \(command)\n\(BenchOptions.usage)")
            }
            options = try BenchOptions(parsing: arguments)
        } catch {
            FileHandle.standardError.write(Data("tokenet-bench: \(error)\n".utf8))
            exit(2)
        }
        do {
            switch command {
            case "run": try await BenchRun(options: options).run()
            case "server": try await BenchServer(options: options).run()
            case "client": try await BenchClient(options: options).runAndPrint()
            case "compare": try await BenchCompare(options: options).run()
            default: throw BenchError("unknown subcommand \(command)\n\(BenchOptions.usage)")
            }
        } catch {
            InterruptCleanup.parkIfStopping()
            FileHandle.standardError.write(Data("tokenet-bench: \(error)\n".utf8))
            exit(1)
        }
    }
}

/// Everything that stops a benchmark: bad options, a failed call, a wrong echo.
struct BenchError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
