import Foundation
import Testing

@testable import TokenetNode

@Suite struct NodeCommandLineTests {
    /// TLS material every "happy" command line carries, so tests exercise the default (TLS on) path.
    let tls = ["--cert", "c.pem", "--key", "c.key", "--ca", "ca.pem"]

    func options(_ arguments: [String], spec: NodeSpec = .wallet) throws -> NodeOptions {
        guard case .run(let options) = try NodeCommandLine.parse(arguments, spec: spec) else {
            Issue.record("expected a run command for \(arguments)")
            return NodeOptions()
        }
        return options
    }

    func error(_ arguments: [String], spec: NodeSpec = .wallet, config: String? = nil) -> NodeError? {
        do {
            _ = try NodeCommandLine.parse(arguments, spec: spec) { path throws(NodeError) in
                guard let config else { throw NodeError(.config, "cannot read config file \(path)") }
                return Data(config.utf8)
            }
            return nil
        } catch {
            return error
        }
    }

    /// Bytes that are no UTF-8 inside a string made it "must be a string": the file's encoding is what is wrong.
    @Test func aConfigFileThatIsNotUTF8SaysSo() {
        let data = Data(#"{"data-dir": ""#.utf8) + Data([0xFF, 0xFE]) + Data(#""}"#.utf8)
        #expect(throws: NodeError.self) { try NodeConfigFile.settings(from: data, path: "c.json", spec: .tsp) }
        do {
            _ = try NodeConfigFile.settings(from: data, path: "c.json", spec: .tsp)
        } catch {
            #expect(error.message == "config file c.json is not UTF-8 text: JSON is written in UTF-8")
        }
    }

    /// A second --config was read instead of the first, which went unchecked: refused, naming both.
    @Test func aSecondConfigFileIsRefused() {
        let failure = error(["--config", "a.json", "--config", "b.json"], config: "{}")
        #expect(failure?.exitStatus == 2)
        #expect(
            failure?.message
                == "--config is given twice (a.json, b.json): a node reads one config file; merge them, or give the "
                + "second one's settings as flags", "\(String(describing: failure))")
        // One file under two names is one file.
        #expect(
            error(["--config", "a.json", "--config", "./a.json", "--tsp", "127.0.0.1:1", "--plaintext"], config: "{}")
                == nil)
    }

    @Test func fixturesIsAnIssuerOption() throws {
        #expect(
            try options(tls + ["--fixtures", "demo/issuer.json"], spec: .issuer).fixturesPath == "demo/issuer.json")
        #expect(try options(tls + ["--wallet", "127.0.0.1:7003"], spec: .issuer).peers[.wallet] != nil)
        let refused = error(tls + ["--fixtures", "demo/issuer.json"], spec: .tsp)
        #expect(refused?.message == "unknown option '--fixtures' (tsp-node does not use it)")
    }

    @Test func defaultsNeedOnlyTLSMaterial() throws {
        let parsed = try options(tls)
        var expected = NodeOptions()
        expected.certificatePath = "c.pem"
        expected.privateKeyPath = "c.key"
        expected.caPath = "ca.pem"
        // Compared outside #expect: with Swift 6.3.1, `#expect(parsed == expected)` on this 216-byte struct captured
        // the right-hand value as uninitialized memory (its last field read as a random number) while `==` itself
        // was true.
        let same = parsed == expected
        #expect(same, "parsed \(parsed), expected \(expected)")
        #expect(parsed.parentPID == nil)
        #expect(parsed.listen == HostPort(host: "127.0.0.1", port: 0))
        #expect(parsed.logLevel == .info)
        #expect(parsed.logFormat == .text)
        #expect(parsed.idlePollMicroseconds == 50)
        #expect(parsed.keepaliveMilliseconds == 30_000)
        #expect(parsed.keepaliveTimeoutMilliseconds == 20_000)
        #expect(parsed.idleTimeoutMilliseconds == nil)
        #expect(parsed.drainTimeoutMilliseconds == 10_000)
        #expect(parsed.resolvedDataDirectory(node: "wallet-node") == "tokenet-data/wallet-node")
    }

    @Test func everyFlagIsApplied() throws {
        let parsed = try options(
            tls + [
                "--listen", "0.0.0.0:7003", "--tsp", "127.0.0.1:7001", "--issuer=127.0.0.1:7002",
                "--data-dir", "/var/w", "--log-level", "trace", "--log-format=json", "--ready-file", "/tmp/r.json",
                "--idle-poll-us", "0", "--keepalive", "0.25", "--keepalive-timeout=2", "--idle-timeout", "600",
                "--drain-timeout", "2.5", "--parent-pid", "4242",
            ])
        #expect(parsed.listen == HostPort(host: "0.0.0.0", port: 7003))
        #expect(
            parsed.peers == [
                .tsp: HostPort(host: "127.0.0.1", port: 7001), .issuer: HostPort(host: "127.0.0.1", port: 7002),
            ])
        #expect(parsed.dataDirectory == "/var/w")
        #expect(parsed.logLevel == .trace)
        #expect(parsed.logFormat == .json)
        #expect(parsed.readyFile == "/tmp/r.json")
        #expect(parsed.idlePollMicroseconds == 0)
        #expect(parsed.keepaliveMilliseconds == 250)
        #expect(parsed.keepaliveTimeoutMilliseconds == 2000)
        #expect(parsed.idleTimeoutMilliseconds == 600_000)
        #expect(parsed.drainTimeoutMilliseconds == 2500)
        #expect(parsed.parentPID == 4242)
        #expect(parsed.plaintext == false)
    }

    /// Process 1 is a valid parent: `tokenet up` as a container's entrypoint runs as process 1 and passes its own.
    @Test func aParentPIDIsAPositiveProcessID() throws {
        for bad in ["0", "-5", "abc", "2147483648", "1.5"] {
            let refused = error(tls + ["--parent-pid", bad])
            #expect(
                refused?.message.contains("a process id (1 or above)") == true, "\(bad): \(String(describing: refused))"
            )
        }
        #expect(try options(tls + ["--parent-pid", "1"]).parentPID == 1)
    }

    /// A value an error quotes is cut, and kept on one line: 100,000 characters were quoted whole, and a line break
    /// split the message.
    @Test func aQuotedValueIsCutAndKeptOnOneLine() throws {
        let long = try #require(error(tls + ["--listen", String(repeating: "a", count: 100_000) + ":1"]))
        #expect(long.message.count < 600, "\(long.message.count) characters")
        #expect(long.message.contains("... (100002 characters, the last 99746 cut)"), "\(long.message.suffix(80))")
        let broken = try #require(error(tls + ["--log-level", "de\nbug"]))
        #expect(!broken.message.contains("\n") && broken.message.contains("de\\u000abug"), "\(broken.message)")
        let unknown = try #require(error(tls + ["--bo\ngus"]))
        #expect(!unknown.message.contains("\n"), "\(unknown.message)")
    }

    /// Seconds are typed as digits with an optional fraction; Swift's other number spellings were taken too.
    @Test func secondsAreDigitsWithAnOptionalFraction() throws {
        #expect(try options(tls + ["--keepalive", "0.5"]).keepaliveMilliseconds == 500)
        #expect(try options(tls + ["--drain-timeout", "30"]).drainTimeoutMilliseconds == 30_000)
        for bad in ["0x10", "1e3", "+5", ".5", "5.", "0x1p3", "1_000", " 5", "5 ", "-0", "nan", "inf"] {
            let refused = error(tls + ["--keepalive", bad])
            #expect(
                refused?.message.contains("--keepalive: expected seconds") == true,
                "\(bad): \(String(describing: refused))")
        }
        #expect(PlainDecimal.parse("12.250") == 12.25)
        #expect(PlainDecimal.parse("") == nil)
        #expect(PlainDecimal.parse("1.2.3") == nil)
    }

    /// A drain timeout of zero ends every call at once; a negative one is refused with the flag's name.
    @Test func drainTimeoutMayBeZeroButNotNegative() throws {
        #expect(try options(tls + ["--drain-timeout", "0"]).drainTimeoutMilliseconds == 0)
        #expect(throws: NodeError.self) { try options(tls + ["--drain-timeout=-1"]) }
    }

    /// The node's connections get these limits: pings on both sides, the idle limit only where it serves.
    @Test func keepaliveSettingsBecomeConnectionTimers() throws {
        let parsed = try options(tls + ["--keepalive", "5", "--keepalive-timeout", "1.5", "--idle-timeout", "60"])
        #expect(parsed.clientTimers.keepaliveInterval == .seconds(5))
        #expect(parsed.clientTimers.keepaliveTimeout == .milliseconds(1500))
        #expect(parsed.clientTimers.idleTimeout == nil)
        #expect(parsed.serverTimers.keepaliveInterval == .seconds(5))
        #expect(parsed.serverTimers.idleTimeout == .seconds(60))
        let off = try options(tls + ["--keepalive", "0", "--idle-timeout", "0"])
        #expect(off.keepaliveMilliseconds == nil)
        #expect(off.idleTimeoutMilliseconds == nil)
        #expect(!off.serverTimers.isEnabled)
    }

    /// A served connection whose peer stays silent is closed after the hello timeout when one is set (off unless
    /// set, and with 0). The connections the node opens keep no hello limit (their calls have deadlines).
    @Test func helloTimeoutLimitsServedConnectionsOnly() throws {
        let defaults = try options(tls)
        #expect(defaults.serverTimers.helloTimeout == nil)
        #expect(defaults.clientTimers.helloTimeout == nil)
        #expect(try options(tls + ["--hello-timeout", "2.5"]).serverTimers.helloTimeout == .milliseconds(2500))
        #expect(try options(tls + ["--hello-timeout=0"]).serverTimers.helloTimeout == nil)
    }

    /// The limits that keep one peer from taking the node's file descriptors are on unless turned off with 0.
    @Test func connectionLimitsAreOnByDefaultAndZeroTurnsThemOff() throws {
        let defaults = try options(tls)
        #expect(defaults.peerConnections == 64)
        #expect(defaults.addressHandshakes == 64)
        let set = try options(tls + ["--peer-connections", "5", "--address-handshakes=7"])
        #expect(set.peerConnections == 5)
        #expect(set.addressHandshakes == 7)
        let off = try options(tls + ["--peer-connections", "0", "--address-handshakes", "0"])
        #expect(off.peerConnections == nil)
        #expect(off.addressHandshakes == nil)
    }

    @Test func plaintextReplacesTLSMaterial() throws {
        #expect(try options(["--plaintext"]).plaintext)
    }

    @Test func laterFlagsWin() throws {
        let parsed = try options(tls + ["--log-level", "debug", "--log-level", "error"])
        #expect(parsed.logLevel == .error)
    }

    /// tsp-node calls each issuer at its own address (`ID=HOST:PORT`, repeated), and every other at the plain one.
    @Test func theTSPTakesAnAddressPerIssuer() throws {
        let parsed = try options(
            tls + [
                "--issuer", "bank-b=127.0.0.1:7003", "--issuer", "127.0.0.1:7002", "--issuer=bank_c.1=localhost:7004",
            ], spec: .tsp)
        #expect(parsed.peers == [.issuer: HostPort(host: "127.0.0.1", port: 7002)])
        #expect(
            parsed.issuerRoutes == [
                "bank-b": HostPort(host: "127.0.0.1", port: 7003), "bank_c.1": HostPort(host: "localhost", port: 7004),
            ])
        let wallet = try #require(error(tls + ["--issuer", "bank-b=127.0.0.1:7003"], spec: .wallet))
        #expect(wallet.code == .usage)
        #expect(
            wallet.description.contains("--issuer ID=HOST:PORT is for tsp-node; wallet-node takes --issuer HOST:PORT"))
        #expect(NodeSpec.tsp.helpText.contains("--issuer [ID=]HOST:PORT"))
        #expect(!NodeSpec.wallet.helpText.contains("ID="))
    }

    /// An issuer id given two addresses on the command line, or twice in the config file's list, is refused with
    /// both addresses named: the TSP kept the last one and dropped the other without a word. A command-line route
    /// still replaces the config file's route for the same id (`configFileListsIssuerAddresses`).
    @Test func anIssuerIDGivenTwoAddressesIsRefused() throws {
        let flags = try #require(
            error(
                tls + [
                    "--issuer", "bank-b=127.0.0.1:7003", "--issuer", "127.0.0.1:7002", "--issuer=bank-b=127.0.0.1:7005",
                ], spec: .tsp))
        #expect(flags.exitStatus == 2)
        #expect(
            flags.description
                == #"--issuer: issuer "bank-b" is given two addresses, 127.0.0.1:7003 and 127.0.0.1:7005; give each "#
                + "issuer id once")
        let same = try #require(
            error(tls + ["--issuer", "bank-b=127.0.0.1:7003", "--issuer", "bank-b=127.0.0.1:7003"], spec: .tsp))
        #expect(same.exitStatus == 2)
        let config = try #require(
            error(
                ["--config", "tsp.json"], spec: .tsp,
                config: #"{"issuer": ["bank-b=127.0.0.1:7003", "bank-b=localhost:7004"], "plaintext": true}"#))
        #expect(config.code == .config)
        #expect(config.exitStatus == 2)
        #expect(
            config.description
                == #""issuer" in tsp.json: issuer "bank-b" is given two addresses, 127.0.0.1:7003 and localhost:7004; "#
                + "give each issuer id once")
    }

    @Test func configFileListsIssuerAddresses() throws {
        let config = #"{"issuer": ["bank-b=127.0.0.1:7003", "127.0.0.1:7002"], "plaintext": true}"#
        let result = try NodeCommandLine.parse(
            ["--config", "tsp.json", "--issuer", "bank-b=127.0.0.1:9003"], spec: .tsp
        ) {
            _ throws(NodeError) in Data(config.utf8)
        }
        guard case .run(let parsed) = result else {
            Issue.record("expected run, got \(result)")
            return
        }
        #expect(parsed.peers == [.issuer: HostPort(host: "127.0.0.1", port: 7002)])
        #expect(parsed.issuerRoutes == ["bank-b": HostPort(host: "127.0.0.1", port: 9003)])
        let walletList = try #require(
            error(["--config", "w.json", "--plaintext"], spec: .wallet, config: #"{"issuer": ["127.0.0.1:1"]}"#))
        #expect(walletList.description.contains(#""issuer" must be a string"#), "\(walletList.description)")
        let notStrings = try #require(
            error(["--config", "t.json", "--plaintext"], spec: .tsp, config: #"{"issuer": [7002]}"#))
        #expect(notStrings.description.contains(#""issuer" must be a string or a list of strings"#))
    }

    /// `--issuer` is repeatable, one `ID=HOST:PORT` for each issuer: a second address without an id, which reads as
    /// a second issuer, is refused with both named (the node called only the second).
    @Test func aSecondIssuerAddressWithoutAnIDIsRefused() throws {
        let failure = try #require(
            error(
                [
                    "--issuer", "127.0.0.1:5", "--issuer", "bank-a=127.0.0.1:7", "--issuer", "127.0.0.1:6",
                    "--plaintext",
                ],
                spec: .tsp))
        #expect(failure.code == .usage)
        #expect(failure.exitStatus == 2)
        #expect(
            failure.description
                == "--issuer HOST:PORT (the address of the issuers no ID= names) may be given once; it was given "
                + "'127.0.0.1:5' and '127.0.0.1:6'. Name each issuer with --issuer ID=HOST:PORT")
    }

    /// A wallet-node calls one issuer node: a repeated --issuer says so, not "name each issuer with ID=HOST:PORT",
    /// which the wallet refuses.
    @Test func aRepeatedIssuerOfAWalletSaysItCallsOne() throws {
        let failure = try #require(
            error(["--issuer", "127.0.0.1:5", "--issuer", "127.0.0.1:6", "--plaintext"], spec: .wallet))
        #expect(failure.exitStatus == 2)
        #expect(
            failure.description
                == "--issuer HOST:PORT may be given once: wallet-node calls one issuer node; it was given '127.0.0.1:5' "
                + "and '127.0.0.1:6'", "\(failure.description)")
    }

    /// A route takes any issuer id the fixture and the TSP take (1 to 64 characters without spaces): ids such as
    /// `Bank+Drei` registered at the TSP and could not be routed, so the stand-in decided their cards.
    @Test func aRouteTakesEveryIssuerIDTheTSPRegisters() throws {
        let parsed = try options(
            tls + [
                "--issuer", "Bank+Drei=127.0.0.1:7", "--issuer", "bank:1=127.0.0.1:8", "--issuer", "b=c=127.0.0.1:9",
            ],
            spec: .tsp)
        #expect(parsed.issuerRoutes["Bank+Drei"]?.port == 7)
        #expect(parsed.issuerRoutes["bank:1"]?.port == 8)
        #expect(parsed.issuerRoutes["b=c"]?.port == 9)
        // Two ids that share what comes before an "=" are two issuers, not one given twice.
        let two = try options(tls + ["--issuer", "b=127.0.0.1:1", "--issuer", "b=c=127.0.0.1:2"], spec: .tsp)
        #expect(two.issuerRoutes["b"]?.port == 1 && two.issuerRoutes["b=c"]?.port == 2)
    }

    @Test func aConfigFileListGivesOneAddressWithoutAnID() throws {
        let failure = try #require(
            error(
                ["--config", "tsp.json"], spec: .tsp,
                config: #"{"issuer": ["127.0.0.1:5", "bank-a=127.0.0.1:7", "127.0.0.1:6"], "plaintext": true}"#))
        #expect(failure.code == .config)
        #expect(
            failure.description
                == #""issuer" in tsp.json: HOST:PORT without an id is the address of the issuers no ID= names, and "#
                + "is given twice, 127.0.0.1:5 and 127.0.0.1:6; give it once")
    }

    /// `"plaintext": true` in a config file was named `--plaintext`, a flag nobody typed, and nothing on the command
    /// line could undo it.
    @Test func plaintextFromTheConfigFileIsNamedSoAndCanBeUndone() throws {
        let config = #"{"plaintext": true, "listen": "127.0.0.1:0"}"#
        let refused = try #require(error(["--config", "node.json"] + tls, spec: .tsp, config: config))
        #expect(refused.exitStatus == 2)
        #expect(
            refused.description
                == #""plaintext" in node.json turns TLS off, so --cert, --key, --ca would be ignored; take "#
                + #""plaintext" out of that file, or give --plaintext=false to use TLS"#)
        let undone = try NodeCommandLine.parse(["--config", "node.json", "--plaintext=false"] + tls, spec: .tsp) {
            _ throws(NodeError) in Data(config.utf8)
        }
        guard case .run(let parsed) = undone else {
            Issue.record("expected run, got \(undone)")
            return
        }
        #expect(!parsed.plaintext)
        #expect(parsed.certificatePath == "c.pem")
        // The warning a plaintext node prints names where plaintext was asked for.
        let fromFile = try NodeCommandLine.parse(["--config", "node.json"], spec: .tsp) { _ throws(NodeError) in
            Data(config.utf8)
        }
        guard case .run(let plain) = fromFile else {
            Issue.record("expected run, got \(fromFile)")
            return
        }
        #expect(plain.plaintext && plain.plaintextSource == #""plaintext" in node.json"#)
        #expect(try options(["--plaintext"]).plaintextSource == "--plaintext")
        let fromFlag = try #require(error(["--plaintext=true", "--ca", "ca.pem"], spec: .tsp))
        #expect(fromFlag.description.contains("--plaintext turns TLS off, so --ca would be ignored; give either"))
        let tlsFromFile = try #require(
            error(["--config", "n.json", "--plaintext"], spec: .tsp, config: #"{"ca": "ca.pem"}"#))
        #expect(tlsFromFile.description.contains(#"--plaintext turns TLS off, so "ca" in n.json would be ignored"#))
    }

    @Test func helpAndVersion() throws {
        #expect(try NodeCommandLine.parse(["--help"], spec: .tsp) == .help)
        #expect(try NodeCommandLine.parse(["-h"], spec: .wallet) == .help)
        #expect(try NodeCommandLine.parse(["--listen", "127.0.0.1:1", "--version"], spec: .tsp) == .version)
    }

    @Test(arguments: [
        (["--bogus"], "'--bogus'"),
        (["--wallet", "127.0.0.1:1"], "tsp-node has no wallet peer"),
        (["--listen"], "--listen needs a value"),
        (["--listen", "--plaintext"], "--listen needs a value"),
        (["--listen", "nowhere"], "--listen: expected HOST:PORT"),
        (["--issuer", "1.2.3.4"], "--issuer: expected HOST:PORT"),
        (["--listen", "127.0.0.1:99999"], "--listen: expected HOST:PORT with a port from 0 to 65535, such as"),
        (["--issuer", "127.0.0.1:0000070001"], "--issuer: expected HOST:PORT with a port from 1 to 65535, such as"),
        (["--issuer", "[::1]:0"], "--issuer: expected HOST:PORT with a port from 1 to 65535 (0 only listens)"),
        (["--issuer", "bank=localhost:0"], "--issuer: expected ID=HOST:PORT with a port from 1 to 65535, such as"),
        (
            ["--issuer", "4111111111111111=127.0.0.1:7002"],
            "--issuer: expected ID=HOST:PORT with an issuer id that does not read as a card number"
        ),
        // A node binds an address, not a name: anything else is refused here, naming the flag. A peer may be named
        // (looked up when the node connects); an IPv6 address goes in brackets.
        (["--listen", "tsp.example:7001"], "--listen: expected an IP address (0.0.0.0, or [::] for IPv6 and IPv4,"),
        (["--listen", "127.1:7001"], "--listen: expected an IP address (0.0.0.0, or [::] for IPv6 and IPv4, for"),
        (["--listen", "[::1::2]:7001"], "--listen: expected an IP address (0.0.0.0, or [::] for IPv6 and IPv4,"),
        (["--listen", "::1:7001"], "--listen: expected HOST:PORT such as 127.0.0.1:7001, with an IPv6 address in"),
        (["--issuer", "[::g]:7002"], "--issuer: expected an IP address or host name with a port, such as"),
        (["--issuer", "issuer!a:7002"], "--issuer: expected an IP address or host name with a port"),
        // Addresses that take no connections: they bound (multicast, broadcast) and printed READY, or failed with
        // "Invalid argument" and the advice to stop what held the port.
        (["--listen", "224.0.0.1:7001"], "--listen: expected an address of this machine that takes connections (224"),
        (["--listen", "255.255.255.255:0"], "(255.255.255.255 is the broadcast address, which takes no connections)"),
        (["--listen", "[ff02::1]:0"], "(ff02::1 is a multicast address, which takes no connections), such as"),
        (["--listen", "[fe80::1]:0"], "(fe80::1 is a link-local address, which needs an interface (a zone) that"),
        (["--listen", "[::ffff:224.0.0.1]:0"], "(::ffff:224.0.0.1 is a multicast address, which takes no"),
        (["--listen", "[::ffff:255.255.255.255]:0"], "(::ffff:255.255.255.255 is the broadcast address, which"),
        (["--log-level", "loud"], "--log-level: expected trace|debug|info|warning|error, got 'loud'"),
        (["--log-format", "xml"], "--log-format: expected text|json, got 'xml'"),
        (["--plaintext=yes"], "--plaintext: expected no value, true or false, got 'yes'"),
        (["--help=1"], "--help takes no value"),
        (["stray"], "unexpected argument 'stray'"),
        (["--"], "unexpected argument '--'"),
        // One dash, as Go tools take options: the option meant is named.
        (["-plaintext"], "unknown option '-plaintext'; did you mean --plaintext?"),
        (["-listen=127.0.0.1:0"], "unknown option '-listen=127.0.0.1:0'; did you mean --listen?"),
        (["-nosuch"], "unexpected argument '-nosuch'"),
        (["--=127.0.0.1:1"], "unknown option '--'"),
        (["--listen="], "--listen: expected HOST:PORT such as 127.0.0.1:7001, with an IPv6 address in brackets"),
        (["--listen", "[fe80::1%lo]:0"], "--listen: expected an address without an IPv6 zone (%NAME), such as"),
        (["--issuer", "[fe80::1%eth0]:7002"], "--issuer: expected an address without an IPv6 zone (%NAME)"),
        (
            ["--issuer", "bank-a=[fe80::1%eth0]:7002"],
            "--issuer: expected ID=HOST:PORT with an address without an IPv6"
        ),
        (["--data-dir", ""], "--data-dir: expected a path"),
        (["--idle-poll-us", "-1"], "--idle-poll-us: expected microseconds from 0 to 1000000, got '-1'"),
        (["--idle-poll-us", "fast"], "--idle-poll-us: expected microseconds from 0 to 1000000, got 'fast'"),
        (
            ["--keepalive", "-1"],
            "--keepalive: expected seconds: 0 (off), or from 0.001 to 86400, such as 30 or 0.5, got '-1'"
        ),
        (["--keepalive", "soon"], "--keepalive: expected seconds: 0 (off), or from 0.001 to 86400"),
        (["--keepalive", "nan"], "--keepalive: expected seconds: 0 (off), or from 0.001 to 86400"),
        (["--keepalive", "1e9"], "--keepalive: expected seconds: 0 (off), or from 0.001 to 86400"),
        (["--keepalive", "0.0001"], "--keepalive: expected seconds: 0 (off), or from 0.001 to 86400"),
        (["--keepalive-timeout", "0"], "--keepalive-timeout: expected seconds from 0.001 to 86400, such as 20 or 0.5"),
        (
            ["--idle-timeout", ""],
            "--idle-timeout: expected seconds: 0 (off), or from 0.001 to 86400, such as 30 or 0.5, got ''"
        ),
        (
            ["--hello-timeout", "-2"],
            "--hello-timeout: expected seconds: 0 (off), or from 0.001 to 86400, such as 30 or 0.5"
        ),
        (["--peer-connections", "-1"], "--peer-connections: expected a number of connections from 0 (no limit) to"),
        (["--address-handshakes", "many"], "--address-handshakes: expected a number of handshakes from 0 (no limit)"),
        (["--issuer", "=127.0.0.1:1"], "--issuer: expected HOST:PORT or ID=HOST:PORT with an issuer id of 1 to 64"),
        (["--issuer", "bank a=127.0.0.1:1"], "--issuer: expected HOST:PORT or ID=HOST:PORT with an issuer id"),
        (["--issuer", "bank-a=7002"], "--issuer: expected ID=HOST:PORT such as tokenet-bank=127.0.0.1:7002, got"),
        (["--issuer", "bank-a="], "--issuer: expected ID=HOST:PORT such as"),
    ])
    func usageErrorsNameTheFlag(arguments: [String], message: String) throws {
        let failure = try #require(error(arguments + ["--plaintext"], spec: .tsp))
        #expect(failure.code == .usage)
        #expect(failure.exitStatus == 2)
        #expect(failure.description.contains(message), "\(failure.description)")
    }

    @Test func tlsIsRequiredUnlessPlaintext() throws {
        let failure = try #require(error(["--cert", "c.pem", "--key", "c.key"]))
        #expect(failure.exitStatus == 2)
        #expect(failure.description.contains("--ca"))
        #expect(failure.description.contains("--plaintext"))
        let unpaired = try #require(error(["--cert", "c.pem", "--plaintext"]))
        #expect(unpaired.description.contains("--cert and --key must be given together"))
        // TLS files beside --plaintext were ignored without a word; the CLI refuses the same pair.
        let both = try #require(error(["--cert", "c.pem", "--key", "c.key", "--ca", "ca.pem", "--plaintext"]))
        #expect(both.exitStatus == 2)
        #expect(
            both.description.contains(
                "--plaintext turns TLS off, so --cert, --key, --ca would be ignored; give either --plaintext or the "
                    + "TLS files"), "\(both.description)")
    }

    @Test func configFileIsMergedAndFlagsOverrideIt() throws {
        let config = """
            {"listen": "127.0.0.1:7001", "log-level": "debug", "issuer": "127.0.0.1:7002",
             "cert": "pki/tsp.pem", "key": "/abs/tsp.key", "ca": "pki/ca.pem", "plaintext": false}
            """
        let result = try NodeCommandLine.parse(
            ["--config", "/etc/tokenet/tsp.json", "--listen", "127.0.0.1:9001"], spec: .tsp
        ) { _ throws(NodeError) in Data(config.utf8) }
        guard case .run(let parsed) = result else {
            Issue.record("expected run, got \(result)")
            return
        }
        #expect(parsed.listen == HostPort(host: "127.0.0.1", port: 9001))
        #expect(parsed.logLevel == .debug)
        #expect(parsed.peers == [.issuer: HostPort(host: "127.0.0.1", port: 7002)])
        // Relative paths in a config file are relative to the file.
        #expect(parsed.certificatePath == "/etc/tokenet/pki/tsp.pem")
        #expect(parsed.privateKeyPath == "/abs/tsp.key")
        #expect(parsed.caPath == "/etc/tokenet/pki/ca.pem")
    }

    @Test func configIdlePollIsANumberOrAString() throws {
        for (config, expected) in [(#"{"idle-poll-us": 0}"#, 0), (#"{"idle-poll-us": "200"}"#, 200)] {
            let result = try NodeCommandLine.parse(["--config", "n.json", "--plaintext"], spec: .tsp) {
                _ throws(NodeError) in Data(config.utf8)
            }
            guard case .run(let parsed) = result else {
                Issue.record("expected run, got \(result)")
                continue
            }
            #expect(parsed.idlePollMicroseconds == expected)
        }
    }

    @Test func configKeepaliveSettingsAreNumbersOrStrings() throws {
        let config = #"{"keepalive": 0.5, "keepalive-timeout": "3", "idle-timeout": 120}"#
        let result = try NodeCommandLine.parse(["--config", "n.json", "--plaintext"], spec: .wallet) {
            _ throws(NodeError) in Data(config.utf8)
        }
        guard case .run(let parsed) = result else {
            Issue.record("expected run, got \(result)")
            return
        }
        #expect(parsed.keepaliveMilliseconds == 500)
        #expect(parsed.keepaliveTimeoutMilliseconds == 3000)
        #expect(parsed.idleTimeoutMilliseconds == 120_000)
        let fractionalPoll = error(["--config", "n.json"], spec: .tsp, config: #"{"idle-poll-us": 0.5}"#)
        #expect(fractionalPoll?.description.contains(#""idle-poll-us" must be a whole number"#) == true)
        let notANumber = error(["--config", "n.json"], spec: .tsp, config: #"{"keepalive": true}"#)
        #expect(notANumber?.description.contains(#""keepalive" must be a number or a string"#) == true)
    }

    @Test func configPlaintextCanBeSetByFile() throws {
        let failure = error(["--config", "n.json"], spec: .issuer, config: #"{"plaintext": true}"#)
        #expect(failure == nil)
    }

    @Test(arguments: [
        (#"{"lisen": "127.0.0.1:1"}"#, #"unknown key "lisen""#),
        (#"{"wallet": "127.0.0.1:1"}"#, #"unknown key "wallet" for tsp-node"#),
        (#"{"help": true}"#, #"unknown key "help""#),
        (#"{"listen": 7001}"#, #""listen" must be a string"#),
        (#"{"plaintext": "yes"}"#, #""plaintext" must be true or false"#),
        (#"{"plaintext": 1}"#, #""plaintext" must be true or false"#),
        (#"{"idle-poll-us": 1.5}"#, #""idle-poll-us" must be a whole number"#),
        (#"{"idle-poll-us": true}"#, #""idle-poll-us" must be a whole number"#),
        (#"{"idle-poll-us": 2000000}"#, "expected microseconds from 0 to 1000000, got '2000000'"),
        (#"{"log-level": "loud"}"#, #""log-level" in cfg.json: expected trace"#),
        (#"["listen"]"#, "must hold one JSON object"),
        ("[1,2]", "config file cfg.json must hold one JSON object: it holds an array, not a JSON object"),
        ("null", "config file cfg.json must hold one JSON object: it holds null, not a JSON object"),
        ("{not json", "must hold one JSON object"),
        // Foundation's decoder keeps one of two values for a key, and accepts a trailing comma and a leading zero.
        (
            #"{"listen": "127.0.0.1:1", "log-level": "debug", "listen": "127.0.0.1:2"}"#,
            #"config file cfg.json: "listen" appears twice; give each key once"#
        ),
        (#"{"listen": "127.0.0.1:1",}"#, "config file cfg.json: not valid JSON: trailing comma before '}' at byte 24"),
        (#"{"issuer": ["127.0.0.1:1",]}"#, "config file cfg.json: not valid JSON: trailing comma before ']'"),
        (#"{"idle-poll-us": 01}"#, "config file cfg.json: not valid JSON: number with a leading zero"),
    ])
    func configErrorsNameTheKey(config: String, message: String) throws {
        let failure = try #require(error(["--config", "cfg.json", "--plaintext"], spec: .tsp, config: config))
        #expect(failure.code == .config)
        #expect(failure.exitStatus == 2)
        #expect(failure.description.contains(message), "\(failure.description)")
    }

    @Test func configFileIsReadFromDisk() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("wallet.json")
        try Data(#"{"plaintext": true, "ready-file": "ready.json"}"#.utf8).write(to: URL(fileURLWithPath: path))
        let parsed = try options(["--config", path])
        #expect(parsed.plaintext)
        #expect(parsed.readyFile == directory.path("ready.json"))
    }

    @Test func unreadableConfigFileIsAConfigError() throws {
        #expect {
            _ = try NodeCommandLine.parse(["--config", "/nonexistent/tokenet.json"], spec: .wallet)
        } throws: { error in
            guard let error = error as? NodeError else { return false }
            return error.code == .config
                && error.description.contains("cannot read config file /nonexistent/tokenet.json")
        }
    }

    /// Foundation's own description of a failed read (`Error Domain=NSCocoaErrorDomain Code=260 … UserInfo=…`) is
    /// for a debugger; the node says what the system said, and what a device or a FIFO is, where Foundation said
    /// "Permission denied".
    @Test func aMissingConfigFileIsReportedInTheSystemsWords() throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.path("config.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        for (path, reason) in [
            (directory.path("missing.json"), "No such file or directory"), (directory.url.path, "Is a directory"),
            ("/dev/null", "it is a device, not a file; give a JSON file"),
            (fifo, "it is a pipe, not a file; give a JSON file"),
        ] {
            let failure = try #require(throws: NodeError.self) { _ = try NodeConfigFile.read(path: path) }
            #expect(failure.description == "cannot read config file \(path): \(reason)")
        }
    }

    /// A config file that is not JSON is pointed at, not described as `DecodingError.dataCorrupted`.
    @Test func aConfigFileThatIsNotJSONSaysWhere() throws {
        let failure = try #require(error(["--config", "cfg.json"], spec: .tsp, config: #"{"listen": "x" "cert": 1}"#))
        #expect(failure.exitStatus == 2)
        #expect(
            failure.description
                == "config file cfg.json must hold one JSON object: not valid JSON: Invalid value around character 15.")
    }

    @Test func helpDocumentsEveryOptionOfEachNode() {
        for spec in [NodeSpec.tsp, .issuer, .wallet] {
            let help = spec.helpText
            for key in NodeOptionKey.keys(for: spec) {
                #expect(help.contains(key.flag), "\(spec.name) --help lacks \(key.flag)")
            }
            for peer in NodeRole.allCases where !spec.knownPeers.contains(peer) {
                #expect(!help.contains("--\(peer.rawValue) "), "\(spec.name) --help shows --\(peer.rawValue)")
            }
        }
    }
}
