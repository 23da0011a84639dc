import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetScenario
import TokenetWire

/// One `encrypt` step: the card data a wallet sends the TSP, made against the running TSP's current key (its keys
/// change with each sandbox) with the identity of the calls, as `tokenet tsp encrypt-card` makes it.
extension ScenarioRunner {
    func runEncrypt(_ step: ScenarioEncrypt, line: Int) throws {
        let card: CardData
        switch ManualCardForm.expiry(step.expiry) {
        case .success(let expiry):
            card = CardData(
                accountNumber: step.cardNumber, expirationDate: CardData.ExpirationDate(expiry),
                cvv2: step.securityCode.isEmpty ? nil : step.securityCode)
        case .failure(let problem):
            throw Failure(line: line, reason: "encrypt \(step.name): \(problem.message)", scriptError: true)
        }
        let options = InspectOptions(
            identity: identity, at: addresses[.tsp]!, pkiDirectory: pki.path, deadline: deadline)
        let traceID = headers.traceID ?? Metadata.newTraceID()
        let result: Result<CardV1.EncryptedCardData, RPCError> = runBlocking {
            let session: InspectSession
            do {
                session = try await InspectSession.connect(options)
            } catch {
                return .failure(error as? RPCError ?? RPCError(.unavailable, "\(error)"))
            }
            var callOptions = session.callOptions
            callOptions.metadata.setTraceID(traceID)
            let encrypted: Result<CardV1.EncryptedCardData, RPCError>
            do {
                encrypted = .success(
                    try await CardV1.EncryptedCardData.forTSP(card, client: session.client, options: callOptions))
            } catch {
                encrypted = .failure(error as? RPCError ?? RPCError(.unavailable, "\(error)"))
            }
            await session.close()
            return encrypted
        }
        switch result {
        case .success(let encrypted):
            variables[step.name] = .object([
                (key: "jwe", value: .string(encrypted.jwe)),
                (key: "publicKeyIdentifier", value: .string(encrypted.publicKeyIdentifier)),
            ])
            print(
                line,
                "encrypt \(step.name): the card ending \(step.cardNumber.suffix(4)) (\(step.expiry)) for the TSP's key "
                    + encrypted.publicKeyIdentifier)
        case .failure(let error):
            try interruption.check()
            let message = namingTheStartStep(error.message, code: error.code, party: .tsp)
            throw Failure(
                line: line,
                reason: "encrypt \(step.name): the TSP's encryption key could not be read: "
                    + "\(error.code.protoValueName ?? String(error.code.rawValue)): \(maskPAN(message))",
                traceID: traceID)
        }
    }
}
