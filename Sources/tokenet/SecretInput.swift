import Foundation

/// Secret flag values (`--pan -`, `--cvc -`, `--pin -`, `--code -`) read from standard input instead of the command
/// line, where every user of the machine can read them (`ps`, /proc/PID/cmdline) and the shell keeps them in its
/// history.
///
/// Each `-` takes one line, in the order the flags were given (`--pan - --cvc -` reads the card number, then the
/// CVC). At a terminal each is asked for by name on standard error, with echo off, as `ssh` and `sudo` ask for a
/// password; from a pipe or file (`printf '%s\n' "$PAN" "$CVC" | tokenet wallet add-card …`) the lines are read
/// without a prompt.
enum SecretInput {
    /// The flags whose value `-` means "read it from standard input", and what each holds, for prompts and errors.
    static let secrets: [String: String] = [
        "--pan": "card number", "--cvc": "CVC", "--pin": "PIN", "--code": "activation code",
    ]

    /// A line longer than this holds no secret value: it is refused before more is read.
    static let lineLimit = 256

    /// `flags` with the value of each secret flag given as `-` read from standard input.
    static func resolve(_ flags: PartyFlags, command: String) throws(CLIError) -> PartyFlags {
        let wanted = flags.order.filter { secrets[$0] != nil && flags.values[$0] == "-" }
        guard !wanted.isEmpty else { return flags }
        var resolved = flags
        let terminal = isatty(0) == 1
        for flag in wanted {
            let what = secrets[flag] ?? flag
            let line = try terminal ? prompt("\(what.prefix(1).uppercased() + what.dropFirst()): ") : readLine()
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
            resolved.values[flag] = line
        }
        return resolved
    }

    /// The next line of standard input without its line break (and a `\r` before it), or nil at its end. Read a byte
    /// at a time, so that nothing after the line is taken from the next reader.
    private static func readLine() throws(CLIError) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(0, &byte, 1)
            if count < 0 {
                if errno == EINTR { continue }
                throw CLIError(.usage, "cannot read standard input: \(String(cString: strerror(errno)))")
            }
            if count == 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { break }
            guard bytes.count < lineLimit else {
                throw CLIError(
                    .usage, "a line of standard input holds more than \(lineLimit) bytes: no secret is so long")
            }
            bytes.append(byte)
        }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The terminal's settings while echo is off, for the interrupt handler to put back.
    nonisolated(unsafe) private static var saved = termios()

    /// Asks for a line at the terminal with echo off. Ctrl-C there puts echo back before the command dies by it.
    private static func prompt(_ text: String) throws(CLIError) -> String? {
        FileHandle.standardError.write(Data(text.utf8))
        var settings = termios()
        guard tcgetattr(0, &settings) == 0 else { return try readLine() }
        saved = settings
        var quiet = settings
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        var restore = sigaction()
        var handler = sigaction()
        handler.__sigaction_handler.sa_handler = { number in
            _ = tcsetattr(0, TCSANOW, &SecretInput.saved)
            signal(number, SIG_DFL)
            raise(number)
        }
        sigemptyset(&handler.sa_mask)
        sigaction(SIGINT, &handler, &restore)
        _ = tcsetattr(0, TCSAFLUSH, &quiet)
        defer {
            _ = tcsetattr(0, TCSANOW, &settings)
            sigaction(SIGINT, &restore, nil)
        }
        return try readLine()
    }
}
