import Foundation
import TokenetFaults
import TokenetWire

/// A scripted flow across the three parties: calls with the outcomes they must have, faults on the links between
/// the parties, and nodes stopped, killed and started again. `tokenet scenario FILE` runs one against a fresh
/// sandbox; the language is in `Scenario+Parsing.swift` and in the README ("Scripted flows").
///
/// The script is parsed and checked whole before anything runs, so a typo on line 40 is reported before the nodes
/// start rather than after the first 39 steps.
public struct Scenario: Sendable, Equatable {
    /// Where the script came from (a file name), for messages.
    public var source: String
    public var steps: [ScenarioStep]

    public init(source: String, steps: [ScenarioStep]) {
        self.source = source
        self.steps = steps
    }

    /// Whether a step stops, kills or starts a node, or faults a link: only nodes the runner started itself, behind
    /// its own proxies, can be steered that way.
    public var controlsProcesses: Bool { steps.contains { $0.action.controlsProcesses } }
}

/// One step and the script line it came from (1-based).
public struct ScenarioStep: Sendable, Equatable {
    public var line: Int
    public var action: Action

    public init(line: Int, _ action: Action) {
        self.line = line
        self.action = action
    }

    public enum Action: Sendable, Equatable {
        /// Calls a node as the operator.
        case call(ScenarioCall)
        /// Sets the fault of a link, as `tokenet proxy` reads it on standard input.
        case fault(ScenarioLink, FaultCommand)
        /// SIGTERM, then the node must exit 0 within the run's timeout.
        case stop(ScenarioParty)
        /// SIGKILL: the node gets no chance to drain or close its connections.
        case kill(ScenarioParty)
        /// Starts a stopped or killed node again, on its address and with its data; waits until it is ready.
        case start(ScenarioParty)
        /// SIGSTOP: the node freezes with its connections open, as a stalled machine or a long pause would; its peers
        /// see silence, not a close, until their keepalive gives up.
        case pause(ScenarioParty)
        /// SIGCONT: a paused node goes on where it stopped.
        case resume(ScenarioParty)
        /// The deadline of the calls on later lines.
        case deadline(Duration)
        case sleep(Duration)
        /// Prints a line (with `${NAME}`s filled in).
        case echo(String)
        /// The certificate later calls and watches present: `operator` (the default), or a party's own, to act as
        /// that party (the issuer listening to the wallet's events, a wallet calling the TSP directly).
        case identity(String)
        /// `header KEY: VALUE` adds request metadata to the calls and watches below; `header clear` removes it all.
        /// The text as written (`KEY: VALUE`), or nil to clear.
        case header(String?)
        /// Opens a stream that collects its messages in the background while later steps run.
        case watch(ScenarioWatch)
        /// Waits until a watch has received a message that matches.
        case await(ScenarioAwait)
        /// Encrypts card data to the TSP's current key, as a wallet sends it, and keeps it for later lines.
        case encrypt(ScenarioEncrypt)
        /// Starts a call in the background under a name, while later steps run (another call racing it).
        case spawn(ScenarioSpawn)
        /// Waits for a spawned call to end; its outcome is judged as a call's is.
        case join(ScenarioJoin)
    }
}

/// `spawn NAME PARTY METHOD [JSON]`: a call made in the background while the lines below run, so that a script can
/// race two calls (a suspend against a delete, a payment against a suspension) and see which one wins. Its outcome
/// is judged at `join NAME`.
public struct ScenarioSpawn: Sendable, Equatable {
    public var name: String
    /// The call, with no expectation of its own: `join` carries it.
    public var call: ScenarioCall

    public init(name: String, call: ScenarioCall) {
        self.name = name
        self.call = call
    }
}

/// `join NAME`: waits for the spawned call NAME to end; `expect` and `save` lines may follow, as after a call
/// (without it the call must end OK).
public struct ScenarioJoin: Sendable, Equatable {
    public var name: String
    public var expectation: ScenarioExpectation
    public var saves: [ScenarioCall.Save]

    public init(name: String, expectation: ScenarioExpectation = .init(), saves: [ScenarioCall.Save] = []) {
        self.name = name
        self.expectation = expectation
        self.saves = saves
    }
}

/// `encrypt NAME CARD_NUMBER MM/YY [CVC]`: the card data a wallet sends the TSP (`EncryptedCardData`, a JWE to the
/// TSP's current key, asked of the running TSP), kept as the object `${NAME}` for a request's `encryptedCardData`:
/// a script acting as a wallet of its own (`identity wallet`) calls CheckEligibility with a card of its choosing.
public struct ScenarioEncrypt: Sendable, Equatable {
    public var name: String
    /// The card number's digits: never printed but masked, never sent but encrypted.
    public var cardNumber: String
    public var expiry: String
    public var securityCode: String

    public init(name: String, cardNumber: String, expiry: String, securityCode: String = "") {
        self.name = name
        self.cardNumber = cardNumber
        self.expiry = expiry
        self.securityCode = securityCode
    }
}

/// `watch NAME PARTY METHOD [JSON]`: a server-streaming (or bidirectional) call kept open in the background, such
/// as the wallet's event stream or a notification subscription, whose messages later `await` lines look at.
public struct ScenarioWatch: Sendable, Equatable {
    public var name: String
    public var party: ScenarioParty
    public var method: String
    /// As written, `${NAME}`s not yet filled in.
    public var request: String

    public init(name: String, party: ScenarioParty, method: String, request: String) {
        self.name = name
        self.party = party
        self.method = method
        self.request = request
    }
}

/// `await NAME [within D] [JSON]`: the next message of watch NAME (after the one the last `await` took) that
/// contains JSON, within D (the call deadline when not given); `save` lines may follow, reading that message.
public struct ScenarioAwait: Sendable, Equatable {
    public var name: String
    public var within: Duration?
    /// The object the message must contain, as written; nil for any message.
    public var contains: String?
    public var saves: [ScenarioCall.Save]

    public init(name: String, within: Duration? = nil, contains: String? = nil, saves: [ScenarioCall.Save] = []) {
        self.name = name
        self.within = within
        self.contains = contains
        self.saves = saves
    }
}

extension ScenarioStep.Action {
    /// Whether the step stops, kills, starts, pauses or resumes a node, or faults a link.
    public var controlsProcesses: Bool {
        switch self {
        case .stop, .kill, .start, .pause, .resume, .fault: true
        case .call, .deadline, .sleep, .echo, .identity, .header, .watch, .await, .encrypt, .spawn, .join: false
        }
    }
}

/// The parties a scenario runs, by their role names in certificates and on the command line.
public enum ScenarioParty: String, Sendable, CaseIterable, CustomStringConvertible {
    case tsp
    case issuer
    case wallet

    public var description: String { rawValue }
}

/// A connection one party opens to another, which the sandbox carries through a fault proxy: `tsp->issuer` is the
/// TSP's connection to the issuer (provisioning decisions, ID&V), and so on.
public struct ScenarioLink: Sendable, Hashable, CustomStringConvertible {
    public var from: ScenarioParty
    public var to: ScenarioParty

    public init(from: ScenarioParty, to: ScenarioParty) {
        self.from = from
        self.to = to
    }

    /// Every connection a node opens to a peer (`tsp-node --issuer`, `issuer-node --tsp --wallet`, `wallet-node
    /// --tsp --issuer`).
    public static let all: [ScenarioLink] = [
        .init(from: .tsp, to: .issuer), .init(from: .issuer, to: .tsp), .init(from: .issuer, to: .wallet),
        .init(from: .wallet, to: .tsp), .init(from: .wallet, to: .issuer),
    ]

    public var description: String { "\(from)->\(to)" }
}

/// A call step: the request, what its outcome must be, and the fields kept for later lines.
public struct ScenarioCall: Sendable, Equatable {
    public var party: ScenarioParty
    /// As written: `pkg.Service/Method`, `/pkg.Service/Method` or `pkg.Service.Method`.
    public var method: String
    /// The request JSON as written, `${NAME}`s not yet filled in: one object, or several for a client-streaming
    /// method; `{}` when the line gives none.
    public var request: String
    public var expectation: ScenarioExpectation
    public var saves: [Save]

    public init(
        party: ScenarioParty, method: String, request: String, expectation: ScenarioExpectation = .init(),
        saves: [Save] = []
    ) {
        self.party = party
        self.method = method
        self.request = request
        self.expectation = expectation
        self.saves = saves
    }

    /// `save NAME FIELD [match REGEX]`: the value of FIELD in the call's last response becomes `${NAME}`; with a
    /// regular expression, the part of the text it matches (its first capture group, when it has one), such as the
    /// one-time code in an outbox message.
    public struct Save: Sendable, Equatable {
        public var name: String
        public var field: JSONPath
        /// The regular expression, checked when the script is parsed.
        public var pattern: String?
        public var line: Int

        public init(name: String, field: JSONPath, pattern: String? = nil, line: Int) {
            self.name = name
            self.field = field
            self.pattern = pattern
            self.line = line
        }

        /// The value to keep from the field's `value`, or why there is none.
        ///
        /// Some expressions take exponential time on some text (`^(a+)+$` on a long run of `a` and one `!`), so a
        /// match is given at most `limit` and gives up early once `stop` says so (a Ctrl-C): it fails with
        /// `.regexTimeLimit` rather than holding the run or a thread. The expression is compiled by the parser
        /// (`Save.compile`), so compiling cannot fail here.
        public func extract(
            from value: JSONValue, limit: Duration = Save.regexLimit, stop: () -> Bool = { false }
        ) -> Result<JSONValue, ScenarioError> {
            guard let pattern else { return .success(value) }
            let text: String
            switch value {
            case .string(let string): text = string
            case .number(let number): text = number
            default:
                return .failure(
                    ScenarioError(.missingField, "\(field) is \(value.kindName), not text to match /\(pattern)/"))
            }
            guard let regex = try? Save.compile(pattern) else {
                return .failure(ScenarioError(.syntax, "'\(pattern)' is not a regular expression"))
            }
            let deadline = ContinuousClock.now + limit
            var found: NSTextCheckingResult?
            var stopped = false
            // With .reportProgress the block is also called while a match is in progress (ICU's match callback, about
            // every quarter of a millisecond), which is the one place a running match can be stopped.
            withoutActuallyEscaping(stop) { stop in
                regex.enumerateMatches(
                    in: text, options: [.reportProgress], range: NSRange(text.startIndex..., in: text)
                ) { result, _, halt in
                    if let result {
                        found = result
                        halt.pointee = true
                    } else if ContinuousClock.now > deadline || stop() {
                        stopped = true
                        halt.pointee = true
                    }
                }
            }
            if stopped {
                return .failure(
                    ScenarioError(
                        .regexTimeLimit,
                        "/\(pattern)/ did not finish matching \(field) within \(FaultCommand.format(limit)); "
                            + "write an expression that cannot backtrack without end"))
            }
            guard let found else {
                return .failure(ScenarioError(.missingField, "/\(pattern)/ does not match \(value.text())"))
            }
            let range = found.numberOfRanges > 1 ? found.range(at: 1) : found.range
            return .success(.string(Range(range, in: text).map { String(text[$0]) } ?? ""))
        }

        /// The longest a `save … match` may take.
        public static let regexLimit = Duration.seconds(5)

        /// The expression of a `match`, in ICU's syntax (as `NSRegularExpression` reads it).
        public static func compile(_ pattern: String) throws -> NSRegularExpression {
            try NSRegularExpression(pattern: pattern)
        }
    }
}
