import Foundation
import Testing
import TokenetScenario
import TokenetWire

@Suite struct ScenarioExpectationTests {
    private func json(_ text: String) throws -> JSONValue { try JSONValue(parsing: text) }

    @Test func containmentIgnoresOtherFieldsAndDefaults() throws {
        let response = try json(#"{"cardRef": "card-1", "eligible": true, "count": "12", "card": {"state": "A"}}"#)
        #expect(response.mismatch(containing: try json(#"{"eligible": true}"#)) == nil)
        #expect(response.mismatch(containing: try json(#"{"card": {"state": "A"}}"#)) == nil)
        #expect(response.mismatch(containing: try json(#"{"card_ref": "card-1"}"#)) == nil)
        // proto3 JSON writes 64-bit integers as strings and leaves defaults out.
        #expect(response.mismatch(containing: try json(#"{"count": 12}"#)) == nil)
        #expect(response.mismatch(containing: try json(#"{"declined": false, "reason": "", "n": 0}"#)) == nil)
        #expect(response.mismatch(containing: try json("{}")) == nil)
    }

    @Test func mismatchesNameTheField() throws {
        let response = try json(#"{"card": {"state": "A"}, "eligible": true}"#)
        #expect(
            response.mismatch(containing: try json(#"{"card": {"state": "B"}}"#))
                == #"card.state: expected "B", got "A""#)
        #expect(
            response.mismatch(containing: try json(#"{"reason": "x"}"#))
                == #"reason: expected "x", got "" (left out, as proto3 JSON leaves a default)"#)
        // A false left out is false, not missing; a message left out is not set.
        #expect(
            try json("{}").mismatch(containing: try json(#"{"eligible": true}"#))
                == "eligible: expected true, got false (left out, as proto3 JSON leaves a default)")
        #expect(
            try json("{}").mismatch(containing: try json(#"{"card": {"state": "A"}}"#))
                == #"card: missing, expected {"state":"A"}"#)
        #expect(
            response.mismatch(containing: try json(#"{"eligible": false}"#)) == "eligible: expected false, got true")
        #expect(
            response.mismatch(containing: try json(#"{"card": "A"}"#)) == #"card: expected "A", got {"state":"A"}"#)
    }

    @Test func arraysMatchAsASubsequence() throws {
        let response = try json(#"{"tokens": [{"id": "a", "s": 1}, {"id": "b", "s": 2}, {"id": "c", "s": 1}]}"#)
        #expect(response.mismatch(containing: try json(#"{"tokens": [{"id": "b"}]}"#)) == nil)
        #expect(response.mismatch(containing: try json(#"{"tokens": [{"id": "a"}, {"id": "c"}]}"#)) == nil)
        // `[]` asks for no elements: as a subsequence it matched any list, so "no tokens" could not be asserted.
        #expect(
            response.mismatch(containing: try json(#"{"tokens": []}"#))?.hasPrefix(
                "tokens: expected no elements ([]), got 3: ") == true)
        #expect(try json(#"{"tokens": []}"#).mismatch(containing: try json(#"{"tokens": []}"#)) == nil)
        #expect(try json("{}").mismatch(containing: try json(#"{"tokens": []}"#)) == nil)
        let reason = response.mismatch(containing: try json(#"{"tokens": [{"id": "c"}, {"id": "a"}]}"#))
        #expect(reason?.hasPrefix(#"tokens: no element after element 2 matches {"id":"a"}"#) == true, "\(reason ?? "")")
        let missing = response.mismatch(containing: try json(#"{"tokens": [{"id": "z"}]}"#))
        #expect(missing?.hasPrefix(#"tokens: no element matches {"id":"z"} (element 0: tokens[0].id"#) == false)
        #expect(missing?.hasPrefix(#"tokens: no element matches {"id":"z"} (element 0: id: expected"#) == true)
    }

    @Test func outcomesAreJudgedByCodeMessageAndLastResponse() throws {
        var variables = ScenarioVariables()
        variables["card"] = .string("card-1")
        let ok = ScenarioExpectation.Outcome(
            code: .ok, message: "", responses: [try json(#"{"n": 1}"#), try json(#"{"n": 2, "ref": "card-1"}"#)])
        #expect(try ScenarioExpectation().mismatch(ok, variables: variables) == nil)
        #expect(
            try ScenarioExpectation(contains: #"{"n": 2, "ref": "${card}"}"#, line: 3).mismatch(
                ok, variables: variables)
                == nil)
        #expect(
            try ScenarioExpectation(contains: #"{"n": 1}"#, line: 3).mismatch(ok, variables: variables)
                == "n: expected 1, got 2")
        #expect(
            try ScenarioExpectation(code: .notFound).mismatch(ok, variables: variables) == "expected NOT_FOUND, got OK")

        let failed = ScenarioExpectation.Outcome(code: .unavailable, message: "cannot connect", responses: [])
        #expect(
            try ScenarioExpectation().mismatch(failed, variables: variables)
                == "expected OK, got UNAVAILABLE: cannot connect")
        #expect(try ScenarioExpectation(code: .unavailable).mismatch(failed, variables: variables) == nil)
        #expect(
            try ScenarioExpectation(code: .unavailable, messageContains: "connect").mismatch(
                failed, variables: variables)
                == nil)
        #expect(
            try ScenarioExpectation(code: .unavailable, messageContains: "${card}").mismatch(
                failed, variables: variables)
                == #"expected the UNAVAILABLE message to contain "card-1", got "cannot connect""#)
        let empty = ScenarioExpectation.Outcome(code: .ok, message: "", responses: [])
        #expect(
            try ScenarioExpectation(contains: "{}", line: 1).mismatch(empty, variables: variables)
                == "expected a response, got none")
    }

    /// Nodes mask the card numbers their status messages quote, so an `expect` that names one looks for it masked
    /// as well: it could never match in clear, and the failure printed both sides masked, as if they were equal.
    @Test func aCardNumberInExpectedTextIsLookedForMasked() throws {
        let mask: (String) -> String = { $0.replacingOccurrences(of: "4761000010000009", with: "************0009") }
        let refused = ScenarioExpectation.Outcome(
            code: .notFound, message: #"no token has digital card id "************0009""#, responses: [])
        let expectation = ScenarioExpectation(code: .notFound, messageContains: "4761000010000009")
        #expect(try expectation.mismatch(refused, variables: ScenarioVariables(), mask: mask) == nil)
        let other = ScenarioExpectation.Outcome(code: .notFound, message: "no such card", responses: [])
        #expect(
            try expectation.mismatch(other, variables: ScenarioVariables(), mask: mask)
                == #"expected the NOT_FOUND message to contain "4761000010000009" (card numbers are looked for masked, as nodes send them), got "no such card""#
        )
    }

    @Test func aFilledInObjectThatIsNotJSONIsTheScriptsError() throws {
        var variables = ScenarioVariables()
        variables["n"] = .string("x")
        let ok = ScenarioExpectation.Outcome(code: .ok, message: "", responses: [.object([])])
        let error = #expect(throws: ScenarioError.self) {
            try ScenarioExpectation(contains: #"{"a": ${n}}"#, line: 7).mismatch(ok, variables: variables)
        }
        #expect(error?.message.hasPrefix("expect OK takes one JSON object") == true)
    }

    /// An expected object is checked against the response type: a field the type does not have, or a value of
    /// the wrong kind, is the script's error, where it used to be met by any response (a field a response does
    /// not hold matches its default).
    @Test func anExpectedObjectMustFitTheResponseType() throws {
        let ok = ScenarioExpectation.Outcome(
            code: .ok, message: "", responses: [try json(#"{"fString": "x"}"#)], responseType: TestingV1.Scalars.self)
        let variables = ScenarioVariables()
        #expect(
            try ScenarioExpectation(contains: #"{"fString": "x"}"#, line: 2).mismatch(ok, variables: variables) == nil)
        for (text, reason) in [
            (#"{"bogus": {}}"#, "bogus"), (#"{"fStrnig": "x"}"#, "fStrnig"), (#"{"fString": []}"#, "f_string"),
            (#"{"fColor": "VISA"}"#, "VISA"),
        ] {
            let error = #expect(throws: ScenarioError.self) {
                try ScenarioExpectation(contains: text, line: 2).mismatch(ok, variables: variables)
            }
            #expect(error?.message.hasPrefix("the expected object is not a tokenet.testing.v1.Scalars: ") == true)
            #expect(error?.message.contains(reason) == true, "\(String(describing: error))")
        }
    }

    @Test func statusNamesReadInAnyCase() {
        #expect(WireV1.StatusCode(name: "deadline_exceeded") == .deadlineExceeded)
        #expect(WireV1.StatusCode(name: "OK") == .ok)
        #expect(WireV1.StatusCode(name: "CODE_3") == nil)
        #expect(WireV1.StatusCode.unrecognized(40).name == "CODE_40")
    }
}
