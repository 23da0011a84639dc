import Foundation
import TokenetNode
import TokenetTransport

/// `tokenet-broker-bench`: the notification broker's durable delivery rate and latency.
///
/// Each run opens a fresh broker on a SQLite file on disk (WAL, `synchronous=FULL`, group commit), serves it over
/// mutual TLS on 127.0.0.1, and connects the subscribers over TLS, each with its own certificate and the nodes'
/// real subscriber runtime (`NotificationSubscriber`: processed-id journal written per message and fsynced before
/// each acknowledgement, batched acknowledgements). Publishers are tasks in the broker's process, as the TSP's
/// own components are. A message counts once it is persisted, delivered, handled and its acknowledgement is
/// committed by the broker and confirmed to the subscriber.
///
///     tokenet-broker-bench [--messages N] [--subscribers 1,8] [--publishers P] [--window W]
///                          [--outstanding N] [--data-dir DIR] [--idle-poll-us N]
@main
struct BrokerBenchMain {
    static func main() async {
        // A bad option exits 2, as the nodes' and the CLI's do; a run that fails, 1.
        let options: BrokerBenchOptions
        do {
            options = try BrokerBenchOptions(parsing: Array(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("tokenet-broker-bench: \(error)\n".utf8))
            exit(2)
        }
        if options.help {
            print(BrokerBenchOptions.usage)
            return
        }
        do {
            try await BrokerBench(options: options).run()
        } catch {
            InterruptCleanup.parkIfStopping()
            FileHandle.standardError.write(Data("tokenet-broker-bench: \(error)\n".utf8))
            exit(1)
        }
    }
}

struct BrokerBenchError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

struct BrokerBenchOptions: Sendable {
    static let usage = """
        usage: tokenet-broker-bench [--messages N] [--subscribers 1,8] [--publishers P] [--window W]
                                    [--outstanding N] [--data-dir DIR] [--idle-poll-us N]
          --messages     messages per run (default 200000), each to one subscriber, spread evenly
          --subscribers  one run per count (default 1,8)
          --publishers   concurrent publishing tasks (default 1024), each waiting for its publish to commit
          --window       each subscriber's max_in_flight (default 2048)
          --outstanding  messages published and not yet acknowledged, at most (default 4096): publishers wait
                         beyond it, so latency measures the pipeline and not an ever-growing backlog
          --data-dir     where the runs' databases go (default: a new directory under the system's temp dir)
          --idle-poll-us the event loops' idle poll in microseconds (default \(EventLoop.defaultIdlePollMicroseconds),
                         as in the nodes; 0 sleeps at once)
        """

    var messages = 200_000
    var subscribers = [1, 8]
    var publishers = 1024
    var window = 2048
    var outstanding = 4096
    var dataDirectory: String?
    var idlePollMicroseconds = EventLoop.defaultIdlePollMicroseconds
    var help = false

    /// The most subscribers one run connects.
    static let maxSubscribers = 1_000

    init(parsing arguments: [String]) throws {
        var index = 0
        func value(_ name: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw BrokerBenchError("\(name) needs a value") }
            return arguments[index]
        }
        func count(_ name: String, _ text: String) throws -> Int {
            guard let number = Int(text), number > 0 else {
                throw BrokerBenchError("\(name) needs a positive whole number, not \(text)")
            }
            return number
        }
        while index < arguments.count {
            let name = arguments[index]
            switch name {
            case "--messages": messages = try count(name, try value(name))
            case "--publishers": publishers = try count(name, try value(name))
            case "--window": window = try count(name, try value(name))
            case "--outstanding": outstanding = try count(name, try value(name))
            case "--subscribers":
                // Each subscriber is a certificate made with openssl and a TLS connection of this process: past a
                // thousand the certificates alone took minutes, and "" or "1,,8" ran something else than asked.
                let text = try value(name)
                subscribers = try text.split(separator: ",", omittingEmptySubsequences: false).map {
                    try count(name, String($0))
                }
                guard let largest = subscribers.max(), largest <= Self.maxSubscribers else {
                    throw BrokerBenchError(
                        "--subscribers takes counts of 1 to \(Self.maxSubscribers), comma-separated, not \(text)")
                }
            case "--data-dir": dataDirectory = try value(name)
            case "--idle-poll-us":
                let text = try value(name)
                guard let micros = Int(text), (0...1_000_000).contains(micros) else {
                    throw BrokerBenchError("--idle-poll-us needs microseconds from 0 to 1000000, not \(text)")
                }
                idlePollMicroseconds = micros
            case "-h", "--help", "help": help = true
            default: throw BrokerBenchError("unknown option \(name)\n\(Self.usage)")
            }
            index += 1
        }
    }
}
