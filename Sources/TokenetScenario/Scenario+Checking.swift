extension Scenario {
    /// The most mistakes `check` names in one script: past them, the rest is most likely not a script at all.
    public static let mistakeLimit = 20

    /// Parses and checks a whole script, naming every mistake (up to `mistakeLimit`) rather than the first alone:
    /// with several to fix, one `tokenet scenario --check` names them all. Returns the steps of the lines it took
    /// (all of them when there are no mistakes) and the mistakes in line order, each with its line number, its
    /// message naming the source and line (`flow.scenario:12: …`).
    ///
    /// After a line it refuses, the check goes on as if the line had done what it was meant to, so that the lines
    /// below are not refused for it: the names it would have saved count as saved, the `expect` and `save` lines
    /// of a refused call are passed over, and a refused `stop` leaves its node stopped.
    public static func check(
        _ text: String, source: String, limit: Int = mistakeLimit
    ) -> (scenario: Scenario, mistakes: [(line: Int, error: ScenarioError)]) {
        var parser = Parser()
        var mistakes: [(line: Int, error: ScenarioError)] = []
        // Split on the line breaks editors and `wc -l` count: LF, CRLF ("\r\n" is one Character in Swift, so
        // splitting on "\n" alone would leave a script written on Windows as one long line) and CR. Not on the other
        // characters Swift calls newlines (U+2028, U+0085, a form feed, a vertical tab), which a JSON string may hold
        // and which made error line numbers disagree with the editor.
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
        // The call, spawn's join, watch's await… that a line refused: its expect and save lines are passed over.
        var skippingAttached = false
        // A refused line that may have been a join or meant for a spawned call (`join`, `spawn` of a name not yet
        // joined, an `expect` or `save` written under the spawn, a step misspelt): a spawn left unjoined is its echo.
        var mayHaveJoined = false
        for (index, rawLine) in lines.enumerated() {
            let number = index + 1
            let line = String(rawLine)
            if skippingAttached {
                let (keyword, rest) = line.trimmingWhitespace().firstWord()
                if keyword.isEmpty || keyword.hasPrefix("#") { continue }
                if keyword == "expect" { continue }
                if keyword == "save" {
                    parser.keepSavedName(rest.firstWord().0)
                    continue
                }
                skippingAttached = false
            }
            do {
                try parser.parse(line: line, number: number)
            } catch {
                mistakes.append((number, ScenarioError(error.code, "\(source):\(error.message)", cause: error.cause)))
                guard mistakes.count < limit else {
                    mistakes.append(
                        (
                            number,
                            ScenarioError(
                                .syntax,
                                "\(source):\(number): \(limit) mistakes so far; the lines after this one are not checked"
                            )
                        ))
                    return (Scenario(source: source, steps: parser.steps), mistakes)
                }
                skippingAttached = parser.recover(afterRefusing: line, number: number)
                // A line refused only for a name no line saved is taken as written once the name counts as saved
                // (`recover`), so that its own expect and save lines are checked: a misspelt enum value under a
                // call with a misspelt saved name was found only once the name was mended.
                if error.code == .undefinedVariable, (try? parser.parse(line: line, number: number)) != nil {
                    skippingAttached = false
                    continue
                }
                let keyword = line.trimmingWhitespace().firstWord().0.lowercased()
                if ["join", "spawn", "expect", "save"].contains(keyword) || !Scenario.isStep(keyword) {
                    mayHaveJoined = true
                }
            }
        }
        // A spawned call nobody joins would have its outcome go unjudged, and a failure pass unseen. Not told beside
        // a refused line that may have been its join.
        if !mayHaveJoined, let (name, line) = parser.spawned.min(by: { $0.value < $1.value }) {
            mistakes.append(
                (
                    line,
                    ScenarioError(
                        .syntax,
                        "\(source):\(line): spawn \(name) is never joined; add 'join \(name)' where its outcome counts")
                ))
        }
        // A script whose every line is blank or a comment (a file commented out, the wrong file) would otherwise
        // pass as "0 steps … OK", a success that tested nothing.
        if parser.steps.isEmpty && mistakes.isEmpty {
            mistakes.append(
                (
                    0,
                    ScenarioError(
                        .syntax, "\(source): has no steps, only blank lines and comments; write at least one (\(steps))"
                    )
                ))
        }
        mistakes.sort { $0.line < $1.line }
        return (Scenario(source: source, steps: parser.steps), mistakes)
    }

    /// Whether `word` is a step of the language.
    static func isStep(_ word: String) -> Bool {
        steps.split(separator: ", ").contains(Substring(word))
    }
}

extension Scenario.Parser {
    /// Takes from a line the parser refused what the lines below lean on, as if it had done what it was meant to:
    /// the name it saves, watches or spawns, the node it stops or starts. Returns whether the `expect` and `save`
    /// lines right below belong to it (a refused call, join or await), to be passed over.
    mutating func recover(afterRefusing text: String, number: Int) -> Bool {
        let (word, rest) = text.trimmingWhitespace().firstWord()
        // `Call` is refused for its capital alone; what it was meant to do is plain.
        let keyword = word.lowercased()
        let (first, _) = rest.firstWord()
        // As `parse` does for a line it takes: only expect and save lines keep the call above open.
        if keyword != "expect" && keyword != "save" { openCall = nil }
        let named = ScenarioVariables.isValidName(first)
        let party = ScenarioParty(rawValue: first)
        // A name the line used and no line saved is told once: its other uses are the same mistake.
        for name in ScenarioVariables.references(in: rest) { saved.insert(name) }
        switch keyword {
        case "save": keepSavedName(first)
        case "encrypt" where named:
            saved.insert(first)
            objects.insert(first)
        case "watch" where named: watches.insert(first)
        case "spawn" where named: spawned[first] = spawned[first] ?? number
        case "join": spawned.removeValue(forKey: rest)
        case "stop", "kill":
            if let party {
                down.insert(party)
                paused.remove(party)
            }
        case "start": if let party { down.remove(party) }
        case "pause": if let party { paused.insert(party) }
        case "resume": if let party { paused.remove(party) }
        default: break
        }
        // A step misspelt (`calll`) is most likely a call: its expect and save lines are its echoes too.
        return ["call", "join", "await"].contains(keyword) || !Scenario.isStep(keyword)
    }

    /// A `save` line passed over or refused still names a value the lines below may use.
    mutating func keepSavedName(_ name: String) {
        guard ScenarioVariables.isValidName(name) else { return }
        saved.insert(name)
        objects.remove(name)
    }
}
