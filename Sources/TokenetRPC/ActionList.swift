/// The actions a state machine returns for one event, in the order the driver must take them.
///
/// Almost every event yields no action or exactly one, and those are held inline: returning them allocates
/// nothing. An `[Action]` costs a heap allocation (and its release) for every event that yields one — five per
/// unary call on each side of a connection, about a quarter of the allocations a served call made. Longer lists
/// fall back to an array.
///
/// It reads like an array: tests compare it with array literals, drivers iterate it.
struct ActionList<Action> {
    fileprivate enum Storage {
        case empty
        case one(Action)
        case many([Action])
    }

    private var storage: Storage

    init() {
        storage = .empty
    }

    init(_ action: consuming Action) {
        storage = .one(action)
    }

    init<Actions: Sequence>(_ actions: Actions) where Actions.Element == Action {
        storage = .empty
        append(contentsOf: actions)
    }

    mutating func append(_ action: consuming Action) {
        switch storage {
        case .empty:
            storage = .one(action)
        case .one(let first):
            storage = .many([first, action])
        case .many(var actions):
            storage = .empty  // leaves the array uniquely referenced, so appending does not copy it
            actions.append(action)
            storage = .many(actions)
        }
    }

    mutating func append<Actions: Sequence>(contentsOf actions: Actions) where Actions.Element == Action {
        for action in actions { append(action) }
    }

    static func += <Actions: Sequence>(list: inout ActionList, actions: Actions)
    where Actions.Element == Action {
        list.append(contentsOf: actions)
    }

    static func + (lhs: consuming ActionList, rhs: consuming ActionList) -> ActionList {
        if case .empty = rhs.storage { return lhs }
        var sum = lhs
        sum.append(contentsOf: rhs)
        return sum
    }
}

extension ActionList: RandomAccessCollection {
    var startIndex: Int { 0 }

    var endIndex: Int {
        switch storage {
        case .empty: 0
        case .one: 1
        case .many(let actions): actions.count
        }
    }

    subscript(position: Int) -> Action {
        switch storage {
        case .one(let action) where position == 0: action
        case .many(let actions): actions[position]
        default: preconditionFailure("action index \(position) is out of range (\(count) actions)")
        }
    }
}

extension ActionList {
    /// Hands the actions out by moving them, not copying: a copied action retains every buffer its frame holds,
    /// and the driver takes each action once.
    struct Iterator: IteratorProtocol {
        fileprivate var storage: Storage
        fileprivate var index = 0

        mutating func next() -> Action? {
            switch storage {
            case .empty:
                return nil
            case .one:
                var taken = Storage.empty
                swap(&taken, &storage)
                guard case .one(let action) = consume taken else { return nil }
                return action
            case .many(let actions):
                guard index < actions.count else { return nil }
                index += 1
                return actions[index - 1]
            }
        }
    }

    consuming func makeIterator() -> Iterator {
        Iterator(storage: storage)
    }
}

extension ActionList: ExpressibleByArrayLiteral {
    init(arrayLiteral actions: Action...) {
        switch actions.count {
        case 0: storage = .empty
        case 1: storage = .one(actions[0])
        default: storage = .many(actions)
        }
    }
}

extension ActionList: Equatable where Action: Equatable {
    static func == (lhs: ActionList, rhs: ActionList) -> Bool {
        lhs.elementsEqual(rhs)
    }
}

extension ActionList: Sendable where Action: Sendable {}

extension ActionList.Storage: Sendable where Action: Sendable {}

extension ActionList: CustomStringConvertible {
    var description: String { Array(self).description }
}
