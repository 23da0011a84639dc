import Testing

@testable import TokenetIssuer

@Suite struct RegistrationStateMachineTests {
    @Test func retriesWithDoublingDelaysUntilSuccess() {
        var machine = RegistrationStateMachine(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(300))
        var actions: [RegistrationStateMachine.Action?] = [machine.start()]
        actions.append(machine.attemptFailed())
        actions.append(machine.waited())
        actions.append(machine.attemptFailed())
        actions.append(machine.waited())
        actions.append(machine.attemptFailed())
        actions.append(machine.waited())
        actions.append(machine.attemptFailed())
        actions.append(machine.waited())
        actions.append(machine.attemptSucceeded())
        #expect(
            actions == [
                .register(attempt: 1), .wait(.milliseconds(100), thenAttempt: 2), .register(attempt: 2),
                .wait(.milliseconds(200), thenAttempt: 3), .register(attempt: 3),
                .wait(.milliseconds(300), thenAttempt: 4), .register(attempt: 4),
                .wait(.milliseconds(300), thenAttempt: 5), .register(attempt: 5), .finished(attempts: 5),
            ])
        #expect(machine.state == .registered(attempts: 5))
    }

    @Test func eventsOutOfOrderAreIgnored() {
        var machine = RegistrationStateMachine()
        #expect(machine.waited() == nil)
        #expect(machine.attemptSucceeded() == nil)
        #expect(machine.start() == .register(attempt: 1))
        #expect(machine.start() == nil)
        #expect(machine.waited() == nil)
        #expect(machine.attemptSucceeded() == .finished(attempts: 1))
        #expect(machine.attemptFailed() == nil)
    }
}
