import Testing

@testable import TokenetCard

/// The token lifecycle as a complete state × event table.
@Suite struct TokenLifecycleStateMachineTests {
    typealias Machine = TokenLifecycleStateMachine
    typealias State = Machine.State

    enum Expected: Equatable {
        case to(State)
        case unchanged
        case rejected(String)
    }

    static let table: [(State, Machine.Event, Expected)] = [
        (.inactive, .activate, .to(.active)),
        (
            .inactive, .suspend,
            .rejected(
                "cannot suspend a token that is INACTIVE; it is not in use yet (it waits for ID&V or for its issuer's "
                    + "decision): complete its activation, or delete it")
        ),
        (
            .inactive, .resume,
            .rejected(
                "cannot resume a token that is INACTIVE; it is not in use yet (it waits for ID&V or for its issuer's "
                    + "decision): complete its activation, or delete it")
        ),
        (.inactive, .delete, .to(.deactivated)),
        (.active, .activate, .unchanged),
        (.active, .suspend, .to(.suspended)),
        (.active, .resume, .rejected("cannot resume a token that is ACTIVE; only a SUSPENDED token can be resumed")),
        (.active, .delete, .to(.deactivated)),
        (
            .suspended, .activate,
            .rejected(
                "cannot activate a token that is SUSPENDED; activation is for a token waiting for ID&V (INACTIVE), "
                    + "and each suspension is lifted by a resume from the party that made it (or the TSP)")
        ),
        (.suspended, .suspend, .rejected("cannot suspend a token that is SUSPENDED; it is suspended already")),
        (.suspended, .resume, .to(.active)),
        (.suspended, .delete, .to(.deactivated)),
        (.deactivated, .activate, .rejected("cannot activate a token that is DEACTIVATED")),
        (.deactivated, .suspend, .rejected("cannot suspend a token that is DEACTIVATED")),
        (.deactivated, .resume, .rejected("cannot resume a token that is DEACTIVATED")),
        (.deactivated, .delete, .unchanged),
    ]

    @Test func tableCoversEveryPair() {
        let pairs = Set(Self.table.map { "\($0.0)/\($0.1)" })
        #expect(pairs.count == State.allCases.count * Machine.Event.allCases.count)
    }

    @Test(arguments: Self.table.indices)
    func transition(_ row: Int) {
        let (state, event, expected) = Self.table[row]
        var machine = Machine(state: state)
        let outcome = machine.handle(event)
        switch expected {
        case .to(let next):
            #expect(outcome == .transitioned(from: state, to: next))
            #expect(machine.state == next)
        case .unchanged:
            #expect(outcome == .unchanged(state))
            #expect(machine.state == state)
        case .rejected(let prefix):
            guard case .rejected(let rejection) = outcome else {
                Issue.record("\(event) in \(state) was not rejected: \(outcome)")
                return
            }
            #expect(rejection.state == state)
            #expect(rejection.event == event)
            #expect(rejection.message.hasPrefix(prefix), "\(rejection.message)")
            #expect(rejection.error.code == .invalidTransition)
            #expect(machine.state == state)
        }
    }

    @Test func eventMethodsMatchHandle() {
        var machine = Machine()
        #expect(machine.state == .inactive)
        #expect(machine.activate() == .transitioned(from: .inactive, to: .active))
        #expect(machine.activate() == .unchanged(.active))
        #expect(machine.suspend() == .transitioned(from: .active, to: .suspended))
        #expect(machine.resume() == .transitioned(from: .suspended, to: .active))
        #expect(machine.delete() == .transitioned(from: .active, to: .deactivated))
        #expect(machine.resume() == .rejected(.init(state: .deactivated, event: .resume)))
        #expect(machine.state == .deactivated)
    }

    @Test func stateNamesAreTheWireNames() {
        #expect(State.allCases.map(\.rawValue) == ["INACTIVE", "ACTIVE", "SUSPENDED", "DEACTIVATED"])
    }
}
