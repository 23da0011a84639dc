import Foundation
import TokenetNode

// A closed stdout (`tokenet demo | head -1`) must not kill tokenet before it has stopped the nodes it started.
signal(SIGPIPE, SIG_IGN)
// SIGQUIT (Ctrl-\) quits at once, as it does other programs: the Swift runtime's crash reporter took it, printed a
// backtrace headed "Program crashed", and let the command run on.
signal(SIGQUIT, SIG_DFL)
// Before anything opens a descriptor: a socket must not take the number of a stdout the shell closed.
StandardStream.occupyClosedDescriptors()
exit(TokenetCLI.statusAfterOutput(TokenetCLI.main(Array(CommandLine.arguments.dropFirst()))))
