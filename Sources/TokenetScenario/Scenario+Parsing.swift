import TokenetCard
import TokenetFaults
import TokenetTransport
import TokenetWire

/// The scenario language, one step per line:
///
///     # a comment (a line whose first non-blank character is #)
///     call PARTY METHOD [JSON]        call a node as the operator; JSON is the rest of the line ({} without it)
///     expect [within D] CODE [X]      the call above ends with CODE; X is, for OK, a JSON object its last response
///                                     contains, and otherwise text its status message contains
///     save NAME FIELD [match RE]      the call above's FIELD (tokens[0].tokenId) becomes ${NAME} on later lines;
///                                     with RE, the part of it RE matches (its first group, when it has one)
///     fault LINK COMMAND              LINK: tsp->issuer, issuer->tsp, issuer->wallet, wallet->tsp, wallet->issuer;
///                                     COMMAND as tokenet proxy reads it (partition, delay 2s, reset, heal, …)
///     stop | kill | start PARTY       SIGTERM (clean exit required), SIGKILL, or start again on the same address
///     pause | resume PARTY            SIGSTOP and SIGCONT: a node frozen in place (its connections stay open)
///     watch NAME PARTY METHOD [JSON]  open a stream that collects its messages while later steps run
///     await NAME [within D] [JSON]    the watch's next message that contains JSON (save lines may follow)
///     identity ROLE[/ID]              the certificate of the calls below: operator (default), tsp, issuer, wallet,
///                                     or ROLE/ID for one of the script's own
///     encrypt NAME CARD MM/YY [CVC]   card data encrypted to the TSP's current key, as ${NAME}
///     spawn NAME PARTY METHOD [JSON]  start a call in the background while the lines below run
///     join NAME                       wait for the spawned call to end (expect and save lines may follow)
///     header KEY: VALUE | clear       request metadata of the calls below
///     deadline D                      the deadline of the calls below (30s until set)
///     sleep D
///     echo TEXT
///
/// PARTY is tsp, issuer or wallet; D a duration (250ms, 2s, 1.5s). The whole script is checked before it runs:
/// every `${NAME}` must be saved on an earlier line, `expect` and `save` must follow their call, a stopped node
/// cannot be stopped again nor a running one started.
extension Scenario {
    public static let steps =
        "call, expect, save, watch, await, fault, stop, kill, start, pause, resume, identity, header, deadline, "
        + "sleep, echo, encrypt, spawn, join"

    /// The certificates a step may present: the operator's, or a party's own.
    public static let identities = ["operator", "tsp", "issuer", "wallet"]

    /// `ROLE/ID` (`wallet/my-wallet`): an identity of the script's own, with the certificate `ID.pem` that
    /// `Tools/gen-certs --node ROLE/ID` makes (the URI SAN tokenet://ROLE/ID), as a party under test has, or the
    /// PKI's own one of the role (`wallet/wallet-1`, `pkiID`); nil when `text` is not one (`ownIdentityProblem` says
    /// why).
    public static func ownIdentity(_ text: String) -> (role: String, id: String)? {
        guard ownIdentityProblem(text) == nil, let slash = text.firstIndex(of: "/") else { return nil }
        return (String(text[..<slash]), String(text[text.index(after: slash)...]))
    }

    /// The longest ID of an identity of a script's own.
    public static let longestOwnIdentity = 64

    /// What is wrong with `text` as `ROLE/ID`, or nil when it is one. ID is 1 to 64 letters, digits, `.`, `_` and
    /// `-`, none of the file names the PKI has anyway (`ca` and the roles'), and not another role's ID in the PKI.
    public static func ownIdentityProblem(_ text: String) -> String? {
        guard let slash = text.firstIndex(of: "/") else { return "no ROLE/ID" }
        let role = String(text[..<slash])
        let id = text[text.index(after: slash)...]
        guard identities.contains(role) else { return "the role must be operator, tsp, issuer or wallet" }
        guard !id.isEmpty else { return "the ID after \(role)/ is empty" }
        guard id.utf8.count <= longestOwnIdentity else {
            return "the ID is \(id.utf8.count) bytes long; at most \(longestOwnIdentity)"
        }
        guard
            id.utf8.allSatisfy({ byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            })
        else { return "the ID may hold only ASCII letters, digits, '.', '_' and '-'" }
        // Compared without case, as Tools/gen-certs compares them: CA.pem beside ca.pem is one file where names
        // ignore case, and it refused such an ID as the run reached the line, after --check had passed it.
        let lowered = id.lowercased()
        guard !id.hasPrefix(".") else {
            return "'\(id)' starts with '.', which Tools/gen-certs refuses; choose another ID"
        }
        guard !(["ca"] + identities).contains(lowered) else {
            return "'\(id)' names a certificate the PKI has anyway; choose another ID"
        }
        guard !lowered.hasSuffix(".pem"), !lowered.hasSuffix(".key") else {
            return "'\(id)' ends as the PKI's file names do (.pem, .key); choose another ID"
        }
        // Tools/gen-certs refuses to make a certificate for an ID that one of the PKI's own holds: the line passed
        // --check and the run failed as it reached it. The role's own ID is that certificate, and is taken.
        if let holder = identities.first(where: { pkiID(of: $0) == lowered }), holder != role || id != lowered {
            let theirs = "\(holder)/\(lowered)'s, whose certificate the PKI has anyway (\(holder).pem)"
            guard id != lowered else { return "the ID \(id) is \(theirs); give this identity another" }
            let same = holder == role ? ", or write \(role)/\(lowered) for that one" : ""
            return "the ID \(id) differs only in case from \(theirs); give this identity another\(same)"
        }
        return nil
    }

    /// The ID in the certificate the PKI has for `role` (`ROLE.pem`, with the URI SAN tokenet://ROLE/ROLE-1, as
    /// Tools/gen-certs makes it): `identity wallet/wallet-1` is the sandbox's own wallet, and presents `wallet.pem`.
    public static func pkiID(of role: String) -> String { "\(role)-1" }

    /// Parses and checks a whole script; throws its first mistake. Errors name the source and line:
    /// `flow.scenario:12: …`.
    public static func parse(_ text: String, source: String) throws(ScenarioError) -> Scenario {
        let checked = check(text, source: source)
        if let first = checked.mistakes.first { throw first.error }
        return checked.scenario
    }

    /// The parser's state between lines: the steps so far, which names are saved, and which nodes are down. A
    /// console (`tokenet up`) feeds it one line at a time and acts on each line's `Effect` at once.
    public struct Parser: Sendable {
        public private(set) var steps: [ScenarioStep] = []
        var saved: Set<String> = []
        var down: Set<ScenarioParty> = []
        var paused: Set<ScenarioParty> = []
        /// The index in `steps` of the call (or await) that `expect` and `save` lines attach to; nil after any other
        /// step.
        var openCall: Int?
        var watches: Set<String> = []
        /// Each identity of the script's own (`wallet/my-wallet`), by its ID in lower case: IDs that differ only in
        /// case are one certificate file where names ignore case, and Tools/gen-certs refuses the second.
        var ownRoles: [String: String] = [:]
        /// The names `encrypt` saved: JSON objects, which a request takes without quotes.
        var objects: Set<String> = []
        /// The spawned calls not joined yet, with their lines.
        var spawned: [String: Int] = [:]

        public init() {}

        /// Takes the nodes that run as the console found them after a line: a `start` that failed (a node that
        /// exited before it was ready) leaves its node down, and a node can end on its own. Without this the
        /// parser took the node for running, refused `start` ("stop or kill it first") while `stop` found nothing
        /// to stop. A node no longer running is no longer paused either.
        public mutating func nodesRunning(_ running: Set<ScenarioParty>) {
            down = Set(ScenarioParty.allCases).subtracting(running)
            paused.formIntersection(running)
        }

        /// Takes back the `expect` line just read, which the console's run refused as the line's own error (an
        /// expected object that is no response of the call's type): it is as if never typed, as a line the parser
        /// refuses is, so that a corrected one is not refused as the call's second expect line.
        public mutating func withdrawExpectation() {
            guard let index = openCall else { return }
            switch steps[index].action {
            case .call(var call):
                call.expectation = ScenarioExpectation()
                steps[index].action = .call(call)
            case .join(var join):
                join.expectation = ScenarioExpectation()
                steps[index].action = .join(join)
            default: break
            }
        }

        /// What one line did.
        public enum Effect: Sendable, Equatable {
            /// A blank line or a comment.
            case none
            /// A new step.
            case step(ScenarioStep)
            /// An `expect` line: the expectation it gave the call above.
            case expectation(ScenarioExpectation)
            /// A `save` line of the call or await above.
            case save(ScenarioCall.Save)
        }

        /// Reads one line, checked against the lines before it; errors start with the line number (`12: …`).
        public mutating func read(line text: String, number: Int) throws(ScenarioError) -> Effect {
            let count = steps.count
            let before = openCall.map { steps[$0].action }
            try parse(line: text, number: number)
            if steps.count > count { return .step(steps[count]) }
            guard let index = openCall, let before, steps[index].action != before else { return .none }
            switch (before, steps[index].action) {
            case (.call(let old), .call(let new)) where new.expectation != old.expectation:
                return .expectation(new.expectation)
            case (.call, .call(let new)): return new.saves.last.map(Effect.save) ?? .none
            case (.await, .await(let new)): return new.saves.last.map(Effect.save) ?? .none
            case (.join(let old), .join(let new)) where new.expectation != old.expectation:
                return .expectation(new.expectation)
            case (.join, .join(let new)): return new.saves.last.map(Effect.save) ?? .none
            default: return .none
            }
        }

        mutating func parse(line text: String, number: Int) throws(ScenarioError) {
            // Editors on Windows start a UTF-8 file with a byte order mark, which made the first step an unknown
            // '\u{FEFF}echo'; `tokenet call -d @` skips it the same way.
            let line = (number == 1 && text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text)
                .trimmingWhitespace()
            guard !line.isEmpty, !line.hasPrefix("#") else { return }
            let (keyword, rest) = line.firstWord()
            func fail(_ message: String) -> ScenarioError { ScenarioError(.syntax, "\(number): \(message)") }

            for name in ScenarioVariables.references(in: rest) where !saved.contains(name) {
                // A slip in the name (`${session}` for a `save sesion …`) is named with the one saved.
                let close = EditDistance.closest(to: name, among: saved.sorted())
                let meant =
                    close.isEmpty ? "" : "; did you mean " + close.map { "${\($0)}" }.joined(separator: " or ") + "?"
                throw ScenarioError(
                    .undefinedVariable,
                    "\(number): ${\(name)} is not saved by an earlier line (save \(name) FIELD)\(meant)")
            }
            // The card data `encrypt` keeps is an object: quoted, it would go into the request as a string's text.
            if ["call", "watch", "await", "expect", "spawn"].contains(keyword),
                let name = ScenarioVariables.referencesInsideStrings(in: rest).first(where: objects.contains)
            {
                throw fail(
                    "${\(name)} is the card data encrypt made, a JSON object: write it without quotes, as in "
                        + "\"encryptedCardData\": ${\(name)}")
            }
            if keyword != "expect" && keyword != "save" { openCall = nil }
            if keyword == "expect", let index = openCall, case .await = steps[index].action {
                throw fail("expect checks a call; an await line says what it waits for itself")
            }

            switch keyword {
            case "call":
                let (partyWord, afterParty) = rest.firstWord()
                let (method, request) = afterParty.firstWord()
                let party = try party(partyWord, number, for: keyword)
                guard !method.isEmpty else { throw fail("call \(party) needs a method (pkg.Service/Method)") }
                guard method.contains("/") || method.contains(".") else {
                    throw fail("call: '\(method)' is not a method; write it as pkg.Service/Method")
                }
                let call = ScenarioCall(party: party, method: method, request: request.isEmpty ? "{}" : request)
                openCall = steps.count
                steps.append(ScenarioStep(line: number, .call(call)))
            case "expect":
                if let index = openCall, case .join(var join) = steps[index].action {
                    guard join.expectation.line == nil else {
                        throw fail("the join on line \(steps[index].line) already has an expect line")
                    }
                    join.expectation = try expectation(rest, number)
                    guard join.expectation.within == nil else {
                        throw fail("expect within calls again, and a spawned call is made once; drop 'within'")
                    }
                    steps[index].action = .join(join)
                    return
                }
                guard let index = openCall, case .call(var call) = steps[index].action else {
                    throw fail("expect must follow the call it checks (only save lines may come between)")
                }
                guard call.expectation.line == nil else {
                    throw fail("the call on line \(steps[index].line) already has an expect line")
                }
                call.expectation = try expectation(rest, number)
                steps[index].action = .call(call)
            case "save":
                guard let index = openCall else {
                    throw fail("save must follow the call (or await) whose response it reads")
                }
                let (name, afterName) = rest.firstWord()
                let (fieldText, afterField) = afterName.firstWord()
                guard ScenarioVariables.isValidName(name) else {
                    throw fail(
                        "save NAME FIELD: '\(name)' is not a name "
                            + "(an ASCII letter or _, then ASCII letters, digits, _ or -)")
                }
                guard let field = JSONPath(parsing: fieldText) else {
                    throw fail(
                        "save \(name) FIELD: '\(fieldText)' is not a field (such as cardRef or tokens[0].tokenId)")
                }
                var pattern: String?
                if !afterField.isEmpty {
                    let (keyword, regex) = afterField.firstWord()
                    guard keyword == "match", !regex.isEmpty else {
                        throw fail("save \(name) \(field): expected 'match REGEX' or the end of the line")
                    }
                    do {
                        _ = try ScenarioCall.Save.compile(regex)
                    } catch {
                        throw fail("save \(name) \(field) match: '\(regex)' is not a regular expression")
                    }
                    pattern = regex
                }
                let save = ScenarioCall.Save(name: name, field: field, pattern: pattern, line: number)
                guard steps[index].action.append(save) else {
                    throw fail("save must follow the call (or await) whose response it reads")
                }
                saved.insert(name)
                objects.remove(name)
            case "spawn":
                let (name, call) = try namedCall(keyword, rest, number)
                if let earlier = spawned[name] {
                    throw fail("spawn \(name): the call spawned on line \(earlier) is not joined yet (join \(name))")
                }
                spawned[name] = number
                steps.append(ScenarioStep(line: number, .spawn(ScenarioSpawn(name: name, call: call))))
            case "join":
                guard !rest.isEmpty, !rest.contains(" ") else { throw fail("join needs the NAME of a spawned call") }
                guard spawned.removeValue(forKey: rest) != nil else {
                    throw fail(
                        "join: '\(clipped(rest))' is not a call spawned by an earlier "
                            + "line and not joined yet")
                }
                openCall = steps.count
                steps.append(ScenarioStep(line: number, .join(ScenarioJoin(name: rest))))
            case "watch":
                let (name, call) = try namedCall(keyword, rest, number)
                // A name watched again replaces its watch (the runner closes the old stream): a restarted node
                // ends a watch, and the script opens it again under the name its awaits use.
                watches.insert(name)
                steps.append(
                    ScenarioStep(
                        line: number,
                        .watch(ScenarioWatch(name: name, party: call.party, method: call.method, request: call.request))
                    ))
            case "await":
                var (name, after) = rest.firstWord()
                guard !name.isEmpty else { throw fail("await needs the NAME of a watch") }
                guard watches.contains(name) else {
                    throw fail("await: '\(name)' is not watched by an earlier line (watch \(name) PARTY METHOD)")
                }
                var awaited = ScenarioAwait(name: name)
                let (word, afterWord) = after.firstWord()
                if word == "within" {
                    let (durationWord, afterDuration) = afterWord.firstWord()
                    awaited.within = try self.within(durationWord, "await within", number)
                    after = afterDuration
                }
                if !after.isEmpty {
                    // Checked now, with stand-ins for values saved only as the script runs: a script with a broken
                    // object fails before its nodes start.
                    do {
                        _ = try ScenarioExpectation.object(ScenarioVariables.withStandIns(after))
                    } catch {
                        throw fail(error.message.replacing("expect OK", with: "await"))
                    }
                    awaited.contains = after
                }
                openCall = steps.count
                steps.append(ScenarioStep(line: number, .await(awaited)))
            case "header":
                if rest == "clear" {
                    steps.append(ScenarioStep(line: number, .header(nil)))
                } else {
                    guard let colon = rest.firstIndex(of: ":"), colon != rest.startIndex else {
                        let shown = clipped(rest)
                        throw fail("header: expected 'KEY: VALUE' or 'clear', got '\(shown)'")
                    }
                    steps.append(ScenarioStep(line: number, .header(rest)))
                }
            case "identity":
                if !Scenario.identities.contains(rest) {
                    let shown = clipped(rest)
                    if rest.contains("/"), let problem = Scenario.ownIdentityProblem(rest) {
                        throw fail("identity \(shown): \(problem)")
                    }
                    guard let own = Scenario.ownIdentity(rest) else {
                        throw fail(
                            "identity: expected operator, tsp, issuer or wallet, or ROLE/ID for an identity of its own "
                                + "(wallet/my-wallet), got '\(shown)'")
                    }
                    // One certificate file per ID: a second role of the same ID would present the first one's.
                    if let earlier = ownRoles[own.id.lowercased()], earlier != rest {
                        let clash = earlier.hasSuffix("/\(own.id)") ? "is" : "differs only in case from"
                        throw fail(
                            "identity \(rest): the ID \(own.id) \(clash) \(earlier)'s in this script; give this "
                                + "identity another")
                    }
                    ownRoles[own.id.lowercased()] = rest
                }
                steps.append(ScenarioStep(line: number, .identity(rest)))
            case "fault":
                let (linkWord, commandText) = rest.firstWord()
                guard let link = ScenarioLink.all.first(where: { $0.description == linkWord }) else {
                    let links = ScenarioLink.all.map(\.description).joined(separator: ", ")
                    throw fail("fault: '\(linkWord)' is not a link (links: \(links))")
                }
                let command: FaultCommand
                do {
                    command = try FaultCommand.parse(commandText)
                } catch {
                    // A script cannot ask for `status`, so the commands it is offered leave it out.
                    let message = error.message.replacing(
                        "(commands: \(FaultCommand.summary))", with: "(commands: \(FaultCommand.changes))")
                    throw fail("fault \(link): \(message)")
                }
                guard command != .status else { throw fail("fault \(link): status is for tokenet proxy's console") }
                steps.append(ScenarioStep(line: number, .fault(link, command)))
            case "stop", "kill", "start", "pause", "resume":
                let party = try party(rest, number, for: keyword)
                let node = "\(keyword) \(party): \(party)-node"
                switch keyword {
                case "start":
                    guard down.remove(party) != nil else {
                        // Paused, it can only be resumed or killed: `stop` is refused for it.
                        if paused.contains(party) { throw fail("\(node) is paused (resume it, or kill it first)") }
                        throw fail("\(node) is running (stop or kill it first)")
                    }
                    steps.append(ScenarioStep(line: number, .start(party)))
                case "pause":
                    guard !down.contains(party) else { throw fail("\(node) is not running (start it first)") }
                    guard paused.insert(party).inserted else { throw fail("\(node) is already paused") }
                    steps.append(ScenarioStep(line: number, .pause(party)))
                case "resume":
                    // A paused node killed from outside (`tokenet up` learns of it) is down, not merely unpaused.
                    guard !down.contains(party) else { throw fail("\(node) is not running (start it first)") }
                    guard paused.remove(party) != nil else { throw fail("\(node) is not paused") }
                    steps.append(ScenarioStep(line: number, .resume(party)))
                default:
                    if keyword == "stop" && paused.contains(party) {
                        throw fail("\(node) is paused and could not drain (resume it first, or kill it)")
                    }
                    guard down.insert(party).inserted else { throw fail("\(node) is not running (start it first)") }
                    paused.remove(party)
                    steps.append(ScenarioStep(line: number, keyword == "stop" ? .stop(party) : .kill(party)))
                }
            case "deadline":
                // Above 0: a call with no time left ends while connecting, before the node hears of it, so every call
                // below would fail, as tokenet call --deadline 0s is refused for.
                let deadline = try duration(rest, keyword, number, positive: true)
                steps.append(ScenarioStep(line: number, .deadline(deadline)))
            case "sleep":
                steps.append(ScenarioStep(line: number, .sleep(try duration(rest, keyword, number))))
            case "echo":
                steps.append(ScenarioStep(line: number, .echo(rest)))
            case "encrypt":
                steps.append(ScenarioStep(line: number, .encrypt(try encrypt(rest, number))))
                if case .encrypt(let encrypt) = steps.last?.action {
                    saved.insert(encrypt.name)
                    objects.insert(encrypt.name)
                }
            default:
                // Asked for help (at the `tokenet up` console, most likely): where it is.
                if ["help", "?", "-h", "--help"].contains(keyword.lowercased()) {
                    throw fail(
                        "steps are written as in a scenario file (steps: \(Scenario.steps)); 'tokenet scenario --help' "
                            + "describes each")
                }
                // Status codes are read in any case, steps are not: the list alone left `Call` looking like a step.
                let lowered = keyword.lowercased()
                if lowered != keyword, Scenario.isStep(lowered) {
                    throw fail(
                        "unknown step '\(clipped(keyword))': steps are written in lower case; write '\(lowered)'")
                }
                throw fail("unknown step '\(clipped(keyword))' (steps: \(Scenario.steps))")
            }
        }

        /// `NAME PARTY METHOD [JSON]`, as `watch` and `spawn` take it: the name and the call, each checked for its
        /// form (the request `{}` when the line gives none).
        private func namedCall(_ keyword: String, _ rest: String, _ number: Int) throws(ScenarioError)
            -> (name: String, call: ScenarioCall)
        {
            func fail(_ message: String) -> ScenarioError { ScenarioError(.syntax, "\(number): \(message)") }
            let (name, afterName) = rest.firstWord()
            let (partyWord, afterParty) = afterName.firstWord()
            let (method, request) = afterParty.firstWord()
            guard ScenarioVariables.isValidName(name) else {
                throw fail(
                    "\(keyword) NAME PARTY METHOD: '\(clipped(name))' is not a name (an ASCII letter or _, then ASCII "
                        + "letters, digits, _ or -)")
            }
            let party = try party(partyWord, number, for: keyword)
            guard method.contains("/") || method.contains(".") else {
                throw fail("\(keyword) \(name): '\(clipped(method))' is not a method; write it as pkg.Service/Method")
            }
            return (name, ScenarioCall(party: party, method: method, request: request.isEmpty ? "{}" : request))
        }

        /// `NAME CARD_NUMBER MM/YY [CVC]`, each checked for its form (the number as digits only: a script may
        /// encrypt a number the TSP must refuse). A message never quotes the number.
        private func encrypt(_ rest: String, _ number: Int) throws(ScenarioError) -> ScenarioEncrypt {
            func fail(_ message: String) -> ScenarioError { ScenarioError(.syntax, "\(number): encrypt: \(message)") }
            let words = rest.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard (3...4).contains(words.count) else {
                // No card number in the example: messages are printed masked, and a masked one cannot be copied.
                throw fail(
                    "expected NAME CARD_NUMBER MM/YY [CVC]: a name, the card number's 12 to 19 digits without spaces, "
                        + "the expiry and, if the card has one, its security code")
            }
            guard ScenarioVariables.isValidName(words[0]) else {
                throw fail(
                    "'\(clipped(words[0]))' is not a name (an ASCII letter or _, then ASCII letters, digits, _ or -)")
            }
            guard (12...19).contains(words[1].utf8.count), words[1].utf8.allSatisfy({ (48...57).contains($0) }) else {
                throw fail("the card number must be 12 to 19 digits, written without spaces")
            }
            if let problem = ManualCardForm.expiryProblem(words[2]) { throw fail(problem) }
            let code = words.count == 4 ? words[3] : ""
            if let problem = ManualCardForm.securityCodeProblem(code) { throw fail(problem) }
            return ScenarioEncrypt(name: words[0], cardNumber: words[1], expiry: words[2], securityCode: code)
        }

        /// The party a step names; a refusal names the step (`stop: expected a party …`), as the others do.
        private func party(_ word: String, _ number: Int, for keyword: String) throws(ScenarioError) -> ScenarioParty {
            guard let party = ScenarioParty(rawValue: word) else {
                // A party and more after it: the more is the mistake (`stop tsp extra` blamed the party).
                let (first, after) = word.firstWord()
                if ScenarioParty(rawValue: first) != nil, !after.isEmpty {
                    throw ScenarioError(
                        .syntax, "\(number): \(keyword) \(first): unexpected '\(clipped(after))' after the party")
                }
                let shown = word.isEmpty ? "nothing" : "'\(clipped(word))'"
                if let lowered = ScenarioParty(rawValue: word.lowercased()) {
                    throw ScenarioError(
                        .syntax,
                        "\(number): \(keyword): got \(shown): parties are written in lower case; write "
                            + "'\(lowered.rawValue)'")
                }
                throw ScenarioError(
                    .syntax, "\(number): \(keyword): expected a party (tsp, issuer or wallet), got \(shown)")
            }
            return party
        }

        /// A duration of at most 10 minutes, above 0 when `positive`. Text that is no duration is told so, with what
        /// to write instead when a small change makes it one (`5` for 5s, `1S`, `2 s`): "a duration of at most 10
        /// minutes … got '5'" sent the reader looking for a limit that `5` is under.
        private func duration(
            _ text: String, _ keyword: String, _ number: Int, positive: Bool = false
        ) throws(ScenarioError) -> Duration {
            func fail(_ message: String) -> ScenarioError {
                ScenarioError(.syntax, "\(number): \(keyword): \(message)")
            }
            let shown = text.isEmpty ? "nothing" : "'\(clipped(text))'"
            let aboveZero = "expected a duration above 0, such as 250ms or 2s; got \(shown)"
            // A sign is no part of the syntax: "-1s" read as a duration over the limit.
            let unsigned = String(text.dropFirst())
            if text.hasPrefix("-"),
                DurationSyntax.seconds(in: unsigned) != nil || DurationSyntax.seconds(in: unsigned + "s") != nil
            {
                throw fail("a duration cannot be negative; expected one such as 250ms, 2s, 1.5s or 2m, got \(shown)")
            }
            guard let seconds = DurationSyntax.seconds(in: text) else {
                if positive, DurationSyntax.seconds(in: text + "s") == 0 { throw fail(aboveZero) }
                // The hint repeats the text, so only when the message shows it whole.
                var hint = clipped(text) == text ? DurationSyntax.hint(for: text, positive: positive) : nil
                // `sleep` takes the rest of the line, spaces and all.
                let joined = text.filter { !$0.isWhitespace }
                if hint == nil, joined != text, clipped(joined) == joined, DurationSyntax.seconds(in: joined) != nil {
                    hint = "without spaces: \(joined)"
                }
                throw fail(
                    "expected a duration such as 250ms, 2s, 1.5s or 2m; got \(shown)\(hint.map { " (\($0))" } ?? "")")
            }
            guard seconds <= 600 else {
                throw fail("expected a duration of at most 10 minutes, such as 250ms, 2s, 1.5s or 2m; got \(shown)")
            }
            let duration: Duration
            do {
                duration = try FaultCommand.duration(text)
            } catch {
                throw fail("\(shown) is shorter than 1us, the finest duration a script keeps")
            }
            guard duration > .zero || !positive else { throw fail(aboveZero) }
            return duration
        }

        /// A `within` time: above 0, since a call or a wait given none ends before it begins (the call's first
        /// step, looking up its method, failed with DEADLINE_EXCEEDED naming a call the script never made).
        private func within(_ text: String, _ keyword: String, _ number: Int) throws(ScenarioError) -> Duration {
            try duration(text, keyword, number, positive: true)
        }

        private func expectation(_ text: String, _ number: Int) throws(ScenarioError) -> ScenarioExpectation {
            var (word, rest) = text.firstWord()
            var within: Duration?
            if word == "within" {
                let (durationWord, afterDuration) = rest.firstWord()
                within = try self.within(durationWord, "expect within", number)
                (word, rest) = afterDuration.firstWord()
            }
            guard let code = WireV1.StatusCode(name: word) else {
                let shown = word.isEmpty ? "nothing" : "'\(clipped(word))'"
                throw ScenarioError(
                    .syntax, "\(number): expect: expected a status code (OK, NOT_FOUND, UNAVAILABLE, …), got \(shown)")
            }
            var expectation = ScenarioExpectation(code: code, within: within, line: number)
            guard !rest.isEmpty else { return expectation }
            if code == .ok {
                // Checked now, with stand-ins for values saved only as the script runs: a script with a broken
                // object fails before its nodes start.
                do {
                    _ = try ScenarioExpectation.object(ScenarioVariables.withStandIns(rest))
                } catch {
                    throw ScenarioError(.syntax, "\(number): \(error.message)")
                }
                expectation.contains = rest
            } else {
                guard !rest.opensUnclosedQuote else {
                    throw ScenarioError(
                        .syntax,
                        "\(number): expect \(word): the message text opens a quote that the line does not close; "
                            + "write it as \"text\" or without quotes")
                }
                expectation.messageContains = rest.unquoted()
            }
            return expectation
        }
    }
}

extension ScenarioStep.Action {
    /// Adds `save` to a call or an await; false for any other step. The call is taken out and the step emptied
    /// before the append, so that the saves are appended in place: copied on each line, a call's saves made checking
    /// a script of 100,000 save lines take minutes.
    mutating func append(_ save: ScenarioCall.Save) -> Bool {
        var call: ScenarioCall?
        var awaited: ScenarioAwait?
        var joined: ScenarioJoin?
        switch self {
        case .call(let value): call = value
        case .await(let value): awaited = value
        case .join(let value): joined = value
        default: return false
        }
        self = .echo("")
        if call != nil {
            call!.saves.append(save)
            self = .call(call!)
        } else if awaited != nil {
            awaited!.saves.append(save)
            self = .await(awaited!)
        } else {
            joined!.saves.append(save)
            self = .join(joined!)
        }
        return true
    }
}

/// A word of a script line as an error quotes it: at most 40 characters, never cut inside a number (`ShownPrefix`),
/// since the message is masked after it is cut.
private func clipped(_ word: some StringProtocol) -> String {
    ShownPrefix.shortened(word, scalarLimit: 40)
}
