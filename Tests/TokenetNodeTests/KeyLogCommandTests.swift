import Foundation
import Testing
import TokenetTestSupport

/// The CLI with an SSLKEYLOGFILE it cannot write.
@Suite struct KeyLogCommandTests {
    /// It said "cannot load the TLS identity", sending the person to certificates that were fine.
    @Test func aKeyLogThatCannotBeWrittenIsNamedAsSuch() async throws {
        let pki = DevelopmentPKI.shared
        let directory = try TemporaryDirectory()
        let keyLog = directory.path("no-such-directory/keys.log")
        let result = try await runTokenet(
            [
                "list", "127.0.0.1:1", "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                pki.path("operator.key"),
            ], environment: ["SSLKEYLOGFILE": keyLog])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr
                == "tokenet: SSLKEYLOGFILE=\(keyLog) cannot be written (No such file or directory): name a file in a "
                + "directory that exists, or unset SSLKEYLOGFILE\n")
    }
}
