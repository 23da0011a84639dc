import Foundation

// A closed stdout (`tokenet demo | head -1`) must not kill tokenet before it has stopped the nodes it started.
signal(SIGPIPE, SIG_IGN)
exit(TokenetCLI.statusAfterOutput(TokenetCLI.main(Array(CommandLine.arguments.dropFirst()))))
