import Foundation

exit(TokenetCLI.main(Array(CommandLine.arguments.dropFirst())))
