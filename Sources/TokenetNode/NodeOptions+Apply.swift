import Foundation

extension NodeOptions {
    /// Applies one setting, checking its value. Later settings override earlier ones, which is how flags win
    /// over the config file.
    mutating func apply(_ setting: NodeSetting) throws(NodeError) {
        let errorCode: NodeError.Code = setting.origin == .flag ? .usage : .config
        func bad(_ expectation: String, _ got: String) -> NodeError {
            NodeError(errorCode, "\(setting.label): expected \(expectation), got '\(NodeError.shown(got))'")
        }

        switch (setting.key, setting.value) {
        case (.plaintext, .bool(let on)):
            plaintext = on
        case (.plaintext, .string(let text)):
            throw bad("true or false", text)
        case (_, .bool(let flag)):
            throw bad("a string", String(flag))
        case (let key, .string(let text)):
            try apply(key: key, text: text, origin: setting.origin, bad: bad)
        }
    }

    private mutating func apply(
        key: NodeOptionKey, text: String, origin: NodeSetting.Origin, bad: (String, String) -> NodeError
    ) throws(NodeError) {
        /// A peer's address may name its host (looked up when the node connects); --listen binds an IP address.
        func address(listening: Bool = false) throws(NodeError) -> HostPort {
            guard let address = HostPort(parsing: text) else {
                guard HostPort.portPastRange(in: text) == nil else {
                    throw bad("HOST:PORT with a port from \(listening ? 0 : 1) to 65535, such as 127.0.0.1:7001", text)
                }
                throw bad("HOST:PORT such as 127.0.0.1:7001, with an IPv6 address in brackets ([::1]:7001)", text)
            }
            // A zone (`%eth0`) is the part in the way, not the form of the address.
            if address.zoneRefusal != nil {
                throw bad("an address without an IPv6 zone (%NAME), such as [::1]:7001 or 127.0.0.1:7001", text)
            }
            // Port 0 binds any free port, but calls no peer: a node given it started, and failed every call to
            // that peer after half a minute of connection attempts.
            guard listening || address.port != 0 else {
                throw bad("HOST:PORT with a port from 1 to 65535 (0 only listens), such as 127.0.0.1:7001", text)
            }
            if listening {
                guard address.hostIsIPOrLocalhost else {
                    throw bad(
                        "an IP address (0.0.0.0, or [::] for IPv6 and IPv4, for every interface) or localhost with a "
                            + "port", text)
                }
                if let refusal = address.listenRefusal {
                    throw bad(
                        "an address of this machine that takes connections (\(refusal)), such as 127.0.0.1, [::1], "
                            + "0.0.0.0 or [::] for every interface", text)
                }
            } else {
                guard address.hostIsIPOrName else {
                    throw bad("an IP address or host name with a port, such as 127.0.0.1:7001 or [::1]:7001", text)
                }
            }
            return address
        }
        /// Seconds, to the millisecond, up to a day; zero (when allowed) turns the timer off and reads as nil.
        /// `zero` says what 0 means where it is allowed: "off" for a timer, "none" for the time a drain gives.
        func milliseconds(allowingZero: Bool, zero: String = "off") throws(NodeError) -> Int? {
            let expectation =
                allowingZero
                ? "seconds: 0 (\(zero)), or from 0.001 to 86400, such as 30 or 0.5"
                : "seconds from 0.001 to 86400, such as 20 or 0.5"
            guard let value = PlainDecimal.parse(text), (0...86_400).contains(value) else {
                throw bad(expectation, text)
            }
            let milliseconds = Int((value * 1000).rounded())
            if milliseconds == 0 {
                guard allowingZero && value == 0 else { throw bad(expectation, text) }
                return nil
            }
            return milliseconds
        }
        func path() throws(NodeError) -> String {
            guard !text.isEmpty else { throw bad("a path", text) }
            return Self.resolve(path: text, origin: origin)
        }

        switch key {
        case .listen: listen = try address(listening: true)
        case .tsp: peers[.tsp] = try address()
        case .issuer:
            // ID=HOST:PORT: the address of one issuer (by the id it registers with); HOST:PORT: of every other.
            // The last "=": an address has none, and an issuer id may (the fixture and the TSP take any id of 1 to 64
            // characters without spaces; a narrower rule here refused ids the TSP had registered, whose cards could
            // then be decided only by the stand-in).
            if let equals = text.lastIndex(of: "=") {
                let id = String(text[..<equals])
                // A card number is said below in the words of a route that would never apply.
                if !IdentifierRules.holdsCardNumber(identifier: id), let problem = IdentifierRules.problem(id) {
                    throw bad("HOST:PORT or ID=HOST:PORT with an issuer id of \(problem)", text)
                }
                // No issuer registers with such an id (the TSP refuses ids that hold a card number), so the route
                // would never apply.
                guard !IdentifierRules.holdsCardNumber(identifier: id) else {
                    throw bad("ID=HOST:PORT with an issuer id that does not read as a card number", text)
                }
                let rest = String(text[text.index(after: equals)...])
                if HostPort(parsing: rest)?.zoneRefusal != nil {
                    throw bad(
                        "ID=HOST:PORT with an address without an IPv6 zone (%NAME), such as tokenet-bank=[::1]:7002",
                        text)
                }
                guard let route = HostPort(parsing: rest), route.hostIsIPOrName else {
                    throw bad("ID=HOST:PORT such as tokenet-bank=127.0.0.1:7002", text)
                }
                guard route.port != 0 else {
                    throw bad("ID=HOST:PORT with a port from 1 to 65535, such as tokenet-bank=127.0.0.1:7002", text)
                }
                issuerRoutes[id] = route
            } else {
                peers[.issuer] = try address()
            }
        case .wallet: peers[.wallet] = try address()
        case .cert: certificatePath = try path()
        case .key: privateKeyPath = try path()
        case .ca: caPath = try path()
        case .dataDir: dataDirectory = try path()
        case .readyFile: readyFile = try path()
        case .fixtures: fixturesPath = try path()
        case .logLevel:
            guard let level = LogLevel(name: text) else { throw bad(NodeOptionKey.logLevels, text) }
            logLevel = level
        case .logFormat:
            guard let format = LogFormat(rawValue: text) else { throw bad(NodeOptionKey.logFormats, text) }
            logFormat = format
        case .idlePoll:
            guard let micros = Int(text), (0...1_000_000).contains(micros) else {
                throw bad("microseconds from 0 to 1000000", text)
            }
            idlePollMicroseconds = micros
        case .keepalive:
            keepaliveMilliseconds = try milliseconds(allowingZero: true)
        case .keepaliveTimeout:
            keepaliveTimeoutMilliseconds = try milliseconds(allowingZero: false) ?? keepaliveTimeoutMilliseconds
        case .idleTimeout:
            idleTimeoutMilliseconds = try milliseconds(allowingZero: true)
        case .helloTimeout:
            helloTimeoutMilliseconds = try milliseconds(allowingZero: true)
        case .drainTimeout:
            drainTimeoutMilliseconds = try milliseconds(allowingZero: true, zero: "no time to finish") ?? 0
        case .peerConnections:
            guard let limit = Int(text), (0...1_000_000).contains(limit) else {
                throw bad("a number of connections from 0 (no limit) to 1000000", text)
            }
            peerConnections = limit == 0 ? nil : limit
            peerConnectionsGiven = true
        case .addressHandshakes:
            guard let limit = Int(text), (0...1_000_000).contains(limit) else {
                throw bad("a number of handshakes from 0 (no limit) to 1000000", text)
            }
            addressHandshakes = limit == 0 ? nil : limit
            addressHandshakesGiven = true
        case .parentPID:
            // Process 1 too: `tokenet up` as a container's entrypoint is process 1, and passes its own pid.
            guard let pid = Int(text), pid >= 1, pid <= Int(Int32.max) else {
                throw bad("a process id (1 or above)", text)
            }
            parentPID = pid
        case .config, .help, .version, .plaintext:
            // Handled by the command-line scanner; never reaches here as a string setting.
            throw bad("no value", text)
        }
    }

    /// Relative paths in a config file are relative to the file, so a config can sit next to its certificates.
    private static func resolve(path: String, origin: NodeSetting.Origin) -> String {
        guard case .configFile(let configPath) = origin, !path.hasPrefix("/") else { return path }
        let directory = (configPath as NSString).deletingLastPathComponent
        return directory.isEmpty ? path : (directory as NSString).appendingPathComponent(path)
    }

    /// Checks settings that are only wrong in combination; `label` names a setting as it was given (`--cert`, or
    /// `"cert" in node.json`).
    func validate(label: (NodeOptionKey) -> String = { $0.flag }) throws(NodeError) {
        if (certificatePath == nil) != (privateKeyPath == nil) {
            throw NodeError(.config, "\(label(.cert)) and \(label(.key)) must be given together")
        }
        if plaintext {
            // The TLS files were ignored without a word (the loud warning said only that TLS is off), where the CLI
            // refuses the same pair as contradictory.
            let given = [(certificatePath, NodeOptionKey.cert), (privateKeyPath, .key), (caPath, .ca)]
                .filter { $0.0 != nil }.map { label($0.1) }
            if !given.isEmpty {
                let source = label(.plaintext)
                let fix =
                    source == NodeOptionKey.plaintext.flag
                    ? "give either --plaintext or the TLS files"
                    : "take \"plaintext\" out of that file, or give --plaintext=false to use TLS"
                throw NodeError(
                    .config, "\(source) turns TLS off, so \(given.joined(separator: ", ")) would be ignored; \(fix)")
            }
        } else {
            let missing = [
                (certificatePath, "--cert"), (privateKeyPath, "--key"), (caPath, "--ca"),
            ].filter { $0.0 == nil }.map(\.1)
            if !missing.isEmpty {
                throw NodeError(
                    .config,
                    "TLS needs \(missing.joined(separator: ", ")) (or --plaintext for local debugging only)"
                )
            }
        }
    }
}
