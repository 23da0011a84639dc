import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// The table `tokenet issuer suspend-tokens|resume-tokens|delete-tokens` prints: ids are as the operator typed them,
/// and a result's message echoes its id, so a card number given as an id is masked in both columns. It was printed
/// in clear, twice a row.
@Suite(.timeLimit(.minutes(3))) struct IssuerTokenResultsTextTests {
    @Test func aCardNumberGivenAsAnIdIsMaskedInBothColumns() async throws {
        var router = RPCRouter()
        router.unary(IssuerV1.IssuerCardCare.changeTokenStates) { (request, _) async throws in
            IssuerV1.IssuerChangeTokenStatesResponse(
                results: request.digitalCardIds.map {
                    TspV1.TokenStateResult(
                        digitalCardID: $0, tokenState: .unspecified, statusCode: StatusCode.notFound.rawValue,
                        message: "no token has digital card id \"\($0)\"")
                })
        }
        let pki = DevelopmentPKI.shared
        let result = try await runTokenet(
            servedOverTLSBy: router, certificate: pki.path("issuer.pem"), key: pki.path("issuer.key")
        ) {
            [
                "issuer", "delete-tokens", $0, "4761000010000009", "--reason", "USER_REQUEST", "--cacert",
                pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
                "--deadline", "20s",
            ]
        }
        #expect(result.status == 64 + StatusCode.notFound.rawValue, "\(result.stderr)")
        #expect(!result.stdout.contains("4761000010000009"), "\(result.stdout)")
        #expect(
            result.stdout.contains(
                "************0009  -      NOT_FOUND: no token has digital card id \"************0009\""),
            "\(result.stdout)")
    }
}
