import Foundation
import Synchronization

/// Secret flag values (`--pan -`, `--cvc -`, `--pin -`, `--code -`) read from standard input instead of the command
/// line, where every user of the machine can read them (`ps`, /proc/PID/cmdline) and the shell keeps them in its
/// history.
///
/// Each `-` takes one line, in the order the flags were given (`--pan - --cvc -` reads the card number, then the
/// CVC). At a terminal each is asked for by name on standard error, with echo off, as `ssh` and `sudo` ask for a
/// password; from a pipe or file (`printf '%s\n' "$PAN" "$CVC" | tokenet wallet add-card …`) the lines are read
/// without a prompt. Nothing is read until a command has checked the rest of its command line and asks for the
/// first secret's value (`PartyFlags.secret(_:)`): a mistake elsewhere on the line is said before anything is typed.
enum SecretInput {
    /// The flags whose value `-` means "read it from standard input", and what each holds, for prompts and errors.
    static let secrets: [String: String] = [
        "--pan": "card number", "--cvc": "CVC", "--pin": "PIN", "--code": "activation code",
    ]

    /// A line longer than this holds no secret value: it is refused before more is read.
    static let lineLimit = 256

    /// The values read for `flags`' secret flags given as `-`, read once, when a command first asks for one.
    final class Values: Sendable {
        private let read = Mutex<[String: String]?>(nil)

        init() {}

        func value(of flag: String, in flags: PartyFlags) throws(CLIError) -> String? {
            if let values = read.withLock({ $0 }) { return values[flag] }
            let values = try SecretInput.readAll(for: flags)
            read.withLock { $0 = values }
            return values[flag]
        }
    }

    /// Reads a line for each secret flag of `flags` given as `-`, in the order given.
    static func readAll(for flags: PartyFlags) throws(CLIError) -> [String: String] {
        let command = flags.command
        let wanted = flags.order.filter { secrets[$0] != nil && flags.values[$0] == "-" }
        let terminal = isatty(0) == 1
        var values: [String: String] = [:]
        for flag in wanted {
            let what = secrets[flag] ?? flag
            let line: String?
            do throws(LineTooLong) {
                line = try terminal ? prompt("\(what.prefix(1).uppercased() + what.dropFirst()): ") : readLine()
            } catch {
                throw CLIError(
                    .usage,
                    "\(command): \(flag) -: the line read for the \(what) holds more than \(lineLimit) bytes; give "
                        + "the \(what) alone on its line")
            }
            guard let line else {
                let each =
                    wanted.count > 1 ? " (one line each for \(wanted.joined(separator: ", ")), in that order)" : ""
                throw CLIError(
                    .usage,
                    "\(command): \(flag) -: standard input ended before the \(what); give it on a line of its own\(each)"
                )
            }
            guard !line.isEmpty else {
                throw CLIError(.usage, "\(command): \(flag) -: standard input gave an empty line for the \(what)")
            }
            values[flag] = line
        }
        return values
    }

    /// A line over `lineLimit` bytes.
    struct LineTooLong: Error {}

    /// The next line of standard input without its line break (and a `\r` before it), or nil at its end (or when it
    /// cannot be read). Read a byte at a time, so that nothing after the line is taken from the next reader.
    private static func readLine() throws(LineTooLong) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(0, &byte, 1)
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { break }
            guard bytes.count < lineLimit else { throw LineTooLong() }
            bytes.append(byte)
        }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Asks for a line at the terminal with echo off. A signal that ends or stops the command there (Ctrl-C, Ctrl-\,
    /// Ctrl-Z, SIGTERM, SIGHUP) puts echo back first; a command stopped and continued asks on without echo. Input
    /// typed ahead (two secrets pasted at once) is kept for the next prompt.
    private static func prompt(_ text: String) throws(LineTooLong) -> String? {
        // The throwing write: `write(_:)` traps on an error (standard error closed, or a pipe nobody reads).
        try? FileHandle.standardError.write(contentsOf: Data(text.utf8))
        var settings = termios()
        guard tcgetattr(0, &settings) == 0 else { return try readLine() }
        var quiet = settings
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        TerminalEcho.hide(saved: settings, quiet: quiet)
        defer { TerminalEcho.restore() }
        return try readLine()
    }
}

/// The terminal's settings while a secret is typed, and the signal handlers that put them back: a command that dies
/// or stops with echo off leaves the shell typing blind.
private enum TerminalEcho {
    nonisolated(unsafe) static var saved = termios()
    nonisolated(unsafe) static var quiet = termios()
    nonisolated(unsafe) static var previous: [Int32: sigaction] = [:]
    static let ending: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    static func hide(saved settings: termios, quiet settingsWithoutEcho: termios) {
        saved = settings
        quiet = settingsWithoutEcho
        for number in ending + [SIGTSTP] {
            var handler = sigaction()
            handler.__sigaction_handler.sa_handler = number == SIGTSTP ? stopped : ended
            sigemptyset(&handler.sa_mask)
            // Not blocked while handled: the signal raised again from the handler acts at once (a stop stops
            // there, and the handler goes on once continued).
            handler.sa_flags = Int32(SA_NODEFER)
            var old = sigaction()
            sigaction(number, &handler, &old)
            previous[number] = old
        }
        _ = tcsetattr(0, TCSANOW, &quiet)
    }

    static func restore() {
        _ = tcsetattr(0, TCSANOW, &saved)
        for (number, var old) in previous { sigaction(number, &old, nil) }
        previous = [:]
    }

    /// Echo back, then the signal as if unhandled (the command dies by it, as the shell expects).
    static let ended: @convention(c) (Int32) -> Void = { number in
        _ = tcsetattr(0, TCSANOW, &TerminalEcho.saved)
        signal(number, SIG_DFL)
        raise(number)
    }

    /// Echo back while stopped; echo off again, and this handler again, once continued.
    static let stopped: @convention(c) (Int32) -> Void = { number in
        _ = tcsetattr(0, TCSANOW, &TerminalEcho.saved)
        signal(number, SIG_DFL)
        raise(number)
        signal(number, TerminalEcho.stopped)
        _ = tcsetattr(0, TCSANOW, &TerminalEcho.quiet)
    }
}
