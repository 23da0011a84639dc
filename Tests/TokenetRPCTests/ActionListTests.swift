import Testing

@testable import TokenetRPC

/// `ActionList` must behave like the array it replaces: order kept across the inline and array forms.
@Suite struct ActionListTests {
    @Test func emptyAndSingleListsReadLikeArrays() {
        let empty: ActionList<Int> = []
        #expect(empty.isEmpty && Array(empty) == [])
        let one = ActionList(7)
        #expect(one.count == 1 && one.first == 7 && one.last == 7 && Array(one) == [7])
        #expect(one == [7] && one != [8] && one != [7, 7])
    }

    @Test func appendingKeepsOrderThroughEveryForm() {
        var list = ActionList<Int>()
        for value in 1...5 {
            list.append(value)
            #expect(Array(list) == Array(1...value))
            #expect(list.count == value && list[value - 1] == value)
        }
        list += [6, 7]
        #expect(list == [1, 2, 3, 4, 5, 6, 7])
    }

    @Test func concatenationKeepsOrder() {
        #expect(ActionList(1) + [] == [1])
        #expect([] + ActionList(2) == [2])
        #expect(ActionList(1) + ActionList(2) == [1, 2])
        #expect(([1, 2] as ActionList<Int>) + [3, 4] == [1, 2, 3, 4])
        #expect(ActionList([5, 6, 7]) == [5, 6, 7])
    }

    @Test func iterationHandsOutEveryActionOnce() {
        var seen: [String] = []
        let list: ActionList<String> = ["a"]
        for action in list { seen.append(action) }
        let longer: ActionList<String> = ["b", "c", "d"]
        for action in longer { seen.append(action) }
        #expect(seen == ["a", "b", "c", "d"])
    }
}
