import Foundation
import Synchronization
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

@Suite struct NodeRuntimeTests {
    @Test func plaintextListenerServesHealthOnAFreePort() async throws {
        var options = NodeOptions()
        options.plaintext = true
        let listener = try await offThePool { [options] in
            try RPCNodeListener.bind(options: options, router: RPCRouter(), logger: Self.logger())
        }
        #expect(listener.boundAddress.host == "127.0.0.1")
        #expect(listener.boundAddress.port != 0)
        let loop = try EventLoop(name: "test-node-client")
        defer { loop.shutdown() }
        let client = try await Self.plainClient(to: listener.boundAddress, on: loop)
        let response = try await client.unary(HealthV1.Health.check, HealthV1.HealthCheckRequest())
        #expect(response.status == .serving)
        await client.close()
        try await offThePool { listener.stop() }
        #expect(try !connects(to: listener.boundAddress))
    }

    @Test func plaintextCallersAreRefusedRoleRestrictedMethodsButHealthStaysOpen() async throws {
        var options = NodeOptions()
        options.plaintext = true
        var router = RPCRouter()
        // Roles declared in the .proto (operator, issuer) apply without being repeated here.
        router.unary(TestingV1.Echo.restricted) { request, _ in request }
        let listener = try await offThePool { [options, router] in
            try RPCNodeListener.bind(options: options, router: router, logger: Self.logger())
        }
        let loop = try EventLoop(name: "test-node-client")
        defer { loop.shutdown() }
        let client = try await Self.plainClient(to: listener.boundAddress, on: loop)
        let error = await #expect(throws: RPCError.self) {
            try await client.unary(TestingV1.Echo.restricted, TestingV1.Scalars(fInt32: 1))
        }
        #expect(error?.code == .permissionDenied)
        let service = HealthV1.HealthCheckRequest(service: TestingV1.Echo.serviceName)
        #expect(try await client.unary(HealthV1.Health.check, service).status == .serving)
        await client.close()
        try await offThePool { listener.stop() }
    }

    @Test func bindingAnAddressInUseFails() async throws {
        var options = NodeOptions()
        options.plaintext = true
        let first = try await offThePool { [options] in
            try RPCNodeListener.bind(options: options, router: RPCRouter(), logger: Self.logger())
        }
        options.listen = first.boundAddress
        let failure = await #expect(throws: NodeError.self) {
            try await offThePool { [options] in
                try RPCNodeListener.bind(options: options, router: RPCRouter(), logger: Self.logger())
            }
        }
        // The operator's to fix, like a bad --listen: status 2, the option and the system's words named.
        #expect(failure?.code == .config)
        #expect(failure?.exitStatus == 2)
        #expect(
            failure?.description.contains("--listen \(first.boundAddress): bind") == true,
            "\(String(describing: failure))")
        #expect(failure?.description.contains("Address already in use") == true)
        #expect(failure?.description.contains("stop what holds it, or give another address") == true)
        try await offThePool { first.stop() }
    }

    /// The services' background work (a party's notification subscription, its registration with the TSP) starts
    /// only once the port is bound: a node whose bind failed had taken and acknowledged notifications meant for the
    /// node still running on the port, and exited with them.
    @Test func backgroundWorkStartsOnlyOnceThePortIsBound() async throws {
        var options = NodeOptions()
        options.plaintext = true
        let ran = Mutex(0)
        let contexts = Mutex<[NodeContext]>([])
        let services: NodeServices = { context in
            contexts.withLock { $0.append(context) }
            context.runInBackground { ran.withLock { $0 += 1 } }
            return RPCRouter()
        }
        let first = try await offThePool { [options] in
            try RPCNodeListener.bind(options: options, services: services, logger: Self.logger())
        }
        for _ in 0..<500 where ran.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(ran.withLock { $0 } == 1, "the bound node's background work ran")
        options.listen = first.boundAddress
        await #expect(throws: NodeError.self) {
            try await offThePool { [options] in
                try RPCNodeListener.bind(options: options, services: services, logger: Self.logger())
            }
        }
        // Held until the port is bound, and dropped when it is not: no task was ever started for it.
        let failed = try #require(contexts.withLock { $0.count == 2 ? $0[1] : nil })
        #expect(failed.outgoing.startedTaskCount == 0, "the node that could not bind started its background work")
        #expect(ran.withLock { $0 } == 1)
        try await offThePool { first.stop() }
    }

    /// An address of another machine is no address in use: the node says whose it is and what to listen on instead.
    @Test func bindingAnotherMachinesAddressSaysSo() async throws {
        var options = NodeOptions()
        options.plaintext = true
        options.listen = HostPort(host: "192.0.2.1", port: 7001)
        let failure = await #expect(throws: NodeError.self) {
            try await offThePool { [options] in
                try RPCNodeListener.bind(options: options, router: RPCRouter(), logger: Self.logger())
            }
        }
        #expect(failure?.exitStatus == 2)
        #expect(
            failure?.description.hasSuffix(
                "192.0.2.1 is not an address of this machine; listen on 127.0.0.1 or on one of this machine's own "
                    + "addresses") == true, "\(String(describing: failure))")
        #expect(failure?.description.contains("stop what holds it") == false)
    }

    /// A privileged port is no port something holds: the advice says what it needs, not to stop what holds it.
    @Test func aPrivilegedPortSaysWhatItNeeds() {
        let remedy = BindFailure.remedy(
            host: "127.0.0.1", reason: "bind 127.0.0.1:80 failed: Permission denied (errno \(EACCES))")
        #expect(
            remedy
                == "the port needs privileges this process does not have (ports below 1024 usually do); give a port of "
                + "1024 or above (port 0 picks a free one)")
        #expect(
            BindFailure.remedy(host: "127.0.0.1", reason: "bind failed: Address in use (errno \(EADDRINUSE))")
                .hasPrefix("stop what holds it"))
    }

    /// A bind that fails for the address itself ("Invalid argument") names no port to free: the advice was to stop
    /// what held it, even for port 0.
    @Test func anAddressTheSystemRefusesIsNotTreatedAsAPortInUse() {
        let remedy = BindFailure.remedy(
            host: "fe80::1", reason: "bind [fe80::1]:0 failed: Invalid argument (errno \(EINVAL))")
        #expect(
            remedy
                == "give another address: 127.0.0.1, [::1], 0.0.0.0 or [::] (every interface), or one of this "
                + "machine's own addresses")
    }

    /// 0.0.0.0 and [::], which a node listening on every interface shows in its READY line, given as a peer's
    /// address: the node starts (on one machine they reach the loopback) and warns that they reach nothing else.
    @Test func anUnspecifiedPeerAddressIsWarnedAbout() async throws {
        let scratch = try TemporaryDirectory()
        let readyFile = scratch.path("ready.json")
        let node = try LaunchedProcess(
            "wallet-node",
            [
                "--plaintext", "--listen", "127.0.0.1:0", "--tsp", "0.0.0.0:9", "--data-dir", scratch.path("data"),
                "--ready-file", readyFile, "--parent-pid", "\(getpid())",
            ])
        _ = try await PythonClientInteropTests.waitFor(node.process, "wallet-node's ready file") {
            FileManager.default.fileExists(atPath: readyFile) ? true : nil
        }
        node.process.send(SIGTERM)
        let result = try await node.waitForExit()
        #expect(
            result.stderr.contains(
                "the tsp address 0.0.0.0:9 is the unspecified address, which reaches only this machine; give the "
                    + "address of the machine the tsp runs on (127.0.0.1 on this one)"), "\(result.stderr)")
        #expect(HostPort(host: "::", port: 9).hostIsUnspecified)
        #expect(!HostPort(host: "127.0.0.1", port: 9).hostIsUnspecified)
        #expect(!HostPort(host: "tsp", port: 9).hostIsUnspecified)
    }

    /// Starts a plaintext issuer-node runtime on `dataDirectory` of `directory`, with its ready file there; returns
    /// it with the lines it announced.
    private static func startIssuer(
        in directory: TemporaryDirectory, dataDirectory: String, sink: MemoryLogSink, stopRequested: Bool = false
    ) async throws -> (NodeRuntime, [String]) {
        var options = NodeOptions()
        options.plaintext = true
        options.dataDirectory = directory.path(dataDirectory)
        options.readyFile = directory.path("ready.json")
        return try await offThePool { [options] in
            var announced: [String] = []
            let runtime = try NodeRuntime.start(
                spec: .issuer, options: options, logger: Logger(node: "issuer-node", sink: sink),
                stopRequested: { stopRequested }, announce: { announced.append($0) })
            return (runtime, announced)
        }
    }

    /// The ready file is written before the READY line and moved into place after it: a write that fails (a full
    /// disk) fails the start before anything is announced, and leaves no half-written file behind. Checked through
    /// the two steps: a temporary file the writing cannot create (under /proc) throws and leaves nothing; a written
    /// one is only at its temporary path until committed.
    @Test func theReadyFileIsWrittenBeforeItIsAnnouncedAndAFailedWriteLeavesNothing() throws {
        let info = ReadyInfo(node: "issuer-node", pid: getpid(), listen: "127.0.0.1:7001")
        #expect(throws: NodeError.self) { try ReadyFile.prepare(info, to: "/proc/tokenet-ready.json") }
        let directory = try TemporaryDirectory()
        let path = directory.path("ready.json")
        let prepared = try ReadyFile.prepare(info, to: path)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(FileManager.default.fileExists(atPath: "\(path).tmp.\(getpid())"))
        _ = try prepared.commit()
        #expect(try ReadyFile.read(from: path) == info)
        #expect(!FileManager.default.fileExists(atPath: "\(path).tmp.\(getpid())"))
    }

    @Test func startAnnouncesReadinessAndStopWithdrawsIt() async throws {
        let directory = try TemporaryDirectory()
        let sink = MemoryLogSink()
        let (runtime, announced) = try await Self.startIssuer(in: directory, dataDirectory: "data/nested", sink: sink)
        let ready = try ReadyFile.read(from: directory.path("ready.json"))
        #expect(ready == runtime.ready)
        #expect(ready.node == "issuer-node")
        #expect(ready.pid == getpid())
        #expect(announced == [ready.line])
        #expect(FileManager.default.fileExists(atPath: directory.path("data/nested")))
        #expect(sink.lines.contains { $0.contains("issuer-node: ready listen=\(ready.listen)") })
        try await offThePool { runtime.stop() }
        #expect(!FileManager.default.fileExists(atPath: directory.path("ready.json")))
    }

    /// A node told to stop while it started announces nothing: it printed READY and wrote its ready file after
    /// the signal, and whoever waited for them took it for a node that would serve.
    @Test func aNodeToldToStopWhileStartingIsNotAnnouncedReady() async throws {
        let directory = try TemporaryDirectory()
        let sink = MemoryLogSink()
        let (runtime, announced) = try await Self.startIssuer(
            in: directory, dataDirectory: "data", sink: sink, stopRequested: true)
        #expect(announced.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory.path("ready.json")))
        #expect(!sink.lines.contains { $0.contains(": ready ") })
        #expect(sink.lines.contains { $0.contains("told to stop while starting; not announced ready") })
        try await offThePool { runtime.stop() }
    }

    /// A node that cannot bind its port takes away the data directory its start made (with the directories above
    /// it that the start made too), and leaves one that was there before as it found it.
    @Test func aNodeThatCannotBindRemovesOnlyTheDataDirectoryItMade() async throws {
        let directory = try TemporaryDirectory()
        var options = NodeOptions()
        options.plaintext = true
        let taken = try await offThePool { [options] in
            try RPCNodeListener.bind(options: options, router: RPCRouter(), logger: Self.logger())
        }
        options.listen = taken.boundAddress
        let sink = MemoryLogSink()
        for (dataDirectory, existed) in [("made/nested", false), ("kept", true)] {
            if existed {
                try FileManager.default.createDirectory(
                    atPath: directory.path(dataDirectory), withIntermediateDirectories: true)
                try Data("mine".utf8).write(to: URL(fileURLWithPath: directory.path("kept/notes.txt")))
            }
            options.dataDirectory = directory.path(dataDirectory)
            let failure = await #expect(throws: NodeError.self) {
                _ = try await offThePool { [options] in
                    try NodeRuntime.start(
                        spec: .tsp, options: options, logger: Logger(node: "tsp-node", sink: sink), announce: { _ in })
                }
            }
            #expect(failure?.description.contains("Address already in use") == true)
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("made")))
        #expect(sink.lines.contains { $0.contains("removed the data directory this start made") })
        #expect(FileManager.default.fileExists(atPath: directory.path("kept/notes.txt")))
        try await offThePool { taken.stop() }
    }

    /// A second node on a data directory in use is refused before it opens anything there; once the first one has
    /// stopped, the directory is free again.
    @Test func aDataDirectoryServesOneNodeAtATime() async throws {
        let directory = try TemporaryDirectory()
        var options = NodeOptions()
        options.plaintext = true
        options.dataDirectory = directory.path("data")
        let first = try await offThePool { [options] in
            try NodeRuntime.start(spec: .tsp, options: options, logger: Self.logger(), announce: { _ in })
        }
        let failure = await #expect(throws: NodeError.self) {
            _ = try await offThePool { [options] in
                try NodeRuntime.start(spec: .tsp, options: options, logger: Self.logger(), announce: { _ in })
            }
        }
        #expect(failure?.exitStatus == 2)
        #expect(
            failure?.description
                == "--data-dir: \(directory.path("data")) is in use by another node (pid \(getpid())); give each node a "
                + "directory of its own")
        try await offThePool { first.stop() }
        let second = try await offThePool { [options] in
            try NodeRuntime.start(spec: .tsp, options: options, logger: Self.logger(), announce: { _ in })
        }
        try await offThePool { second.stop() }
    }

    /// The lock of `directory` once it is free: a process that another test forks at the moment a lock is released
    /// holds a copy of its descriptor, and with it the lock, until it executes its program.
    static func lockOnceFree(
        _ directory: String, fileName: String = DataDirectoryLock.fileName, flag: String = "--data-dir",
        owner: String = "node"
    ) throws -> DataDirectoryLock {
        let deadline = ContinuousClock.now + .seconds(30)
        var lastError: NodeError?
        while ContinuousClock.now < deadline {
            let attempt = Result { () throws(NodeError) -> DataDirectoryLock in
                try DataDirectoryLock(directory: directory, fileName: fileName, flag: flag, owner: owner)
            }
            switch attempt {
            case .success(let lock): return lock
            case .failure(let error):
                guard error.code == .config else { throw error }
                lastError = error
                usleep(10_000)
            }
        }
        throw lastError ?? NodeError(.config, "\(directory) stayed locked")
    }

    /// The lock file deleted while its node runs: the directory itself is locked too, so a second node is still
    /// refused (it locked a new file of that name and ran on the same database).
    @Test func aDeletedLockFileLetsNoSecondNodeIn() throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: false)
        let first = try DataDirectoryLock(directory: data)
        try FileManager.default.removeItem(
            atPath: (data as NSString).appendingPathComponent(DataDirectoryLock.fileName))
        let failure = try #require(throws: NodeError.self) { _ = try DataDirectoryLock(directory: data) }
        #expect(failure.exitStatus == 2)
        #expect(
            failure.description
                == "--data-dir: \(data) is in use by another Tokenet process; give each node a directory of its own")
        first.release()
        try Self.lockOnceFree(data).release()
        // A `tokenet up` on the same directory holds it too, and is named as the holder.
        let up = try Self.lockOnceFree(data, fileName: "up.lock", flag: "up: --dir", owner: "tokenet up")
        let byUp = try #require(throws: NodeError.self) { _ = try DataDirectoryLock(directory: data) }
        #expect(
            byUp.description
                == "--data-dir: \(data) is in use by another tokenet up (pid \(getpid())); give each node a directory of "
                + "its own")
        up.release()
    }

    /// A file where the data directory should be is a wrong --data-dir (status 2), named as such, where mkdir's
    /// "File exists" (status 1) left the person guessing.
    /// The data directory holds the database and the keys: made 0700 whatever the umask, where it was 0777 under
    /// `umask 000` and other users could replace the files in it.
    @Test func aNewDataDirectoryIsTheOwnersOnly() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("data/tsp")
        let before = umask(0)
        defer { umask(before) }
        try NodeRuntime.makeDataDirectory(path, isDefault: false)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o700, "mode \(String(mode ?? 0, radix: 8))")
    }

    @Test func aFileAsTheDataDirectoryIsAConfigError() throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("afile")
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        for (dataDirectory, message) in [
            (file, "--data-dir: \(file) is a file, not a directory; give a directory, or a path where one can be made"),
            (file + "/sub", "--data-dir: \(file)/sub cannot be made: \(file) is a file, not a directory"),
        ] {
            var options = NodeOptions()
            options.plaintext = true
            options.dataDirectory = dataDirectory
            let failure = try #require(throws: NodeError.self) {
                _ = try NodeRuntime.start(
                    spec: .tsp, options: options, logger: Self.logger(),
                    announce: { _ in Issue.record("the node announced readiness") })
            }
            #expect(failure.exitStatus == 2)
            #expect(failure.description.hasPrefix(message), "\(failure.description)")
        }
    }

    /// A data directory that is a link to nothing is named as such: creating it failed with "File exists".
    @Test func aDanglingLinkAsTheDataDirectoryIsNamed() throws {
        let directory = try TemporaryDirectory()
        let link = directory.path("dangle")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: directory.path("gone"))
        let failure = try #require(throws: NodeError.self) { try NodeRuntime.makeDataDirectory(link, isDefault: false) }
        #expect(failure.exitStatus == 2)
        #expect(
            failure.description.hasPrefix(
                "--data-dir: \(link) is a symbolic link to \(directory.path("gone")), which does not exist"),
            "\(failure.description)")
    }

    /// A data directory the node may not write (here immutable, `chattr +i`, which stops root too) is a wrong
    /// --data-dir, named with status 2; a directory used before (its lock file there) got as far as SQLite's
    /// "unable to open database file" and status 1.
    @Test func aDataDirectoryTheNodeCannotWriteIsAConfigError() async throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: false)
        let lock = (data as NSString).appendingPathComponent(DataDirectoryLock.fileName)
        _ = FileManager.default.createFile(atPath: lock, contents: nil)
        guard ReadOnlyFile.make(data) else { return }  // no way to make the directory unwritable here
        defer {
            ReadOnlyFile.undo(data)
            chmod(data, 0o755)
        }
        var options = NodeOptions()
        options.plaintext = true
        options.dataDirectory = data
        let failure = try #require(throws: NodeError.self) {
            _ = try NodeRuntime.start(
                spec: .tsp, options: options, logger: Self.logger(),
                announce: { _ in Issue.record("the node announced readiness") })
        }
        #expect(failure.exitStatus == 2)
        #expect(failure.description.hasPrefix("--data-dir: \(data) is not writable ("), "\(failure.description)")

        let result = try await LaunchedProcess.runNiced(
            "tsp-node", ["--plaintext", "--listen", "127.0.0.1:0", "--data-dir", data])
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.contains("is not writable ("), "\(result.stderr)")
        #expect(!result.stderr.contains("SQL"), "\(result.stderr)")
    }

    /// A file of the data directory the node cannot open at its start (here a directory in place of its journal of
    /// processed notifications) is the operator's to fix: status 2 with what to check. It was status 1 with the bare
    /// system error, as for a node that fails while running.
    @Test func aDataFileTheNodeCannotOpenIsAConfigError() async throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        try FileManager.default.createDirectory(
            atPath: (data as NSString).appendingPathComponent(ProcessedNotificationLog.fileName),
            withIntermediateDirectories: true)
        let pki = DevelopmentPKI.shared
        let result = try await LaunchedProcess.runNiced(
            "wallet-node",
            [
                "--listen", "127.0.0.1:0", "--data-dir", data, "--tsp", "127.0.0.1:1", "--cert", pki.path("wallet.pem"),
                "--key", pki.path("wallet.key"), "--ca", pki.path("ca.pem"),
            ])
        #expect(result.status == 2, "\(result)")
        #expect(
            result.stderr.contains(
                "notifications-processed.log: Is a directory; the node keeps this file in its data directory: make it "
                    + "a regular file this user can write"), "\(result.stderr)")
    }

    /// `--parent-pid` naming no process is refused before the node starts (status 2): the node printed READY and
    /// then stopped at once with status 0, as if all were well.
    @Test func aParentPIDOfNoProcessIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let result = try await LaunchedProcess.run(
            "tsp-node",
            [
                "--plaintext", "--listen", "127.0.0.1:0", "--data-dir", directory.path("data"), "--parent-pid",
                "999999999",
            ])
        #expect(result.status == 2, "\(result)")
        #expect(!result.stdout.contains("READY"), "\(result.stdout)")
        #expect(result.stderr.contains("--parent-pid 999999999: no process 999999999 is running"), "\(result.stderr)")
    }

    @Test func missingTLSFileIsAConfigError() throws {
        var options = NodeOptions()
        options.certificatePath = "/nonexistent/tsp.pem"
        options.privateKeyPath = "/nonexistent/tsp.key"
        options.caPath = "/nonexistent/ca.pem"
        #expect {
            _ = try NodeRuntime.start(
                spec: .tsp, options: options, logger: Logger(node: "tsp-node", sink: MemoryLogSink()),
                announce: { _ in })
        } throws: { error in
            guard let error = error as? NodeError else { return false }
            return error.exitStatus == 2 && error.description.contains("--cert: cannot read /nonexistent/tsp.pem")
        }
    }

    /// TLS files that exist but that OpenSSL cannot use, and a certificate of another role, stop the node before it
    /// binds or creates its data directory, with status 2 like any other configuration mistake.
    @Test(arguments: [
        ("tsp.key", "tsp.key", "ca.pem", "--cert: certificate file PKI/tsp.key holds a private key, not a certificate"),
        ("tsp.pem", "issuer.key", "ca.pem", "--cert, --key, --ca: the private key PKI/issuer.key does not belong to"),
        ("plain.pem", "plain.key", "ca.pem", "--cert: certificate PKI/plain.pem has no tokenet://ROLE/ID URI subject"),
        (
            "tsp.pem", "tsp.key", "tsp.key",
            "--ca: CA certificate file PKI/tsp.key holds a private key, not a certificate"
        ),
        ("tsp.pem", "tsp.pem", "ca.pem", "--key: private key file PKI/tsp.pem holds a certificate, not a private key"),
        ("tsp.pem", "/dev/null", "ca.pem", "--key: private key file /dev/null is a device, not a file; give the PEM"),
        ("tsp.pem", "/", "ca.pem", "--key: private key file / is a directory, not a file; give the PEM file"),
        ("issuer.pem", "issuer.key", "ca.pem", "names tokenet://issuer/issuer-1, but tsp-node needs a certificate for"),
        ("operator.pem", "operator.key", "ca.pem", "names tokenet://operator/operator-1, but tsp-node needs"),
    ])
    func unusableTLSIdentityIsAConfigError(certificate: String, key: String, ca: String, message: String) throws {
        let directory = try TemporaryDirectory()
        let pki = DevelopmentPKI.shared
        var options = NodeOptions()
        func path(_ name: String) -> String { name.hasPrefix("/") ? name : pki.path(name) }
        options.certificatePath = path(certificate)
        options.privateKeyPath = path(key)
        options.caPath = path(ca)
        options.dataDirectory = directory.path("data")
        let failure = try Self.refusedStart(options)
        #expect(failure.exitStatus == 2)
        let expected = message.replacingOccurrences(of: "PKI/", with: pki.directory.path + "/")
        #expect(failure.description.contains(expected), "\(failure.description)")
        #expect(!failure.description.contains("error:"), "\(failure.description)")
        // The transport's code names (configuration, peerIdentity) are not part of the sentence.
        #expect(!failure.description.contains("configuration:"), "\(failure.description)")
        #expect(!failure.description.contains("peerIdentity:"), "\(failure.description)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("data")))
    }

    /// A key given through a pipe (`--key <(cat tsp.key)`) is refused by name: the node reads its TLS files more than
    /// once, and the second read of the drained pipe was reported as a damaged PEM block.
    @Test func aKeyThroughAPipeIsAConfigError() throws {
        let directory = try TemporaryDirectory()
        let pki = DevelopmentPKI.shared
        let pipe = Pipe()
        pipe.fileHandleForWriting.write(try Data(contentsOf: URL(fileURLWithPath: pki.path("tsp.key"))))
        try pipe.fileHandleForWriting.close()
        defer { try? pipe.fileHandleForReading.close() }
        let key = "/dev/fd/\(pipe.fileHandleForReading.fileDescriptor)"
        let failure = try Self.refusedStart(Self.tspOptions(key: key, in: directory))
        #expect(failure.exitStatus == 2)
        #expect(
            failure.description
                == "--key: private key file \(key) is a pipe, which the node reads more than once (to serve and to call "
                + "its peers) and would find empty after the first; give the path of the file itself")
    }

    /// A private key that other users can read is refused with the chmod that fixes it: whoever reads it can pose as
    /// the node to every party. Owner-only, the same key starts the node.
    @Test func aKeyOtherUsersCanReadIsAConfigError() throws {
        let directory = try TemporaryDirectory()
        let key = directory.path("tsp.key")
        try FileManager.default.copyItem(atPath: DevelopmentPKI.shared.path("tsp.key"), toPath: key)
        #expect(chmod(key, 0o644) == 0)
        let refused = try Self.refusedStart(Self.tspOptions(key: key, in: directory))
        #expect(refused.exitStatus == 2)
        #expect(
            refused.description.contains("\(key) can be read by other users (mode 644)")
                && refused.description.hasSuffix("run chmod 600 \(key)"),
            "\(refused.description)")
        #expect(chmod(key, 0o600) == 0)
        #expect(TLSFileCheck.problem(with: key, holding: .privateKey) == nil)
    }

    /// A FIFO that nobody writes to, given as the CA bundle, is refused by name at once, before anything opens it (its
    /// open(2) would wait for a writer), and a CA bundle of more than 1 MiB before OpenSSL reads it, as the CLI
    /// refuses both (`TLSFileCheck`).
    @Test func aFIFOOrAnOversizedFileIsAConfigError() throws {
        let directory = try TemporaryDirectory()
        let pki = DevelopmentPKI.shared
        let fifo = directory.path("ca.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        var options = Self.tspOptions(key: pki.path("tsp.key"), in: directory)
        options.caPath = fifo
        let refusedFIFO = try Self.refusedStart(options)
        #expect(refusedFIFO.exitStatus == 2)
        #expect(
            refusedFIFO.description.hasPrefix("--ca: CA certificate file \(fifo) is a pipe"),
            "\(refusedFIFO.description)")

        let large = directory.path("large-ca.pem")
        let certificate = try String(contentsOfFile: pki.path("ca.pem"), encoding: .utf8)
        let copies = 1024 * 1024 / certificate.utf8.count + 1
        try Data(String(repeating: certificate, count: copies).utf8).write(to: URL(fileURLWithPath: large))
        options.caPath = large
        let refusedSize = try Self.refusedStart(options)
        #expect(refusedSize.exitStatus == 2)
        #expect(
            refusedSize.description.contains("more than the 1 MiB a CA certificate file may hold"),
            "\(refusedSize.description)")
    }

    /// A key file whose PEM block is damaged passes the look from outside; OpenSSL's refusal is told in words,
    /// naming the file, with status 2.
    @Test func aDamagedKeyFileIsAConfigError() throws {
        let directory = try TemporaryDirectory()
        let key = directory.path("damaged.key")
        try Data("-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----\n".utf8)
            .write(to: URL(fileURLWithPath: key))
        #expect(chmod(key, 0o600) == 0)
        let failure = try Self.refusedStart(Self.tspOptions(key: key, in: directory))
        #expect(failure.exitStatus == 2)
        #expect(
            failure.description.contains("private key file \(key) cannot be read as a private key"),
            "\(failure.description)")
        #expect(!failure.description.contains("error:"), "\(failure.description)")
    }

    /// The TSP's own certificate and CA from the development PKI, with `key` as its private key.
    private static func tspOptions(key: String, in directory: TemporaryDirectory) -> NodeOptions {
        let pki = DevelopmentPKI.shared
        var options = NodeOptions()
        options.certificatePath = pki.path("tsp.pem")
        options.privateKeyPath = key
        options.caPath = pki.path("ca.pem")
        options.dataDirectory = directory.path("data")
        return options
    }

    /// The error a TSP node with `options` refuses to start with; it must not announce readiness.
    private static func refusedStart(_ options: NodeOptions) throws -> NodeError {
        try #require(throws: NodeError.self) {
            _ = try NodeRuntime.start(
                spec: .tsp, options: options, logger: Logger(node: "tsp-node", sink: MemoryLogSink()),
                announce: { _ in Issue.record("the node announced readiness") })
        }
    }

    private static func logger() -> Logger {
        Logger(node: "test", sink: MemoryLogSink())
    }

    /// An RPC client over a plaintext connection.
    private static func plainClient(to address: HostPort, on loop: EventLoop) async throws -> RPCClient {
        RPCClient(stream: try await PlainConnection.connect(host: address.host, port: address.port, on: loop))
    }

    /// Whether a TCP connection to `address` succeeds.
    private func connects(to address: HostPort) throws -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = address.port.bigEndian
        inet_pton(AF_INET, address.host, &socketAddress.sin_addr)
        let status = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return status == 0
    }
}
