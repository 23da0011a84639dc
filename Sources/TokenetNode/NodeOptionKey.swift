import TokenetTransport

/// Every setting a node understands.
///
/// Command-line flags and config-file keys share one vocabulary: the key `data-dir` in a config file is the flag
/// `--data-dir`. One table therefore drives parsing, config validation and `--help`, so they cannot drift apart.
enum NodeOptionKey: String, CaseIterable, Sendable {
    case config
    case listen
    case cert
    case key
    case ca
    case tsp
    case issuer
    case wallet
    case dataDir = "data-dir"
    case logLevel = "log-level"
    case logFormat = "log-format"
    case readyFile = "ready-file"
    case fixtures
    case plaintext
    case idlePoll = "idle-poll-us"
    case keepalive
    case keepaliveTimeout = "keepalive-timeout"
    case idleTimeout = "idle-timeout"
    case helloTimeout = "hello-timeout"
    case drainTimeout = "drain-timeout"
    case peerConnections = "peer-connections"
    case addressHandshakes = "address-handshakes"
    case parentPID = "parent-pid"
    case help
    case version

    var flag: String { "--\(rawValue)" }

    /// The peer this key addresses, when it is a peer address.
    var peer: NodeRole? { NodeRole(rawValue: rawValue) }

    /// Whether the flag consumes the next argument (or `=value`).
    var takesValue: Bool {
        switch self {
        case .plaintext, .help, .version: return false
        default: return true
        }
    }

    /// Whether a config file may give the value as a JSON number.
    var isNumeric: Bool {
        switch self {
        case .idlePoll, .keepalive, .keepaliveTimeout, .idleTimeout, .helloTimeout, .drainTimeout, .peerConnections,
            .addressHandshakes, .parentPID:
            return true
        default: return false
        }
    }

    /// Whether the key may appear in a config file. `--config`, `--help` and `--version` only make sense as flags.
    var allowedInConfigFile: Bool {
        switch self {
        case .config, .help, .version: return false
        default: return true
        }
    }

    /// Whether the value is a filesystem path, resolved against the config file's directory when relative.
    var isPath: Bool {
        switch self {
        case .cert, .key, .ca, .dataDir, .readyFile, .fixtures: return true
        default: return false
        }
    }

    /// The keys that apply to a node: peer keys only for the peers it knows, `--fixtures` only where it is used.
    static func keys(for spec: NodeSpec) -> [NodeOptionKey] {
        allCases.filter { key in
            if key == .fixtures { return spec.usesFixtures }
            guard let peer = key.peer else { return true }
            return spec.knownPeers.contains(peer)
        }
    }

    var placeholder: String {
        switch self {
        case .config, .fixtures: return "FILE"
        case .listen, .tsp, .issuer, .wallet: return "HOST:PORT"
        case .cert, .key, .ca, .readyFile: return "PATH"
        case .dataDir: return "DIR"
        case .logLevel: return "LEVEL"
        case .logFormat: return "FORMAT"
        case .idlePoll, .peerConnections, .addressHandshakes: return "N"
        case .parentPID: return "PID"
        case .keepalive, .keepaliveTimeout, .idleTimeout, .helloTimeout, .drainTimeout: return "SECONDS"
        case .plaintext, .help, .version: return ""
        }
    }

    /// The placeholder in `spec`'s help: tsp-node's `--issuer` may name the issuer it is for.
    func placeholder(for spec: NodeSpec) -> String {
        self == .issuer && spec.routesIssuersByID ? "[ID=]HOST:PORT" : placeholder
    }

    /// The help line in `spec`'s help.
    func help(for spec: NodeSpec) -> String {
        if let peer, spec.requiredPeers.contains(peer) { return help + " Required." }
        guard self == .issuer && spec.routesIssuersByID else { return help }
        return "Issuer addresses: ID=HOST:PORT for the issuer registered as ID, HOST:PORT for the rest (repeatable)."
    }

    static let logLevels = LogLevel.allCases.map(\.name).joined(separator: "|")
    static let logFormats = LogFormat.allCases.map(\.rawValue).joined(separator: "|")

    var help: String {
        switch self {
        case .config: return "Read settings from a JSON file; flags given on the command line override it."
        case .listen:
            return "Address to accept connections on, IPv6 as [::1]:PORT (default 127.0.0.1:0, a free port)."
        case .cert: return "PEM certificate chain this node presents to its peers."
        case .key: return "PEM private key for --cert."
        case .ca: return "PEM CA bundle used to verify peers."
        case .tsp: return "Address of the token service provider (tsp-node)."
        case .issuer: return "Address of the card issuer (issuer-node)."
        case .wallet: return "Address of the wallet (wallet-node)."
        case .dataDir: return "Directory for this node's state (default tokenet-data/<node>)."
        case .logLevel:
            return "Least severe level logged: \(Self.logLevels) (default info); trace adds each message as JSON."
        case .logFormat: return "Log lines on stderr: \(Self.logFormats) (default text)."
        case .fixtures: return "JSON demo data (cardholders, accounts, cards, BIN ranges) loaded at start-up."
        case .readyFile: return "Once listening, write {\"node\",\"pid\",\"listen\"} here as JSON (atomically)."
        case .plaintext:
            return "Disable TLS (local debugging only; the node warns loudly). --plaintext=false undoes a config's."
        case .idlePoll:
            return "Microseconds the event loop polls after work before it sleeps "
                + "(default \(EventLoop.defaultIdlePollMicroseconds); 0 sleeps at once)."
        case .keepalive:
            return "Ping a peer after this many seconds without hearing from it (default 30; 0 never pings)."
        case .keepaliveTimeout:
            return "Close a connection whose ping stays unanswered this many seconds; its calls fail (default 20)."
        case .idleTimeout:
            return "Close a served connection after this many seconds without calls (default 0: never)."
        case .helloTimeout:
            return "Close a served connection whose peer sends no hello within this many seconds of connecting "
                + "(default 0: never)."
        case .drainTimeout:
            return "On SIGTERM/SIGINT/SIGHUP, give calls in progress this many seconds to finish, then end them "
                + "(default 10)."
        case .peerConnections:
            return "Connections one peer certificate may hold open; more are refused, with the reason "
                + "(default \(NodeOptions.defaultPeerConnections); 0: no limit)."
        case .addressHandshakes:
            return "TLS handshakes one address may have in progress; more connections are closed at once "
                + "(default \(NodeOptions.defaultAddressHandshakes); 0: no limit)."
        case .parentPID:
            return "Stop, as on SIGTERM, once process PID has ended (tokenet demo, scenario and up pass their own)."
        case .help: return "Show this help and exit."
        case .version: return "Show the version and exit."
        }
    }
}
