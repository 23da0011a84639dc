/// `stderr` of a failed `tokenet call` or party command without its last line, "(trace ID)", whose id changes
/// from run to run; for tests that compare the rest of the output whole.
public func untraced(_ stderr: String) -> String {
    var lines = stderr.split(separator: "\n", omittingEmptySubsequences: false)
    // The output ends with a newline, so its last element is empty; the trace line is the one before it.
    guard lines.count >= 2, lines[lines.count - 2].hasPrefix("(trace "), lines[lines.count - 2].hasSuffix(")")
    else { return stderr }
    lines.remove(at: lines.count - 2)
    return lines.joined(separator: "\n")
}
