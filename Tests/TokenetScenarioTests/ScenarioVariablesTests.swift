import Testing
import TokenetScenario
import TokenetWire

@Suite struct ScenarioVariablesTests {
    @Test func valuesGoInAsTheirContextNeeds() throws {
        var variables = ScenarioVariables()
        variables["s"] = .string(#"a "quoted" \ value"#)
        variables["n"] = .number("42")
        variables["o"] = .object([(key: "k", value: .bool(true))])
        #expect(
            try variables.fill(#"{"x": "${s}", "n": ${n}, "o": ${o}}"#, inJSON: true)
                == #"{"x": "a \"quoted\" \\ value", "n": 42, "o": {"k":true}}"#)
        #expect(try variables.fill("said ${s} ${n}", inJSON: false) == #"said a "quoted" \ value 42"#)
    }

    @Test func onlyValidNamesAreReferences() throws {
        let variables = ScenarioVariables()
        for text in ["$ {x}", "${}", "${9a}", "${a b}", "cost: $5", "${", "$"] {
            #expect(try variables.fill(text, inJSON: false) == text)
            #expect(ScenarioVariables.references(in: text).isEmpty, "\(text)")
        }
        #expect(ScenarioVariables.references(in: "${a}-${b_2}${c-d}") == ["a", "b_2", "c-d"])
        let error = #expect(throws: ScenarioError.self) { try variables.fill("x ${a}", inJSON: false) }
        #expect(error?.message == "${a} has no value")
    }

    /// `$${NAME}` writes the text `${NAME}` itself, needing no saved value; a lone `$$` stays as it is.
    @Test func aDoubledDollarIsTheTextItself() throws {
        var variables = ScenarioVariables()
        variables["a"] = .string("A")
        #expect(try variables.fill("$${a} ${a} $${b} $$ $${}", inJSON: false) == "${a} A ${b} $$ $${}")
        #expect(try variables.fill(#"{"t": "$${x}"}"#, inJSON: true) == #"{"t": "${x}"}"#)
        #expect(ScenarioVariables.references(in: "$${a} ${b} $${c}") == ["b"])
    }

    /// Before the values exist, each reference stands in as letters inside a string and as `null` elsewhere, with
    /// the text's length kept: the JSON can be checked, and an error's offset points into the script's own text.
    @Test func standInsKeepTheJSONsShapeAndItsLength() throws {
        let text = #"{"a": "x${card}y", "n": ${amount}, "o": ${o}, "q": "\"${s}", "t": "$${lit}"}"#
        let standIns = ScenarioVariables.withStandIns(text)
        #expect(standIns == #"{"a": "xxxxxxxxy", "n": null     , "o": null, "q": "\"xxxx", "t": "$${lit}"}"#)
        #expect(standIns.utf8.count == text.utf8.count)
        #expect(throws: Never.self) { try JSONValue(parsing: standIns) }
        #expect(ScenarioVariables.withStandIns("no references") == "no references")
    }

    @Test func pathsParseAndFindValues() throws {
        #expect(JSONPath(parsing: "a.b[0].c")?.components == [.key("a"), .key("b"), .index(0), .key("c")])
        #expect(JSONPath(parsing: "a.0.c") == JSONPath(parsing: "a[0].c"))
        #expect(JSONPath(parsing: "a[1][2]")?.components == [.key("a"), .index(1), .index(2)])
        for bad in ["", ".", "a.", ".a", "a[", "a[x]", "a[-1]", "a]b"] {
            #expect(JSONPath(parsing: bad) == nil, "\(bad)")
        }
        #expect(JSONPath(parsing: "a.b[0].c")?.description == "a.b[0].c")

        let value = try JSONValue(
            parsing: #"{"card": {"digitalCardId": "D1"}, "tokens": [{"id": "t0"}, {"id": "t1"}]}"#)
        #expect(try value.value(at: JSONPath(parsing: "card.digital_card_id")!).get() == .string("D1"))
        #expect(try value.value(at: JSONPath(parsing: "tokens[1].id")!).get() == .string("t1"))
        func failure(_ path: String) -> String? {
            guard case .failure(let error) = value.value(at: JSONPath(parsing: path)!) else { return nil }
            return error.message
        }
        #expect(failure("cardRef") == "the response has no field 'cardRef' (it has card, tokens)")
        #expect(failure("tokens[2].id") == "'tokens' has 2 elements, so no [2]")
        #expect(failure("card.digitalCardId.x") == "'card.digitalCardId' is a string, so it has no field 'x'")
        #expect(failure("card[0]") == "'card' is an object, so it has no element [0]")
    }

    /// With the response's type at hand, a field the JSON leaves out (it holds its default) is read as that
    /// default: `save` failed on `triesLeft` once no tries were left, while `expect` took it.
    @Test func aFieldHoldingItsDefaultIsReadAsThatDefault() throws {
        let type = TspV1.ListTokensResponse.self
        let empty = try JSONValue(parsing: "{}")
        #expect(try empty.value(at: JSONPath(parsing: "tokens")!, type: type).get() == .array([]))
        #expect(try empty.value(at: JSONPath(parsing: "next_page_token")!, type: type).get() == .string(""))
        let one = try JSONValue(parsing: #"{"tokens": [{"digitalCardId": "D1"}]}"#)
        #expect(
            try one.value(at: JSONPath(parsing: "tokens[0].state")!, type: type).get()
                == .string("TOKEN_STATE_UNSPECIFIED"))
        #expect(try one.value(at: JSONPath(parsing: "tokens[0].digitalCardId")!, type: type).get() == .string("D1"))
        // What the type does not have, or a list too short, fails as without the type.
        guard case .failure(let error) = one.value(at: JSONPath(parsing: "tokens[1].state")!, type: type) else {
            Issue.record("tokens[1] of one token")
            return
        }
        #expect(error.message == "'tokens' has 1 element, so no [1]")
        #expect(throws: ScenarioError.self) { try one.value(at: JSONPath(parsing: "tokenz")!, type: type).get() }
    }

    /// A 64-bit integer written as proto3 JSON writes it, a string (`"0"`, as `save` keeps it), matches a response
    /// that leaves the field out because it holds 0.
    @Test func aStringZeroOfA64BitFieldMatchesItsDefault() throws {
        let type = TspV1.QueueStatusResponse.self
        let expected = try JSONValue(parsing: #"{"pending": "0", "lastSequence": "7", "subscriber": "0"}"#)
            .withIntegersAsNumbers(for: type)
        #expect(
            try JSONValue(parsing: #"{"lastSequence": "7", "subscriber": "0"}"#).mismatch(containing: expected) == nil)
        // A string field keeps "0" as text: one left out holds "", not "0".
        #expect(try JSONValue(parsing: #"{"lastSequence": "7"}"#).mismatch(containing: expected) != nil)
    }

    /// An enum holding its zero value is left out of proto3 JSON: named in an expectation, it matches a response
    /// that leaves it out; an enum given by number matches its name; a message's enums are filled in at any depth.
    @Test func enumsMatchByZeroNameAndByNumber() throws {
        let type = HealthV1.HealthCheckResponse.self
        let unknown = try JSONValue(parsing: #"{"status": "SERVING_STATUS_UNKNOWN"}"#).withIntegersAsNumbers(for: type)
        let response = try JSONValue(parsing: "{}").withEnumDefaults(for: type)
        #expect(response.mismatch(containing: unknown) == nil)
        let serving = try JSONValue(parsing: #"{"status": "SERVING_STATUS_SERVING"}"#)
        #expect(response.mismatch(containing: serving) != nil)
        let byNumber = try JSONValue(parsing: #"{"status": 1}"#).withIntegersAsNumbers(for: type)
        #expect(try JSONValue(parsing: #"{"status": "SERVING_STATUS_SERVING"}"#).mismatch(containing: byNumber) == nil)
        #expect(response.mismatch(containing: byNumber) != nil)

        let listing = try JSONValue(parsing: #"{"tokens": [{"digitalCardId": "DN1"}]}"#)
            .withEnumDefaults(for: TspV1.ListTokensResponse.self)
        let expected = try JSONValue(parsing: #"{"tokens": [{"state": "TOKEN_STATE_UNSPECIFIED"}]}"#)
        #expect(listing.mismatch(containing: expected) == nil)
    }

    /// 64-bit integers compare exactly: through Double, two values above 2^53 that differ by one were equal.
    @Test func largeIntegersCompareExactly() throws {
        let expected = try JSONValue(parsing: #"{"amountMinor": "9007199254740993"}"#)
        #expect(try JSONValue(parsing: #"{"amountMinor": "9007199254740992"}"#).mismatch(containing: expected) != nil)
        #expect(try JSONValue(parsing: #"{"amountMinor": "9007199254740993"}"#).mismatch(containing: expected) == nil)
        #expect(
            try JSONValue(parsing: #"{"amountMinor": 1.5}"#).mismatch(
                containing: .object([("amountMinor", .number("1.50"))])) == nil)
    }

    /// A path is checked against the type before a run: each part a field, an index only on a list.
    @Test func aPathIsCheckedAgainstTheResponseType() {
        let type = TspV1.ListTokensResponse.self
        #expect(JSONPath(parsing: "tokens[0].state")!.problem(in: type) == nil)
        #expect(JSONPath(parsing: "next_page_token")!.problem(in: type) == nil)
        #expect(
            JSONPath(parsing: "tokens[0].stat")!.problem(in: type)?.hasPrefix(
                "tokenet.tsp.v1.TokenSummary has no field 'stat' (it has digitalCardId, ") == true)
        #expect(
            JSONPath(parsing: "tokens.state")!.problem(in: type)
                == "'tokens' is a list: give an element as [N], so it has no field 'state'")
        #expect(
            JSONPath(parsing: "nextPageToken[0]")!.problem(in: type)
                == "'nextPageToken' is no list, so it has no element [0]")
        #expect(
            JSONPath(parsing: "nextPageToken.x")!.problem(in: type)
                == "'nextPageToken' is a single value, so it has no field 'x'")
    }
}
