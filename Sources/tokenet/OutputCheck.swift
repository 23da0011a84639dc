import Foundation
import TokenetNode

extension TokenetCLI {
    /// The exit status once the command has run: a command whose standard output could not be written (a full disk,
    /// a closed descriptor) fails with status 1 and says so, because what it printed — a push receipt, a card
    /// reference, a token's history — never reached the file the user will read.
    static func statusAfterOutput(_ status: Int32) -> Int32 {
        guard let code = StandardStream.outputWriteError else { return status }
        printError("tokenet: cannot write standard output: \(String(cString: strerror(code)))")
        return status == 0 ? 1 : status
    }
}
