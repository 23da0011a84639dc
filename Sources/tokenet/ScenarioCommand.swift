import Foundation
import TokenetNode
import TokenetRPC
import TokenetScenario
import TokenetWire

/// `tokenet scenario FILE…`: runs scripted flows across the three parties, each in a sandbox of its own.
struct ScenarioCommand {
    static let subcommand = Subcommand(
        name: "scenario",
        summary: "Run scripted flows (calls, expected outcomes, faults, node restarts) against fresh nodes.",
        help: help,
        valuedOptions: valuedFlags
    ) { arguments throws(CLIError) in
        try ScenarioCommand(parsing: arguments).run()
    }

    static let help = """
        Usage: tokenet scenario FILE... [--check] [--verbose] [--keep-dir] [--timeout SECONDS] [--junit FILE]
               tokenet scenario FILE... --pki DIR [--tsp HOST:PORT] [--issuer HOST:PORT] [--wallet HOST:PORT]

        Runs each scenario FILE (- for standard input) against a sandbox of its own: tsp-node, issuer-node (with
        the cards of Tools/fixtures/issuer.json) and wallet-node on loopback ports over mutual TLS, every connection
        between them through a fault proxy. Steps run in order, one per line; the first whose outcome differs from
        the script ends the scenario. The nodes are stopped with SIGTERM at the end and must exit cleanly.

        Steps (PARTY is tsp, issuer or wallet; D a duration such as 250ms or 2s):
          call PARTY METHOD [JSON]        Call the node (pkg.Service/Method; the request as proto3 JSON, the rest
                                          of the line; several objects for a client stream). A call without an
                                          expect line must end OK.
          expect [within D] CODE [X]      The call above ends with CODE (OK, NOT_FOUND, UNAVAILABLE, ...). For OK, X
                                          is a JSON object the last response contains (fields it does not name may
                                          hold anything; arrays match in order, as a subsequence, and [] only an
                                          empty one); otherwise text the status message contains. With within, the
                                          call is made again every 200 ms until it matches, for up to D (above 0);
                                          no call runs past D. A method that changes something (one its .proto
                                          does not mark NO_SIDE_EFFECTS, as tokenet describe shows) is made
                                          again only while it fails: a call of it that ends OK is the outcome.
          save NAME FIELD [match RE]      Keep FIELD of the call's last response (cardRef, tokens[0].tokenId) as
                                          ${NAME} for later lines (a field the JSON leaves out, its default: false,
                                          0, "" or []); in JSON a string goes in without its quotes
                                          ($${NAME} is the text ${NAME} itself). With match, keep the part of
                                          FIELD the regular expression RE (ICU syntax) matches: its first group,
                                          when it has one; a match still running after 5 s fails the step.
          watch NAME PARTY METHOD [JSON]  Open a server stream (or a bidirectional one) that collects its messages
                                          in the background while later steps run. A NAME watched again (after its
                                          node restarted, say) has its earlier stream closed. A stream the node
                                          refuses at once (ending with an error before a message, within 300 ms)
                                          fails the line.
          await NAME [within D] [JSON]    Wait for the watch's next message that contains JSON (any message without
                                          it), up to D (the call deadline without it); save lines may follow.
          identity ROLE | ROLE/ID         The certificate of the calls and watches below: operator (the default),
                                          or tsp, issuer or wallet to act as that party; ROLE/ID (wallet/my-wallet)
                                          for an identity of the script's own, whose certificate a sandbox makes.
          encrypt NAME CARD MM/YY [CVC]   Keep as ${NAME} the card data a wallet sends the TSP: CARD (digits)
                                          encrypted to the TSP's current key, for a request's encryptedCardData.
          spawn NAME PARTY METHOD [JSON]  Start a call in the background while later steps run (two calls that
                                          race), with the identity, headers and deadline of its line; every spawn
                                          must be joined.
          join NAME                       Wait for the spawned call to end; expect (without within) and save
                                          lines may follow, as after a call.
          header KEY: VALUE | clear       Request metadata of the calls and watches below (as tokenet call -H).
          fault LINK COMMAND              LINK is tsp->issuer, issuer->tsp, issuer->wallet, wallet->tsp or
                                          wallet->issuer; COMMAND as tokenet proxy reads it: partition [to-server |
                                          to-client], delay D, refuse, reset, heal.
          stop PARTY | kill PARTY         SIGTERM (the node must exit 0) or SIGKILL.
          start PARTY                     Start a stopped or killed node again, on its address with its data.
          pause PARTY | resume PARTY      SIGSTOP and SIGCONT: the node freezes with its connections open (its
                                          peers hear nothing, not a close), then goes on.
          deadline D                      The deadline of the calls below (30s until set).
          sleep D | echo TEXT
        A line whose first non-blank character is # is a comment. The whole script is checked before any node
        starts. A node that cannot be reached answers UNAVAILABLE.

        Options:
          --check              Only check the scripts (naming every mistake, up to 20 a script); start no node.
          --verbose, -v        Print every response, not only the last one of a failed call.
          --keep-dir           Keep each sandbox's directory (certificates, data, node logs).
          --timeout SECONDS    Longest wait for a node to start, register or stop (default 30).
          --junit FILE         Also write the results as JUnit XML (one test case per scenario), for CI.
          --tsp, --issuer, --wallet HOST:PORT
                               Run against nodes already running there (your own party, or nodes started by
                               hand) instead of a sandbox: calls only, no faults, stop, kill, start or pause.
          --pki DIR            With those: the operator's certificate and the CA (ca.pem, operator.pem,
                               operator.key, as Tools/gen-certs writes them).
          --help               Show this help.

        Exit status: 0 when every scenario ran as written; 1 when a step's outcome differed, a node failed, the run
        was interrupted (SIGINT, SIGTERM, SIGHUP), or what the run needs is missing (the repository, the node
        executables); 2 for bad options or a script with errors (each named by its file and line).

        Example (Tools/scenarios/ holds more):
          call issuer tokenet.issuer.v1.IssuerControl/PushCard {"cardId": "card-visa-session", "mode": "PUSH_MODE_SESSION"}
          save session pushSessionId
          call wallet tokenet.wallet.v1.WalletControl/AddCard {"pushSessionId": "${session}"}
          expect OK {"eligible": true}
          save card cardRef
          fault tsp->issuer partition
          deadline 10s
          call wallet tokenet.wallet.v1.WalletControl/AcceptTerms {"cardRef": "${card}"}
          expect OK {"decision": "PROVISIONING_DECISION_DECLINED"}
        """

    var files: [String] = []
    var checkOnly = false
    var verbose = false
    var keepDirectory = false
    var timeout = 30.0
    /// Whether `--timeout` was given, which attached nodes have no use for.
    var timeoutGiven = false
    /// Nodes someone else runs (`--tsp`, `--issuer`, `--wallet`): the scripts call them instead of a sandbox.
    var attached: [ScenarioParty: HostPort] = [:]
    /// With attached nodes: the directory with ca.pem, operator.pem and operator.key.
    var pkiDirectory: String?
    /// Where to write a JUnit XML report of the scenarios (`--junit`), for CI systems.
    var junitPath: String?

    /// The options that take a value (`ArgumentScanner`).
    static let valuedFlags = Set(["--junit", "--pki", "--timeout"] + ScenarioParty.allCases.map { "--\($0)" })

    init(parsing arguments: [String]) throws(CLIError) {
        var scanner = ArgumentScanner(arguments, command: "scenario", valued: Self.valuedFlags)
        while let item = try scanner.next() {
            switch item {
            case .valued("--junit", let text):
                guard !text.isEmpty else { throw CLIError(.usage, "scenario: --junit needs FILE") }
                junitPath = text
            case .valued("--pki", let text): pkiDirectory = text
            case .valued("--timeout", let text):
                timeout = try Sandbox.timeout(text, command: "scenario")
                timeoutGiven = true
            case .valued(let flag, let text):
                // The rest of the valued options name a party: --tsp, --issuer, --wallet.
                guard let party = ScenarioParty.allCases.first(where: { flag == "--\($0)" }),
                    let address = HostPort(parsing: text), address.hostIsIPOrName
                else {
                    throw CLIError(.usage, "scenario: \(flag) needs HOST:PORT (an IP address or host name)")
                }
                attached[party] = address
            case .flag("--check", nil): checkOnly = true
            case .flag("--verbose", nil), .flag("-v", nil): verbose = true
            case .flag("--keep-dir", nil): keepDirectory = true
            case .flag(let flag, let inline)
            where inline != nil && ["--check", "--verbose", "--keep-dir"].contains(flag):
                throw CLIError(.usage, "scenario: \(flag) takes no value")
            case .flag(let flag, _):
                let hint = ArgumentScanner.singleDashHint(
                    flag, options: Self.valuedFlags.union(["--check", "--verbose", "--keep-dir"]))
                throw CLIError(.usage, "scenario: unknown option '\(flag)'\(hint)")
            case .endOfOptions: continue
            case .operand(let file): files.append(file)
            }
        }
        guard !files.isEmpty else { throw CLIError(.usage, "scenario: name at least one scenario FILE") }
        guard files.filter({ $0 == "-" }).count <= 1 else {
            throw CLIError(.usage, "scenario: standard input (-) can be read only once")
        }
        if !attached.isEmpty && pkiDirectory == nil {
            throw CLIError(
                .usage, "scenario: --tsp, --issuer and --wallet need --pki DIR (ca.pem, operator.pem, operator.key)")
        }
        // Both are about the sandbox's own nodes, which attached nodes replace: taken silently, they did nothing.
        if !attached.isEmpty, keepDirectory || timeoutGiven {
            let flag = keepDirectory ? "--keep-dir" : "--timeout"
            throw CLIError(
                .usage,
                "scenario: \(flag) is for the nodes a scenario starts itself; with --tsp, --issuer or --wallet there "
                    + "are none (calls wait for their deadline)")
        }
        if attached.isEmpty && pkiDirectory != nil {
            throw CLIError(.usage, "scenario: --pki is for nodes given with --tsp, --issuer or --wallet")
        }
    }

    func run() throws(CLIError) -> Int32 {
        PrivateFiles.fromNowOn()
        // Every script is read and checked first: an error in the last one is reported before the first one runs.
        // Each script's mistakes are told, not only the first script's first: with several to fix, one run of
        // --check names them all.
        var scenarios: [Scenario] = []
        var refusals: [CLIError] = []
        // Before the scripts: without the operator's files no identity of theirs can be checked.
        let pki = try attached.isEmpty ? nil : checkAttachedPKI()
        for file in files {
            let loaded: (scenario: Scenario, mistakes: [(line: Int, error: CLIError)])
            do throws(CLIError) {
                loaded = try Self.load(file, nodesOfThisBuild: attached.isEmpty)
            } catch {
                refusals.append(error)
                continue
            }
            var mistakes = loaded.mistakes
            if let pki { mistakes += attachableMistakes(loaded.scenario) + identityMistakes(loaded.scenario, pki: pki) }
            // Stable: two mistakes of one line keep the order of the checks.
            mistakes.sort { $0.line < $1.line }
            if mistakes.isEmpty {
                scenarios.append(loaded.scenario)
            } else {
                refusals += mistakes.map(\.error)
            }
        }
        if let last = refusals.last {
            for refusal in refusals.dropLast() {
                printError(
                    "tokenet: \(refusal.code == .usage ? shownUsageError(refusal.description) : refusal.description)")
            }
            throw last
        }
        if let junitPath { try ScenarioResult.checkJUnitPath(junitPath) }
        if checkOnly {
            for scenario in scenarios {
                let calls = scenario.steps.filter {
                    switch $0.action {
                    case .call, .spawn: true
                    default: false
                    }
                }.count
                printOut("\(scenario.source): \(count(scenario.steps.count, "step")), \(count(calls, "call")): OK")
            }
            return 0
        }
        let interruption = DemoInterruption()
        var results: [ScenarioResult] = []
        if attached.isEmpty { try requireExecutables() }
        do throws(CLIError) {
            for scenario in scenarios {
                try interruption.check()
                let started = ContinuousClock.now
                do throws(CLIError) {
                    if let pki {
                        results.append(try runAttached(scenario, pki: pki, interruption: interruption))
                    } else {
                        results.append(try run(scenario, in: Sandbox(timeout: timeout, interruption: interruption)))
                    }
                } catch {
                    results.append(
                        ScenarioResult(
                            source: scenario.source, status: 1, failure: "FAILED: \(error.description)", details: nil,
                            since: started))
                    throw error
                }
            }
            try interruption.check()
        } catch {
            // A CI job stopped by its time limit (SIGTERM) or a run that broke still leaves a report: the scenarios
            // that ran, the one it ended in, and those it kept from running, as skipped.
            if let junitPath {
                let notRun = scenarios.dropFirst(results.count).map {
                    ScenarioResult.notRun($0.source, reason: "not run: \(error.description)")
                }
                try ScenarioResult.writeJUnit(results + notRun, to: junitPath)
            }
            throw error
        }
        if let junitPath { try ScenarioResult.writeJUnit(results, to: junitPath) }
        let failed = results.filter { $0.status != 0 }.map(\.source)
        let status = results.map(\.status).max() ?? 0
        if scenarios.count > 1 {
            printOut(
                failed.isEmpty
                    ? "All \(scenarios.count) scenarios passed."
                    : "\(failed.count) of \(scenarios.count) scenarios failed: \(failed.joined(separator: ", "))")
        }
        return status
    }

    /// What the nodes logged under `traceID`, in time order: the failed call's path across the parties.
    static func traceLines(_ traceID: String, in workspace: URL, limit: Int = 40) -> String {
        let files =
            FileManager.default.enumerator(at: workspace, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.lastPathComponent.hasSuffix(".stderr.log") } ?? []
        let marker = "trace_id=\(traceID)"
        // Lines start with an ISO 8601 time in UTC, so their text order is their time order.
        let lines = files.flatMap { file in
            ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n").filter {
                $0.contains(marker)
            }
        }.sorted()
        guard !lines.isEmpty else {
            return "No node logged trace \(traceID) (the call may not have reached one)."
        }
        let shown = lines.suffix(limit).map { "  | \($0)" }.joined(separator: "\n")
        let skipped = lines.count > limit ? "  (the last \(limit) of \(lines.count) lines)\n" : ""
        return "What the nodes logged for trace \(traceID):\n" + skipped + shown
    }

    /// `8 steps, 6 calls, in 1.8 s`.
    func summary(_ scenario: Scenario, calls: Int, since started: ContinuousClock.Instant) -> String {
        let elapsed = (ContinuousClock.now - started).components
        let seconds = String(format: "%.1f", Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
        return "\(count(scenario.steps.count, "step")), \(count(calls, "call")), in \(seconds) s"
    }

    private func count(_ number: Int, _ noun: String) -> String { number == 1 ? "1 \(noun)" : "\(number) \(noun)s" }

    /// The most bytes of one script, from a file or standard input: far more than any script needs.
    static let scriptLimit = 16 << 20

    /// Reads and checks a script: its lines, then the requests, expected responses and identities of the steps it
    /// took. Returns the steps with every mistake found (up to `Scenario.mistakeLimit` of its lines, and those of
    /// the steps before), each with its line; throws when the script cannot be read.
    static func load(_ file: String, nodesOfThisBuild: Bool = true) throws(CLIError)
        -> (scenario: Scenario, mistakes: [(line: Int, error: CLIError)])
    {
        let text = try readScript(file)
        let source = file == "-" ? "stdin" : file
        let checked = Scenario.check(text, source: source)
        // The parser quotes the words it did not understand, and a script may hold a card number. The file's name,
        // which starts the message, is left as given, as file names are everywhere else: masked, a directory named
        // by a UUID whose digits read as a card number could not be found from the message.
        var mistakes = checked.mistakes.map { line, error -> (line: Int, error: CLIError) in
            let message = error.message
            guard message.hasPrefix(source) else { return (line, CLIError(.usage, "scenario: \(maskPAN(message))")) }
            return (line, CLIError(.usage, "scenario: \(source)\(maskPAN(String(message.dropFirst(source.count))))"))
        }
        mistakes += checkRequests(checked.scenario, nodesOfThisBuild: nodesOfThisBuild)
        mistakes += checkResponses(checked.scenario)
        mistakes += checkIdentities(checked.scenario)
        return (checked.scenario, mistakes)
    }

    /// The text of a script file, or of standard input for `-`.
    private static func readScript(_ file: String) throws(CLIError) -> String {
        let text: String
        if file == "-" {
            let bytes = try StandardInput.readAll(
                command: "scenario", limit: scriptLimit,
                overLimit: CLIError(.usage, "scenario: standard input holds more than 16 MiB of script"))
            guard let script = String(validating: bytes, as: UTF8.self) else {
                throw CLIError(.usage, "scenario: standard input is not UTF-8 text")
            }
            text = script
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else {
                throw CLIError(.usage, "scenario: \(file) does not exist")
            }
            guard !isDirectory.boolValue else {
                throw CLIError(.usage, "scenario: \(file) is a directory; name the scenario files in it")
            }
            // Read as standard input is, as a stream of at most `scriptLimit` bytes: a FIFO or a shell's `<(…)` works
            // (FileManager refused them with "Inappropriate ioctl for device"), and /dev/zero or a huge file is
            // refused after that much instead of being read whole.
            let bytes = try StandardInput.readAll(
                file: file, command: "scenario", limit: scriptLimit,
                overLimit: CLIError(.usage, "scenario: \(file) holds more than 16 MiB of script"))
            guard let script = String(validating: bytes, as: UTF8.self) else {
                // The line of the first byte that is not UTF-8, as every other mistake is named by its line.
                var line = 1
                for part in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                    if String(validating: part, as: UTF8.self) == nil { break }
                    line += 1
                }
                throw CLIError(
                    .usage, "scenario: \(file):\(line): the line is not UTF-8 text; save the script as UTF-8")
            }
            text = script
        }
        return text
    }

    /// Refuses an identity of the script's own whose ID holds a card number, as the nodes refuse such ids: the run
    /// prints the ID with its certificate's file and URI, and the certificate carries it.
    static func checkIdentities(_ scenario: Scenario) -> [(line: Int, error: CLIError)] {
        func check(_ step: ScenarioStep) throws(CLIError) {
            guard case .identity(let text) = step.action, let own = Scenario.ownIdentity(text),
                IdentifierRules.holdsCardNumber(identifier: own.id)
            else { return }
            throw CLIError(
                .usage,
                "scenario: \(scenario.source):\(step.line): identity \(maskPAN(text)): the ID holds a card number; "
                    + "choose another ID")
        }
        var mistakes: [(line: Int, error: CLIError)] = []
        for step in scenario.steps {
            do throws(CLIError) { try check(step) } catch { mistakes.append((step.line, error)) }
        }
        return mistakes
    }

    /// Checks what each call and await expects (`expect OK {…}`, `await NAME {…}`, written without `${NAME}`s) and
    /// saves against the response type of its call or watch, when this build knows the method, as the run checks
    /// them: a misspelt field, enum value or save path was found only when the run reached the line, after the steps
    /// before it, and the call itself, had run (a save's only once the nodes had started).
    static func checkResponses(_ scenario: Scenario) -> [(line: Int, error: CLIError)] {
        func target(_ method: String) -> CallTarget? {
            (try? CallCommand.methodPath(method)).flatMap { CallTarget.known($0) }
        }
        var watched: [String: CallTarget?] = [:]
        var spawned: [String: CallTarget?] = [:]
        var mistakes: [(line: Int, error: CLIError)] = []
        func check(_ step: ScenarioStep) throws(CLIError) {
            let (object, saves, response, line): (String?, [ScenarioCall.Save], CallTarget?, Int)
            // The code a call or join is to end with; nil for an await.
            var code: WireV1.StatusCode?
            switch step.action {
            case .call(let call):
                (object, saves, response, line) = (
                    call.expectation.contains, call.saves, target(call.method), call.expectation.line ?? step.line
                )
                code = call.expectation.code
            case .spawn(let spawn):
                spawned[spawn.name] = target(spawn.call.method)
                return
            case .join(let join):
                (object, saves, response, line) = (
                    join.expectation.contains, join.saves, spawned[join.name] ?? nil, join.expectation.line ?? step.line
                )
                code = join.expectation.code
            case .watch(let watch):
                watched[watch.name] = target(watch.method)
                return
            case .await(let awaited):
                (object, saves, response, line) = (
                    awaited.contains, awaited.saves, watched[awaited.name] ?? nil, step.line
                )
            default:
                return
            }
            guard let response else { return }
            // A method that answers once sends its response with OK, or an error and no response: a save after an
            // expect of another code passed --check and failed every run ("the call returned no response").
            if let code, code != .ok, let save = saves.first,
                response.kind == .unary || response.kind == .clientStreaming
            {
                throw CLIError(
                    .usage,
                    "scenario: \(scenario.source):\(save.line): "
                        + maskPAN(
                            "save \(save.name) \(save.field): \(response.path.dropFirst()) answers once, and a call of it "
                                + "that ends \(code.name) (line \(line)) returns no response to save from; save from a "
                                + "call that ends OK"))
            }
            // The expect line and each save line are told apart: a second bad save was found only once the first
            // was mended.
            // One that uses saved values is checked with each value that holds one taken for null, as requests are.
            if let object,
                let known = ScenarioVariables.references(in: object).isEmpty
                    ? object
                    : (try? JSONValue(
                        parsing: ScenarioVariables.withStandIns(object, inString: ScenarioVariables.referenceMarker)))
                        .map({ ScenarioVariables.nullingReferences($0).text() })
            {
                do {
                    try ScenarioExpectation.check(known, fits: response.response)
                } catch {
                    mistakes.append(
                        (line, CLIError(.usage, "scenario: \(scenario.source):\(line): \(maskPAN(error.message))")))
                }
            }
            for save in saves {
                if let problem = save.field.problem(in: response.response) {
                    // The path is the script's words, which may hold a card number, and the problem quotes them.
                    mistakes.append(
                        (
                            save.line,
                            CLIError(
                                .usage,
                                "scenario: \(scenario.source):\(save.line): "
                                    + maskPAN("save \(save.name) \(save.field): \(problem)"))
                        ))
                }
            }
        }
        for step in scenario.steps {
            do throws(CLIError) { try check(step) } catch { mistakes.append((step.line, error)) }
        }
        return mistakes
    }

    /// Checks each request written without `${NAME}`s against its method's type, when this build knows the method,
    /// as the node would: a typo in line 40's JSON is reported before any node starts, not after 39 steps. (A method
    /// this build does not know may still be served by a node the script is run against; the node judges it. The
    /// sandbox's nodes are of this build, though: for them a method its service lacks is a typo, named before any
    /// node starts instead of failing as UNIMPLEMENTED once the steps before it have run.)
    static func checkRequests(_ scenario: Scenario, nodesOfThisBuild: Bool = true) -> [(line: Int, error: CLIError)] {
        // What each spawned call's join expects, by the spawn's line: its expectation is written under the join.
        var joinedCodes: [Int: WireV1.StatusCode] = [:]
        var pending: [String: Int] = [:]
        for step in scenario.steps {
            switch step.action {
            case .spawn(let spawn): pending[spawn.name] = step.line
            case .join(let join):
                if let line = pending.removeValue(forKey: join.name) {
                    joinedCodes[line] = join.expectation.code
                }
            default: break
            }
        }
        // The role the calls below an `identity` line present: the operator's until one says otherwise.
        var role = "operator"
        func check(_ step: ScenarioStep) throws(CLIError) {
            let (keyword, method, request): (String, String, String)
            let party: ScenarioParty
            // A call that expects UNIMPLEMENTED may ask the wrong node on purpose.
            var expectsRefusal = false
            // One that expects PERMISSION_DENIED may call as a role the method refuses on purpose.
            var expectsDenial = false
            // How the line starts: `call`, or `watch NAME`.
            var opening = "call"
            switch step.action {
            case .call(let call):
                (keyword, method, request, party) = ("call", call.method, call.request, call.party)
                expectsRefusal = call.expectation.code == .unimplemented
                expectsDenial = call.expectation.code == .permissionDenied
            case .watch(let watch):
                (keyword, method, request, party) = ("watch", watch.method, watch.request, watch.party)
                opening = "watch \(watch.name)"
            case .spawn(let spawn):
                (keyword, method, request, party) = ("spawn", spawn.call.method, spawn.call.request, spawn.call.party)
                opening = "spawn \(spawn.name)"
                expectsRefusal = joinedCodes[step.line] == .unimplemented
                expectsDenial = joinedCodes[step.line] == .permissionDenied
            case .identity(let text):
                role = Scenario.ownIdentity(text)?.role ?? text
                return
            case .header(let text?) where ScenarioVariables.references(in: text).isEmpty:
                // Checked as the run checks it, so that a header the CLI refuses is found before the nodes start.
                var metadata = Metadata()
                do {
                    try InspectOptions.addHeader(text, to: &metadata, command: "header")
                } catch {
                    throw CLIError(
                        .usage,
                        "scenario: \(scenario.source):\(step.line): "
                            + error.message.replacing("header: -H: ", with: "header: "))
                }
                return
            default: return
            }
            let place = "scenario: \(scenario.source):\(step.line)"
            let path: String
            do {
                path = try CallCommand.methodPath(method)
            } catch {
                throw CLIError(.usage, "\(place): \(error.message.replacing("call: ", with: "\(keyword): "))")
            }
            if nodesOfThisBuild, CallTarget.known(path) == nil {
                let parts = path.dropFirst().split(separator: "/", maxSplits: 1).map(String.init)
                if let service = ProtoRegistry.service(named: parts[0]) {
                    let methods = service.methods.map(\.name).joined(separator: ", ")
                    throw CLIError(
                        .usage,
                        "\(place): \(keyword): \(service.name) has no method \(maskPAN(parts[1])) (its methods: \(methods))"
                    )
                }
                // A service no node of this build serves: a typo, or a name without its package (`Health/Check`).
                let close = ProtoRegistry.services.map(\.name).filter { CallCommand.isClose($0, parts[0]) }.sorted()
                let meant = close.isEmpty ? "" : "; did you mean \(close.joined(separator: " or "))?"
                throw CLIError(
                    .usage, "\(place): \(keyword): no node serves a service named \(maskPAN(parts[0]))\(meant)")
            }
            // The sandbox's nodes serve the services of their own package only: `call tsp tokenet.wallet.v1.…` would
            // fail as UNIMPLEMENTED once the steps before it had run.
            let service = String(path.dropFirst().prefix { $0 != "/" })
            if nodesOfThisBuild, !expectsRefusal, let serving = InspectSession.nodeName(serving: service),
                serving != "\(party)-node"
            {
                let meant = ScenarioParty.allCases.first { "\($0)-node" == serving }.map { " \($0)" } ?? ""
                throw CLIError(
                    .usage,
                    "\(place): \(keyword) \(party): \(service) is served by the \(serving), not the \(party)-node; "
                        + "write \(opening)\(meant) \(path.dropFirst())")
            }
            // A watch reads a stream of answers; a method that answers once is called.
            if keyword == "watch", let target = CallTarget.known(path),
                target.kind == .unary || target.kind == .clientStreaming
            {
                throw CLIError(.usage, "\(place): watch: \(path) answers once; call it instead")
            }
            // The method's roles, as the .proto declares them and this build's nodes enforce them: a call as another
            // role passed --check and failed as PERMISSION_DENIED once the steps before it had run.
            let name = String(path.split(separator: "/").last ?? "")
            if nodesOfThisBuild, !expectsDenial,
                let roles = ProtoRegistry.service(named: service)?.methods.first(where: { $0.name == name })?
                    .allowedRoles,
                !roles.isEmpty, !roles.contains(role)
            {
                let identities = roles.map { "identity \($0)" }.joined(separator: " or ")
                let denial =
                    switch keyword {
                    case "call": ", or expect PERMISSION_DENIED"
                    case "spawn": ", or expect PERMISSION_DENIED under its join"
                    default: ""
                    }
                throw CLIError(
                    .usage,
                    "\(place): \(keyword): \(path.dropFirst()) may be called as \(roles.joined(separator: " or ")), not as "
                        + "\(role) (the identity of the calls here); write \(identities) above it\(denial)")
            }
            guard ScenarioVariables.references(in: request).isEmpty else {
                // Its values are saved only as the script runs: the JSON is checked with stand-ins for them, for
                // its syntax alone (a stand-in is no value of the field's type).
                func notJSON(_ message: String) -> CLIError {
                    // The splitter's own messages start with "call: ", as `tokenet call` shows them.
                    let message = message.hasPrefix("call: ") ? String(message.dropFirst(6)) : message
                    return CLIError(.usage, "\(place): \(keyword): the request is not JSON: \(maskPAN(message))")
                }
                let texts: [String]
                do {
                    texts = try JSONTexts.split(ScenarioVariables.withStandIns(request))
                } catch {
                    throw notJSON(error.message)
                }
                for text in texts {
                    do {
                        _ = try JSONValue(parsing: text)
                    } catch {
                        throw notJSON(error.message)
                    }
                }
                // Then against the method's types, with each value that holds a saved one taken for null: a
                // misspelt field or enum value in a request that uses a saved value (most of them) was found only as
                // the run reached it.
                guard let target = CallTarget.known(path),
                    let marked = try? JSONTexts.split(
                        ScenarioVariables.withStandIns(request, inString: ScenarioVariables.referenceMarker)),
                    let known = try? marked.map({
                        ScenarioVariables.nullingReferences(try JSONValue(parsing: $0)).text()
                    })
                else { return }
                do {
                    _ = try CallCommand.encode(known, as: target, from: "the line")
                } catch {
                    throw CLIError(.usage, "\(place): \(error.message.replacing("call: ", with: "\(keyword): "))")
                }
                return
            }
            guard let target = CallTarget.known(path) else { return }
            do {
                _ = try CallCommand.encode(try JSONTexts.split(request), as: target, from: "the line")
            } catch {
                throw CLIError(.usage, "\(place): \(error.message.replacing("call: ", with: "\(keyword): "))")
            }
        }
        var mistakes: [(line: Int, error: CLIError)] = []
        for step in scenario.steps {
            do throws(CLIError) { try check(step) } catch { mistakes.append((step.line, error)) }
        }
        return mistakes
    }

    private func requireExecutables() throws(CLIError) {
        let binDirectory = RepositoryLocator.executableDirectory
        for (_, spec) in DemoCommand.startOrder {
            let path = binDirectory.appendingPathComponent(spec.name).path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw CLIError(
                    .setup, "\(spec.name) not found next to tokenet in \(binDirectory.path); run swift build")
            }
        }
    }

    /// Runs one scenario in a fresh sandbox. Returns 0 when every step went as written and the nodes stopped
    /// cleanly, 2 when a line turned out wrong only as it ran (a request that does not fit its method's type), and
    /// 1 for any other failure.
    private func run(_ scenario: Scenario, in sandbox: Sandbox) throws(CLIError) -> ScenarioResult {
        let started = ContinuousClock.now
        printOut("Scenario \(scenario.source)")
        let workspace = try sandbox.makeWorkspace(prefix: "tokenet-scenario")
        defer {
            if keepDirectory {
                printOut("  kept \(workspace.path) (node logs: */*.stderr.log)")
            } else {
                try? FileManager.default.removeItem(at: workspace)
            }
        }
        let fixture = try RepositoryLocator.issuerFixture(for: "scenario")
        guard let pki = try sandbox.prepareCertificates(in: workspace) else {
            throw CLIError(.setup, "scenario: the nodes need the development PKI, and Tools/gen-certs was not found")
        }
        let nodes = try ScenarioNodes(sandbox: sandbox, workspace: workspace, pki: pki, fixture: fixture)
        var failure: String?
        var failedTrace: String?
        var scriptError = false
        var calls = 0
        var runner: ScenarioRunner?
        do {
            try nodes.startAll { printOut("  \($0)") }
            // A node's error names the address it called, which is its link's proxy.
            printOut("  \(nodes.faultProxies)")
            runner = ScenarioRunner(scenario: scenario, nodes: nodes, verbose: verbose)
            calls = try runner!.run()
        } catch let error as ScenarioRunner.Failure {
            failure = " at line \(error.line): \(error.reason)"
            failedTrace = error.traceID
            scriptError = error.scriptError
        } catch let error as CLIError {
            // An interruption names the step it stopped: usually the one that hung.
            failure = runner?.currentLine.map { " at line \($0): \(error.description)" } ?? ": \(error.description)"
        } catch {
            failure = ": \(error)"
        }
        let stoppedCleanly = nodes.stopAll()
        if let failure {
            // A line of the script that was refused (a request that does not fit its type) sent no call: what the
            // nodes logged under its trace id says nothing of it, and "no node logged it" read as a lost call.
            let trace = scriptError ? nil : failedTrace.map { Self.traceLines($0, in: workspace) }
            printError("Scenario \(scenario.source) FAILED\(failure)")
            if let trace { printError(trace) }
            if !keepDirectory { printError("Rerun with --keep-dir to keep every node's logs.") }
            return ScenarioResult(
                source: scenario.source, status: scriptError ? 2 : 1, failure: "FAILED\(failure)", details: trace,
                since: started)
        }
        guard stoppedCleanly else {
            printError("Scenario \(scenario.source) FAILED: not every node stopped cleanly")
            return ScenarioResult(
                source: scenario.source, status: 1, failure: "FAILED: not every node stopped cleanly", details: nil,
                since: started)
        }
        printOut("Scenario \(scenario.source) OK: \(summary(scenario, calls: calls, since: started))")
        return ScenarioResult(source: scenario.source, status: 0, failure: nil, details: nil, since: started)
    }
}
