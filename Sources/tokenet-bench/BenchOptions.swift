import TokenetRPC
import TokenetTransport

/// The command-line options of every subcommand; each uses the ones it needs.
struct BenchOptions: Sendable {
    static let usage = """
        usage: tokenet-bench [run] [--seconds S] [--warmup S] [--pin same|split|none] [--cases a,b,...] [--idle-poll-us N]
                            [--deadline-ms N]
               tokenet-bench server --cert F --key F --ca F [--lifetime S] [--idle-poll-us N]
               tokenet-bench client --port P [--echo-port P] --cert F --key F --ca F [--seconds S] [--warmup S]
                                    [--cases a,b,...] [--idle-poll-us N] [--deadline-ms N]
               tokenet-bench compare [--pins none,same,split] [--rounds N] [--anchors DIR] [--seconds S] [--warmup S]
                                     [--deadline-ms N]
        cases: \(BenchCase.allCases.map(\.rawValue).joined(separator: ", ")) (default: all)
        transport: 100-byte echoes over Tokenet's TLS transport without the RPC layer (the server's second port,
        --echo-port), the floor under pingpong.
        --idle-poll-us: how long each event loop keeps polling after it was busy before it sleeps (default
        \(defaultIdlePollMicroseconds), as in the nodes); 0 sleeps at once, and the results are labelled tokenet-nopoll.
        compare measures Tokenet both ways.
        --deadline-ms: every call carries this deadline, as the nodes' calls to each other do (default: none); the
        results are labelled tokenet-deadline. compare then measures ping-pong and 64 in flight a third time that way.
        """

    enum Pinning: String, Sendable {
        case none, same, split
    }

    var seconds = 3.0
    var warmup = 0.5
    var pin = Pinning.none
    var cases = BenchCase.allCases
    /// `compare`: the pinnings to measure, rounds per pinning, and the anchors' folder.
    var pins: [Pinning] = [.none, .same, .split]
    var rounds = 1
    var anchors: String?
    var port: UInt16?
    /// The server's transport-echo port (the `transport` case).
    var echoPort: UInt16?
    var certificate: String?
    var key: String?
    var ca: String?
    /// The server exits by itself after this many seconds, so a forgotten server never lingers.
    var lifetime = 300.0
    /// Each event loop's idle poll (`EventLoop.idlePoll`), in microseconds.
    var idlePollMicroseconds = Self.defaultIdlePollMicroseconds

    /// The deadline each call carries (`CallOptions.timeout`), in milliseconds; nil for none.
    var deadlineMilliseconds: Int?

    static let defaultIdlePollMicroseconds = EventLoop.defaultIdlePollMicroseconds

    var idlePoll: Duration { .microseconds(idlePollMicroseconds) }

    /// The `impl` column: polling and sleeping loops are told apart in the tables.
    var implementation: String {
        (idlePollMicroseconds == 0 ? "tokenet-nopoll" : "tokenet") + (deadlineMilliseconds == nil ? "" : "-deadline")
    }

    /// What each benchmark call is made with.
    var callOptions: CallOptions { CallOptions(timeout: deadlineMilliseconds.map { .milliseconds($0) }) }

    init(parsing arguments: [String]) throws {
        var index = 0
        func value(_ name: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw BenchError("\(name) needs a value") }
            return arguments[index]
        }
        // Seconds as decimals of at most a day: `Double` took `1e9` (31 years) and `0x10` (16).
        func number(_ name: String) throws -> Double {
            let text = try value(name)
            guard DurationSyntax.isDecimal(text), let number = Double(text), number <= 86_400 else {
                throw BenchError("\(name) needs seconds from 0 to 86400, such as 5 or 0.5, not \(text)")
            }
            return number
        }
        while index < arguments.count {
            let name = arguments[index]
            switch name {
            case "--seconds": seconds = try number(name)
            case "--warmup": warmup = try number(name)
            case "--lifetime": lifetime = try number(name)
            case "--pin":
                let text = try value(name)
                guard let pinning = Pinning(rawValue: text) else { throw BenchError("--pin takes same, split or none") }
                pin = pinning
            case "--cases":
                let text = try value(name)
                guard !text.isEmpty else { throw BenchError("--cases needs at least one case\n\(Self.usage)") }
                cases = try text.split(separator: ",", omittingEmptySubsequences: false).map { name in
                    guard let known = BenchCase(rawValue: String(name)) else {
                        throw BenchError("unknown case \(name)\n\(Self.usage)")
                    }
                    return known
                }
            case "--port":
                let text = try value(name)
                guard let port = UInt16(text), port > 0 else {
                    throw BenchError("--port needs a TCP port, not \(text)")
                }
                self.port = port
            case "--echo-port":
                let text = try value(name)
                guard let port = UInt16(text), port > 0 else {
                    throw BenchError("--echo-port needs a TCP port, not \(text)")
                }
                echoPort = port
            case "--pins":
                pins = try value(name).split(separator: ",").map { text in
                    guard let pinning = Pinning(rawValue: String(text)) else {
                        throw BenchError("--pins takes none, same and split, separated by commas")
                    }
                    return pinning
                }
            case "--rounds":
                let text = try value(name)
                guard let count = Int(text), count >= 1 else { throw BenchError("--rounds needs a count of 1 or more") }
                rounds = count
            case "--idle-poll-us":
                let text = try value(name)
                guard let micros = Int(text), (0...1_000_000).contains(micros) else {
                    throw BenchError("--idle-poll-us needs microseconds from 0 to 1000000, not \(text)")
                }
                idlePollMicroseconds = micros
            case "--deadline-ms":
                let text = try value(name)
                guard let milliseconds = Int(text), (1...3_600_000).contains(milliseconds) else {
                    throw BenchError("--deadline-ms needs milliseconds from 1 to 3600000, not \(text)")
                }
                deadlineMilliseconds = milliseconds
            case "--anchors": anchors = try value(name)
            case "--cert": certificate = try value(name)
            case "--key": key = try value(name)
            case "--ca": ca = try value(name)
            default: throw BenchError("unknown option \(name)\n\(Self.usage)")
            }
            index += 1
        }
        guard seconds > 0 else { throw BenchError("--seconds must be above 0") }
    }

    /// The certificate, key and CA files, which the server and client subcommands need.
    func credentials() throws -> (certificate: String, key: String, ca: String) {
        guard let certificate, let key, let ca else { throw BenchError("--cert, --key and --ca are needed") }
        return (certificate, key, ca)
    }
}
