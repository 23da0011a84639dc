import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

/// `tokenet up`: the nodes stay up for the CLI and for steps typed on standard input, and stop cleanly on SIGINT;
/// with --dir a second run finds its certificates and data again.
@Suite struct UpCommandTests {
    /// A --dir that cannot be made says why in the system's words: it printed Foundation's whole NSError
    /// ("Error Domain=NSCocoaErrorDomain Code=4 … UserInfo={…}").
    @Test func aDirectoryThatCannotBeMadeSaysWhy() async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.path("file")
        try Data().write(to: URL(fileURLWithPath: file))
        for directory in ["\(file)/sandbox", "\(file)/a/b"] {
            let result = try await LaunchedProcess.run("tokenet", ["up", "--dir", directory])
            #expect(result.status == 2, "\(result.stderr)")
            #expect(
                result.stderr.hasPrefix("tokenet: up: cannot create --dir \(directory): Not a directory\n"),
                "\(result.stderr)")
        }
    }

    /// Run away from the repository (a copy of the binaries elsewhere, started elsewhere), up and scenario say at once
    /// that they need it and why. They said the nodes would run in plaintext, then failed for the PKI, or, with a PKI
    /// in --dir, waited 30 s for an issuer that had no cards to register with.
    @Test func awayFromTheRepositoryUpAndScenarioSayWhatTheyNeed() async throws {
        let scratch = try TemporaryDirectory()
        let copy = scratch.path("tokenet")
        try FileManager.default.copyItem(atPath: try BuiltExecutables.url(of: "tokenet").path, toPath: copy)
        for node in ["tsp-node", "wallet-node", "issuer-node"] {
            try FileManager.default.createSymbolicLink(
                atPath: scratch.path(node), withDestinationPath: try BuiltExecutables.url(of: node).path)
        }
        try "echo hi\n".write(toFile: scratch.path("s.scenario"), atomically: true, encoding: .utf8)
        for arguments in [["up", "--dir", scratch.path("sandbox")], ["scenario", scratch.path("s.scenario")]] {
            let (directory, out, err) = (scratch.url.path, scratch.path("out"), scratch.path("err"))
            let termination = try await offThePool {
                try SpawnedProcess(
                    copy, arguments, workingDirectory: directory, standardInput: .file("/dev/null"),
                    standardOutput: .file(out), standardError: .file(err)
                ).waitUntilExit(killingAfter: 60)
            }
            let stderr = try String(contentsOfFile: scratch.path("err"), encoding: .utf8)
            #expect(termination.status == 1 && termination.reason == .exit, "\(arguments): \(stderr)")
            #expect(
                stderr.hasPrefix("tokenet: \(arguments[0]): the Tokenet repository was not found"), "\(stderr)")
            #expect(stderr.contains("run tokenet from the repository's directory"), "\(stderr)")
        }
        // Nothing was made: the --dir was left holding an up.lock.
        #expect(!FileManager.default.fileExists(atPath: scratch.path("sandbox")))

        // The demo says what it needs before any node starts: it started and stopped three plaintext nodes first,
        // while its help promised a plaintext demo without provisioning.
        let (out, err, directory) = (scratch.path("demo-out"), scratch.path("demo-err"), scratch.url.path)
        let termination = try await offThePool {
            try SpawnedProcess(
                copy, ["demo"], workingDirectory: directory, standardInput: .file("/dev/null"),
                standardOutput: .file(out), standardError: .file(err)
            ).waitUntilExit(killingAfter: 60)
        }
        let stdout = try String(contentsOfFile: out, encoding: .utf8)
        let stderr = try String(contentsOfFile: err, encoding: .utf8)
        #expect(termination.status == 1 && termination.reason == .exit, "\(stderr)")
        #expect(stderr.contains("the demo's flows need Tools/gen-certs"), "\(stderr)")
        #expect(!stdout.contains("Starting nodes"), "\(stdout)")
    }

    @Test func stepsTypedAtTheConsoleSteerTheNodes() async throws {
        try await offThePool { try Self.console() }
    }

    static func console() throws {
        let directory = try TemporaryDirectory()
        let sandbox = directory.path("sandbox")
        let output = directory.path("up.out")

        func start(input: SpawnedProcess.Stream, _ extra: [String] = []) throws -> SpawnedProcess {
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            // Both streams share one open file, so neither overwrites what the other wrote.
            let outputHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            defer { try? outputHandle.close() }
            // Niced as `LaunchedProcess(niced:)` does; nice execs tokenet, which keeps the pid.
            return try SpawnedProcess(
                "/usr/bin/nice",
                ["-n", "10", try BuiltExecutables.url(of: "tokenet").path, "up", "--dir", sandbox, "--timeout", "60"]
                    + extra,
                standardInput: input, standardOutput: .descriptor(outputHandle.fileDescriptor),
                standardError: .descriptor(outputHandle.fileDescriptor))
        }
        func text() -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        func waitFor(_ needle: String, _ process: SpawnedProcess) throws {
            _ = try PythonClientInteropTests.waitFor(process, "'\(needle)' from tokenet up") {
                text().contains(needle) ? true : nil
            }
        }

        let up = try start(input: .pipe)
        let commands = try #require(up.standardInput)
        defer { PythonClientInteropTests.stop(up) }
        try waitFor("Type scenario steps here", up)
        // Each node's data directory is its user's only, the wallet's too (up makes it first, for its wallet.json).
        for node in ["tsp-node", "issuer-node", "wallet-node"] {
            let mode = try FileManager.default.attributesOfItem(atPath: "\(sandbox)/\(node)/data")[.posixPermissions]
            #expect((mode as? Int).map { $0 & 0o777 } == 0o700, "\(node): \(String(describing: mode))")
        }
        // The rest of the workspace is its user's too, whatever the umask: another user could swap the CA in pki/
        // or point sandbox.env at another host.
        for (path, expected) in [
            ("pki", 0o700), ("tsp-node", 0o700), ("sandbox.env", 0o600), ("tsp-node/tsp-node.stderr.log", 0o600),
            ("pki/ca.pem", 0o644), ("pki/operator.key", 0o600),
        ] {
            let mode = try FileManager.default.attributesOfItem(atPath: "\(sandbox)/\(path)")[.posixPermissions]
            #expect((mode as? Int).map { $0 & 0o777 } == expected, "\(path): \(String(describing: mode))")
        }
        let steps = """
            call tsp tokenet.health.v1.Health/Check {"service": ""}
            expect OK {"status": "SERVING_STATUS_SERVING"}
            kill wallet
            call wallet tokenet.wallet.v1.WalletControl/ListCards
            expect UNAVAILABLE
            nope
            start wallet
            call tsp tokenet.tsp.v1.TspControl/ListTokens
            save token tokens[0].digitalCardId
            expect NOT_FOUND
            echo done

            """
        commands.write(Data(steps.utf8))
        try waitFor("   11  done", up)
        let console = text()
        #expect(console.contains("expect OK: met"))
        #expect(console.contains("kill wallet: wallet-node pid="))
        #expect(console.contains("call wallet tokenet.wallet.v1.WalletControl/ListCards -> UNAVAILABLE"))
        #expect(console.contains("expect UNAVAILABLE: met"))
        #expect(console.contains("error: line 6: unknown step 'nope'"))
        #expect(console.contains("start wallet: ready wallet-node"))
        // A failed step says why, and the console goes on.
        #expect(
            console.contains("error: line 9: save token tokens[0].digitalCardId: 'tokens' has 0 elements, so no [0]"),
            "\(console)")
        #expect(console.contains("error: line 10: expected NOT_FOUND, got OK"), "\(console)")

        // A start that fails (the wallet's database is damaged while it is stopped) leaves the node down: once the
        // database is repaired, start works without a stop first.
        commands.write(Data("stop wallet\necho stopped\n".utf8))
        try waitFor("   13  stopped", up)
        let database = "\(sandbox)/wallet-node/data/wallet.sqlite"
        let saved = try Data(contentsOf: URL(fileURLWithPath: database))
        try Data(repeating: 0x5A, count: saved.count).write(to: URL(fileURLWithPath: database))
        commands.write(Data("start wallet\n".utf8))
        try waitFor("error: line 14: wallet-node exited with status 2 before becoming ready", up)
        try saved.write(to: URL(fileURLWithPath: database))
        commands.write(Data("start wallet\necho restarted\n".utf8))
        try waitFor("   16  restarted", up)
        #expect(text().contains("   15  start wallet: ready wallet-node"), "\(text())")
        #expect(!text().contains("is running (stop or kill it first)"), "\(text())")

        // A line longer than a script may be is skipped once that much has come (it was held whole however long it
        // grew), one that is not UTF-8 is skipped too, each saying why, and the console goes on; a card number typed
        // in an echo prints masked.
        commands.write(Data("echo ".utf8) + Data(repeating: UInt8(ascii: "x"), count: 17 << 20) + Data("\n".utf8))
        commands.write(Data("echo \u{1B}[31m ".utf8) + Data([0xFF, 0xFE, 0x0A]))
        commands.write(Data("echo 4761000010000009\necho after\n".utf8))
        try waitFor("   20  after", up)
        #expect(text().contains("error: line 17: longer than 16 MiB; skipped\n"), "\(text().suffix(2000))")
        #expect(text().contains("error: line 18: not UTF-8 text; skipped\n"), "\(text().suffix(2000))")
        #expect(text().contains("   19  ************0009\n"), "\(text().suffix(2000))")
        #expect(!text().contains("xxxxxxxxxx"))

        // `expect within D` calls the last call again until it is met or D has passed, as in a script: it was
        // accepted and then judged once, at once.
        commands.write(
            Data("call tsp tokenet.tsp.v1.TspControl/ListTokens\nexpect within 5s NOT_FOUND\necho judged\n".utf8))
        try waitFor("   23  judged", up)
        let retried = try #require(
            text().firstMatch(of: /error: line 22: expected NOT_FOUND, got OK after (\d+) calls in 5s/),
            "\(text().suffix(2000))")
        // Called again at least once: 5 s, since a loaded machine's CI run took 980 ms for one call, and a second
        // did not fit in 1 s.
        #expect(Int(retried.output.1) ?? 0 >= 2, "\(text().suffix(2000))")

        // A node that ends on its own (killed from outside) counts as down at the next line: its first `start` was
        // refused as "running", since the console looked at the nodes only after each line.
        let started = try #require(
            text().firstMatch(of: /15  start wallet: ready wallet-node pid=(\d+)/), "\(text().suffix(2000))")
        let walletPID = try #require(pid_t(started.output.1))
        #expect(kill(walletPID, SIGKILL) == 0)
        // Until up has reaped it: a zombie is not yet known to have ended (its reaper thread, on a loaded machine,
        // takes a moment), and a start then is rightly refused.
        _ = try PythonClientInteropTests.waitFor(up, "the killed wallet-node to be reaped") {
            FileManager.default.fileExists(atPath: "/proc/\(walletPID)") ? nil : true
        }
        // The console says so by itself, with how it ended and where its log is.
        try waitFor("wallet-node pid=\(walletPID) was killed by signal 9, not by a step; its log: ", up)
        #expect(text().contains("a 'start wallet' step starts it again"), "\(text().suffix(2000))")
        commands.write(Data("start wallet\necho after kill\n".utf8))
        try waitFor("   25  after kill", up)
        #expect(text().contains("   24  start wallet: ready wallet-node"), "\(text().suffix(2000))")
        #expect(!text().contains("is running (stop or kill it first)"), "\(text().suffix(2000))")

        // A call spawned at the console, joined, and its outcome checked by the expect typed next.
        commands.write(
            Data("spawn s tsp tokenet.tsp.v1.TspControl/ListTokens\njoin s\nexpect OK\necho joined\n".utf8))
        try waitFor("   29  joined", up)
        #expect(
            text().contains("   27  join s: call tsp tokenet.tsp.v1.TspControl/ListTokens -> OK"),
            "\(text().suffix(2000))")
        #expect(text().contains("   28  expect OK: met"), "\(text().suffix(2000))")

        // The sandbox's own wallet written as ROLE/ID is its wallet.pem (Tools/gen-certs refused to make a wallet-1.pem
        // beside it); another role with its ID is refused as the line is read.
        commands.write(
            Data(
                """
                identity wallet/wallet-1
                call tsp tokenet.health.v1.Health/Check
                identity issuer/wallet-1
                identity operator
                echo identities

                """.utf8))
        try waitFor("   34  identities", up)
        #expect(
            text().contains("   30  identity wallet/wallet-1 for the calls below (wallet.pem)\n"),
            "\(text().suffix(2000))")
        #expect(text().contains("   31  call tsp tokenet.health.v1.Health/Check -> OK"), "\(text().suffix(2000))")
        #expect(
            text().contains("error: line 32: identity issuer/wallet-1: the ID wallet-1 is wallet/wallet-1's"),
            "\(text().suffix(2000))")

        // An expect line refused for its object (no value of the response's type) is as if never typed: the
        // corrected one is the call's expect line, not a second one.
        commands.write(
            Data(
                """
                call tsp tokenet.health.v1.Health/Check
                expect OK {"status": "ACTIVE"}
                expect OK {"status": "SERVING_STATUS_SERVING"}
                echo corrected

                """.utf8))
        try waitFor("   38  corrected", up)
        #expect(
            text().contains("error: line 36: the expected object is not a tokenet.health.v1.HealthCheckResponse"),
            "\(text().suffix(2000))")
        #expect(text().contains("   37  expect OK: met\n"), "\(text().suffix(2000))")
        #expect(!text().contains("already has an expect line"), "\(text().suffix(2000))")

        // A call refused before it was made: the expect and save typed next are about it, and were judged on the
        // call before it ("expect OK: met" for a call never made).
        commands.write(
            Data(
                """
                call wallet tokenet.health.v1.Health/Check {"service": 5}
                expect OK {"status": "SERVING_STATUS_SERVING"}
                save y status
                echo unmade

                """.utf8))
        try waitFor("   42  unmade", up)
        #expect(
            text().contains("error: line 40: the call on line 39 was not made (see its error): nothing to expect"),
            "\(text().suffix(2000))")
        #expect(
            text().contains("error: line 41: save y: the call on line 39 was not made (see its error)"),
            "\(text().suffix(2000))")

        // A wallet killed from outside has no part in the issuer's registration: an issuer started after it ended
        // was refused as "wallet-node was killed … while issuer-node was registering with it".
        let restarted = try #require(
            text().firstMatch(of: /24  start wallet: ready wallet-node pid=(\d+)/), "\(text().suffix(2000))")
        let secondWallet = try #require(pid_t(restarted.output.1))
        #expect(kill(secondWallet, SIGKILL) == 0)
        try waitFor("wallet-node pid=\(secondWallet) was killed by signal 9, not by a step", up)
        commands.write(Data("stop issuer\nstart issuer\nstart wallet\necho issuer back\n".utf8))
        try waitFor("   46  issuer back", up)
        #expect(text().contains("   44  start issuer: ready issuer-node"), "\(text().suffix(2000))")
        #expect(text().contains("   45  start wallet: ready wallet-node"), "\(text().suffix(2000))")
        #expect(!text().contains("was registering with it"), "\(text().suffix(2000))")

        // The CLI from another terminal, with what sandbox.env says.
        let environment = try String(contentsOfFile: "\(sandbox)/sandbox.env", encoding: .utf8)
        var values: [String: String] = [:]
        for line in environment.split(separator: "\n") {
            let pair = line.dropFirst("export ".count).split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { values[pair[0]] = pair[1] }
        }
        let call = try LaunchedProcess.run(
            "tokenet",
            [
                "call", values["TOKENET_TSP"] ?? "?", "tokenet.health.v1.Health/Check", "--cacert",
                values["TOKENET_CACERT"] ?? "?", "--cert", values["TOKENET_CERT"] ?? "?", "--key",
                values["TOKENET_KEY"] ?? "?",
            ])
        #expect(call.status == 0, "\(call.stderr)")
        #expect(call.stdout.contains("SERVING_STATUS_SERVING"))

        // A second console on the same directory is refused before it touches anything there.
        let second = try LaunchedProcess.run("tokenet", ["up", "--dir", sandbox, "--timeout", "60"])
        #expect(second.status == 2)
        #expect(
            second.stderr.contains("--dir: \(sandbox) is in use by another tokenet up (pid \(up.pid))"))
        #expect(FileManager.default.fileExists(atPath: "\(sandbox)/tsp-node/ready.json"))

        up.send(SIGINT)
        #expect(up.waitUntilExit(killingAfter: 60).isCleanExit, "\(text())")
        // The three nodes, the wallet stopped before its database was damaged, and the issuer stopped to start again.
        #expect(text().components(separatedBy: "exited with status 0").count - 1 == 5, "\(text().suffix(3000))")

        // Again on the same directory, with no input at all: the certificates are reused and the nodes stay up. This
        // time on every interface and on ports given, where the CLI finds them on loopback. The first session's
        // logs stay: the second writes logs of its own.
        let firstLog = try String(contentsOfFile: "\(sandbox)/tsp-node/tsp-node.stderr.log", encoding: .utf8)
        #expect(!firstLog.isEmpty)
        let base = try Self.basePort()
        let again = try start(input: .nullDevice, ["--host", "0.0.0.0", "--base-port", "\(base)"])
        defer { PythonClientInteropTests.stop(again) }
        try waitFor("(end of input: the nodes keep running until SIGINT, SIGTERM or SIGHUP)", again)
        #expect(text().contains("(from an earlier run)"))
        for (node, port) in [("tsp-node", base), ("issuer-node", base + 1), ("wallet-node", base + 2)] {
            #expect(text().contains(" \(node) pid="), "\(text())")
            #expect(text().contains(" listen=0.0.0.0:\(port)\n"), "\(text())")
        }
        #expect(text().contains("  tokenet call 127.0.0.1:\(base) tokenet.tsp.v1.TspControl/ListTokens\n"), "\(text())")
        // The fault proxies take the five ports after the nodes', on loopback, link by link.
        let proxies = (3...7).map { "127.0.0.1:\(base + $0)" }
        #expect(proxies.allSatisfy { text().contains($0) }, "\(text())")
        let onLoopback = try LaunchedProcess.run(
            "tokenet",
            [
                "call", "127.0.0.1:\(base + 2)", "tokenet.health.v1.Health/Check", "--cacert", "\(sandbox)/pki/ca.pem",
                "--cert", "\(sandbox)/pki/operator.pem", "--key", "\(sandbox)/pki/operator.key",
            ])
        #expect(onLoopback.status == 0, "\(onLoopback.stderr)")
        again.send(SIGINT)
        #expect(again.waitUntilExit(killingAfter: 60).isCleanExit, "\(text())")
        #expect(try String(contentsOfFile: "\(sandbox)/tsp-node/tsp-node.stderr.log", encoding: .utf8) == firstLog)
        let secondLog = try String(contentsOfFile: "\(sandbox)/tsp-node/tsp-node.2.stderr.log", encoding: .utf8)
        #expect(secondLog.contains("tsp-node: ready listen=0.0.0.0:\(base)"), "\(secondLog)")
    }

    /// A port whose next seven are free too (on every interface), from below the ephemeral range, as `tokenet up`
    /// picks its own (`FreePorts`): the three nodes' and the five fault proxies'.
    static func basePort() throws -> Int { try FreePorts.run(of: 8) }

    /// A stop signal that comes while the first node starts stops that node as the running ones are stopped
    /// (SIGTERM, which the node keeps until it can act on it), and says so. The node was killed with SIGKILL — mid
    /// database migration, for all up knew — with nothing printed, and up exited 0.
    @Test(.timeLimit(.minutes(3))) func aStopSignalWhileTheFirstNodeStartsStopsItCleanly() async throws {
        let scratch = try TemporaryDirectory()
        let up = try LaunchedProcess(
            "tokenet", ["up", "--dir", scratch.path("sandbox"), "--base-port", "\(try Self.basePort())"])
        defer { up.process.send(SIGKILL) }
        // The node's directory is made right before it is launched; signalled then, up waits for its ready file.
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: scratch.path("sandbox/tsp-node")) {
            try #require(Date() < deadline && up.process.isRunning, "tokenet up never started its TSP")
            try await Task.sleep(for: .milliseconds(1))
        }
        up.process.send(SIGTERM)
        let result = try await up.waitForExit(limit: 120)
        #expect(result.reason == .exit && result.status == 0, "\(result.status): \(result.stderr)")
        #expect(result.stdout.contains("Stopping nodes (SIGTERM)"), "\(result.stdout)")
        #expect(result.stdout.contains(#/tsp-node pid=\d+ exited with status 0/#), "\(result.stdout)")
        #expect(!result.stdout.contains("killed"), "\(result.stdout)")
    }

    @Test(arguments: [
        (["--host", "tsp.example"], "up: --host: expected an IP address such as 127.0.0.1, 0.0.0.0 (every interface)"),
        (["--host", "[::1"], "up: --host: expected an IP address such as 127.0.0.1"),
        (["--host", ""], "up: --host: expected an IP address such as 127.0.0.1"),
        // Another machine's address: it was "cannot bind 192.0.2.1:0" (a port nobody gave) with status 1.
        (["--host", "192.0.2.1"], "up: --host: 192.0.2.1 is not an address of this machine; give 127.0.0.1"),
        (["--base-port", "0"], "up: --base-port: expected a port from 1 to 65528 (the nodes take N, N+1 and N+2"),
        (["--base-port", "65529"], "up: --base-port: expected a port from 1 to 65528"),
        (["--base-port", "+80"], "up: --base-port: expected a port from 1 to 65528"),
    ])
    func badPlacementOptionsAreUsageErrors(arguments: [String], message: String) async throws {
        let result = try await LaunchedProcess.run("tokenet", ["up"] + arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("tokenet: \(message)"), "\(result.stderr)")
    }

    /// A base port whose range holds a taken port is refused before any node starts, naming the port and its node.
    @Test func aTakenPortIsNamedBeforeAnyNodeStarts() async throws {
        let base = try Self.basePort()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(base + 1).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        try #require(bound && listen(fd, 1) == 0)
        let scratch = try TemporaryDirectory()
        let result = try await LaunchedProcess.run(
            "tokenet", ["up", "--dir", scratch.path("sandbox"), "--base-port", "\(base)"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "issuer-node cannot have port \(base + 1) (cannot bind 127.0.0.1:\(base + 1): Address already in use); "
                    + "stop what holds it, or choose another --base-port or --host"),
            "\(result.stderr)")
        #expect(!result.stdout.contains("ready "), "\(result.stdout)")
    }

    /// A sandbox whose operator key others can read is refused at once, naming the key: the console's calls present
    /// it, and each failed UNAVAILABLE naming --key and TOKENET_KEY, which the person never gave.
    @Test func anOperatorKeyOthersCanReadIsNamedBeforeAnyNodeStarts() async throws {
        let scratch = try TemporaryDirectory()
        let sandbox = scratch.path("sandbox")
        let made = try await runTokenet(["pki", "init", "\(sandbox)/pki"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(chmod("\(sandbox)/pki/operator.key", 0o644) == 0)
        let result = try await LaunchedProcess.run("tokenet", ["up", "--dir", sandbox, "--timeout", "30"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix(
                "tokenet: up: the operator's key \(sandbox)/pki/operator.key can be read by other users (mode 644)"),
            "\(result.stderr)")
        #expect(!result.stdout.contains("ready "), "\(result.stdout)")
    }
}
