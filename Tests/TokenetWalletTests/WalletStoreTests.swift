import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetTestSupport
import TokenetWire

@testable import TokenetWallet

/// The wallet's database across restarts, and what it never holds.
@Suite struct WalletStoreTests {
    /// Another program's SQLite file in the wallet's place is refused as it is: opened as the wallet's own first, it
    /// was switched to WAL (its header rewritten) and its mode narrowed before being refused as "left untouched".
    @Test func anotherProgramsDatabaseIsRefusedUnchanged() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wallet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent(WalletNode.databaseFileName).path
        let foreign = try Database.open(path: path)
        try foreign.execute("PRAGMA journal_mode=DELETE")
        try foreign.execute("CREATE TABLE notes (body)")
        try foreign.close()
        #expect(chmod(path, 0o644) == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let error = #expect(throws: WalletError.self) { _ = try WalletStore.open(path: path) }
        #expect(
            "\(String(describing: error))".contains("tables of another program (notes)"), "\(String(describing: error))"
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o644)
    }

    @Test func cardsAndAStartedDigitizationSurviveARestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wallet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent(WalletNode.databaseFileName).path

        let tsp = try FakeTSP()
        tsp.configure { $0.digitizeFailures = 1 }
        do {
            let wallet = try WalletHarness(tsp: tsp, store: try WalletStore.open(path: path))
            _ = try await wallet.control.addCard(WalletHarness.manual())
            _ = await statusCode { try await wallet.control.acceptTerms(.init(cardRef: "card-1")) }
        }
        let reopened = try WalletHarness(tsp: tsp, store: try WalletStore.open(path: path))
        let accepted = try await reopened.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(accepted.card?.status == "DIGITIZED")
        let requests = tsp.recorded.digitizeRequests
        #expect(requests.count == 2 && requests[0].requestID == requests[1].requestID)

        // Nothing in the database files holds the card number.
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(file))
            #expect(bytes.range(of: Data("4111111111111111".utf8)) == nil, "\(file) holds the card number")
        }
    }

    /// A key-batch request's id is stored before the request is sent and kept until its batch is recorded, across a
    /// restart: the wallet that stopped before recording asks again with it. Its batch is recorded once.
    @Test func aKeyBatchRequestIDOutlivesARestartUntilItsBatchIsRecorded() throws {
        let directory = try TestScratch.path("wallet")
        let path = directory + "/" + WalletNode.databaseFileName
        let cardID: Int64
        let requestID: String
        do {
            let store = try WalletStore.open(path: path)
            cardID = try store.addPending(
                source: .manual, scheme: .visa, panLast4: "1111", receipt: "r", receiptExpiresAtMs: 10, terms: nil,
                walletAccountID: "wallet-account-1", nowMs: 1
            ).id
            requestID = try store.keyRequestID(cardID: cardID)
            #expect(try store.keyRequestID(cardID: cardID) == requestID)
            #expect(try store.paymentKeys(cardID: cardID) == PaymentKeyCount(remaining: 0, batches: 0))
        }
        let store = try WalletStore.open(path: path)
        #expect(try store.keyRequestID(cardID: cardID) == requestID)
        #expect(try store.recordKeyBatch(cardID: cardID, count: 10, requestID: requestID)?.batches == 1)
        #expect(try store.recordKeyBatch(cardID: cardID, count: 10, requestID: requestID) == nil)
        #expect(try store.paymentKeys(cardID: cardID) == PaymentKeyCount(remaining: 10, batches: 1))
        #expect(try store.keyRequestID(cardID: cardID) != requestID)
    }

    /// A page damaged past the file's header shows only when a call reads it. That call said INTERNAL "try again",
    /// and every retry failed the same way; it is DATA_LOSS now, naming the file to restore.
    @Test func damageFoundByACallIsDataLossNotTryAgain() async throws {
        let directory = try TestScratch.path("wallet")
        let path = directory + "/" + WalletNode.databaseFileName
        let pages: [Int]
        do {
            let store = try WalletStore.open(path: path)
            _ = try await WalletHarness(store: store).control.addCard(WalletHarness.manual())
            pages = try store.database.query(
                "SELECT rootpage FROM sqlite_master WHERE name IN ('transactions', 'transactions_made')"
            ).map { try $0.int(0) }
            try store.database.close()
        }
        #expect(pages.count == 2)
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        for page in pages {
            try handle.seek(toOffset: UInt64((page - 1) * 4096))
            try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        }
        try handle.close()

        // The wallet opens (its cards are whole); listing transactions meets the damage, the same way every time.
        let wallet = try WalletHarness(store: try WalletStore.open(path: path))
        #expect(try await wallet.control.listCards(WalletV1.ListWalletCardsRequest()).cards.count == 1)
        for _ in 0..<2 {
            await expectRPCError(
                .dataLoss,
                "the wallet's database is damaged; a retry will not help: stop the wallet and restore wallet.sqlite "
                    + "in its data directory from a backup"
            ) {
                try await wallet.lifecycle.listTransactions(WalletV1.WalletTransactionsRequest())
            }
        }
    }

    /// Damage that the wallet's first read after its start meets (the cards owed payment keys) is said at error
    /// level with what to do: it was a warning, and the node went on as if a retry could help.
    @Test func damageFoundAtStartIsAnErrorNamingTheFileToRestore() async throws {
        let directory = try TestScratch.path("wallet")
        let path = directory + "/" + WalletNode.databaseFileName
        let page: Int
        do {
            let store = try WalletStore.open(path: path)
            // An active card without keys: the read looks at the keys only for such a card.
            let harness = try WalletHarness(store: store)
            _ = try await harness.control.addCard(WalletHarness.manual())
            _ = try await harness.control.acceptTerms(.init(cardRef: "card-1"))
            try #require(try store.activeCardsWithoutKeys().count == 1)
            page = try #require(
                try store.database.queryOne("SELECT rootpage FROM sqlite_master WHERE name = 'payment_keys'")?.int(0))
            try store.database.close()
        }
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: UInt64((page - 1) * 4096))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()

        let wallet = try WalletHarness(store: try WalletStore.open(path: path))
        await WalletLifecycleTests.paymentKeys(wallet).catchUp()
        let lines = wallet.logs.lines
        #expect(
            lines.contains {
                $0.contains(" error ")
                    && $0.contains("the wallet's database is damaged: stop the wallet and restore wallet.sqlite")
            }, "\(lines)")
    }

    /// A card digitized before the wallet recorded issuers (schema 3) keeps working in the wallet but is no issuer
    /// app's: the wallet cannot tell which bank's app may see it.
    @Test func aCardFromBeforeIssuersWereRecordedIsNoIssuerAppsCard() async throws {
        let database = try Database.openInMemory()
        try Migrator(Array(WalletStore.migrations.prefix(3))).migrate(database)
        let result = TspV1.DigitizeResponse(
            decision: .approved, digitalCardID: "DNITHE000000000000000001", tokenState: .active, tokenLast4: "9012",
            scheme: .visa, panLast4: "1111", decidedBy: "issuer")
        _ = try database.execute(
            """
            INSERT INTO cards (source, scheme, pan_last4, status, eligibility_receipt, receipt_expires_at_ms, result,
                created_at_ms, updated_at_ms)
            VALUES ('manual', 1, '1111', 'DIGITIZED', 'receipt-1', 0, ?, 1, 1)
            """, [try result.serializedBytes()])
        let store = try WalletStore(database: database)
        let card = try store.card(ref: "card-1")
        #expect(card.issuerID == nil && card.issuerNodeID == nil)
        #expect(!card.belongs(toIssuerNode: "issuer-1") && !card.belongs(toIssuerNode: ""))

        let wallet = try WalletHarness(store: store)
        #expect(try await wallet.issuerApp.currentTokens(.init()).tokens.isEmpty)
        #expect(try await wallet.control.listCards(.init()).cards.map(\.digitalCardID) == ["DNITHE000000000000000001"])
    }

    /// A database at schema 3 holding one digitized card, one declined card and one awaiting the T&C, opened by
    /// this build: only the digitized card awaits its issuer, and the issuer the TSP names is kept, once.
    @Test func aCardFromBeforeIssuersWereRecordedGetsTheIssuerTheTSPNames() throws {
        let database = try Database.openInMemory()
        try Migrator(Array(WalletStore.migrations.prefix(3))).migrate(database)
        let digitized = TspV1.DigitizeResponse(
            decision: .approved, digitalCardID: "DNITHE000000000000000001", tokenState: .active, tokenLast4: "9012",
            scheme: .visa, panLast4: "1111", decidedBy: "issuer")
        let declined = TspV1.DigitizeResponse(decision: .declined, declineReason: "no")
        for (status, result) in [("DIGITIZED", digitized), ("DECLINED", declined)] {
            _ = try database.execute(
                """
                INSERT INTO cards (source, scheme, pan_last4, status, eligibility_receipt, receipt_expires_at_ms,
                    result, created_at_ms, updated_at_ms)
                VALUES ('manual', 1, '1111', ?, 'receipt', 0, ?, 1, 1)
                """, [status, try result.serializedBytes()])
        }
        _ = try database.execute(
            """
            INSERT INTO cards (source, scheme, pan_last4, status, eligibility_receipt, receipt_expires_at_ms,
                created_at_ms, updated_at_ms)
            VALUES ('manual', 1, '1111', 'PENDING_TERMS', 'receipt', 0, 1, 1)
            """)
        let store = try WalletStore(database: database)
        #expect(try store.cardsAwaitingIssuer().map(\.cardRef) == ["card-1"])

        let recorded = try store.recordIssuer(id: 1, issuerID: "bank-a", issuerNodeID: "issuer-1", nowMs: 5)
        #expect(recorded.issuerID == "bank-a" && recorded.issuerNodeID == "issuer-1" && recorded.result == digitized)
        #expect(recorded.belongs(toIssuerNode: "issuer-1") && !recorded.belongs(toIssuerNode: "issuer-2"))
        #expect(try store.cardsAwaitingIssuer().isEmpty)
        // A later answer does not replace the recorded issuer.
        let again = try store.recordIssuer(id: 1, issuerID: "bank-b", issuerNodeID: "issuer-2", nowMs: 6)
        #expect(again.issuerID == "bank-a" && again.issuerNodeID == "issuer-1")
        #expect(try WalletStore(database: database).card(ref: "card-1") == recorded)
    }

    /// An issuer registered without TLS has no node: the card's issuer is known, and it is still no app's.
    @Test func anIssuerWithoutANodeIsRecordedAsNoAppsCard() throws {
        let database = try Database.openInMemory()
        try Migrator(Array(WalletStore.migrations.prefix(3))).migrate(database)
        let result = TspV1.DigitizeResponse(decision: .approved, digitalCardID: "DNITHE000000000000000001")
        _ = try database.execute(
            """
            INSERT INTO cards (source, scheme, pan_last4, status, eligibility_receipt, receipt_expires_at_ms, result,
                created_at_ms, updated_at_ms)
            VALUES ('manual', 1, '1111', 'DIGITIZED', 'receipt', 0, ?, 1, 1)
            """, [try result.serializedBytes()])
        let store = try WalletStore(database: database)
        let card = try store.recordIssuer(id: 1, issuerID: "bank-a", issuerNodeID: "", nowMs: 5)
        #expect(card.issuerID == "bank-a" && card.issuerNodeID == nil && !card.belongs(toIssuerNode: ""))
        #expect(try store.cardsAwaitingIssuer().isEmpty)
    }

    @Test func beginningTwiceKeepsTheFirstRequestID() throws {
        let store = try WalletStore.inMemory()
        let card = try store.addPending(
            source: .manual, scheme: .visa, panLast4: "1111", receipt: "r", receiptExpiresAtMs: 10, terms: nil,
            walletAccountID: "wallet-account-1", nowMs: 1)
        _ = try store.beginDigitization(id: card.id, requestID: "first", termsAcceptedAtMs: 2, nowMs: 2)
        let second = try store.beginDigitization(id: card.id, requestID: "second", termsAcceptedAtMs: 3, nowMs: 3)
        #expect(second.digitizeRequestID == "first" && second.termsAcceptedAtMs == 2)
    }
}

/// AcceptTerms decisions from the stored card alone.
@Suite struct AcceptTermsPlanTests {
    let pending = WalletCardRecord(
        id: 3, source: .manual, scheme: .visa, panLast4: "1111", status: .pendingTerms, eligibilityReceipt: "r",
        receiptExpiresAtMs: 5_000, terms: nil, digitizeRequestID: nil, termsAcceptedAtMs: nil, result: nil)

    @Test func aPendingCardGetsAFreshKey() {
        #expect(
            AcceptTermsPlan.plan(for: pending, nowMs: 4_000) { "new" }
                == .digitize(requestID: "new", termsAcceptedAtMs: 4_000, fresh: true))
    }

    @Test func aStartedAttemptKeepsItsKeyEvenAfterTheReceiptExpired() {
        var started = pending
        started.digitizeRequestID = "old"
        started.termsAcceptedAtMs = 4_500
        #expect(
            AcceptTermsPlan.plan(for: started, nowMs: 9_000) { "new" }
                == .digitize(requestID: "old", termsAcceptedAtMs: 4_500, fresh: false))
    }

    @Test func anExpiredReceiptWithoutAnAttempt() {
        #expect(AcceptTermsPlan.plan(for: pending, nowMs: 5_000) { "new" } == .receiptExpired)
    }

    @Test func aFinishedCardIsAnsweredFromStorage() {
        var done = pending
        done.result = TspV1.DigitizeResponse(decision: .approved, digitalCardID: "D1")
        #expect(AcceptTermsPlan.plan(for: done, nowMs: 9_000) { "new" } == .answer(done.result!))
    }

    @Test func cardReferences() {
        #expect(WalletCardRecord.id(fromRef: "card-12") == 12)
        for bad in ["card-0", "card-", "card-01", "12", "card-x", "card--1"] {
            #expect(WalletCardRecord.id(fromRef: bad) == nil, "\(bad)")
        }
    }
}

/// `wallet.json`.
@Suite struct WalletConfigurationTests {
    @Test func everyKeyIsOptional() throws {
        #expect(try WalletConfiguration.parse(Data("{}".utf8), path: "w.json") == WalletConfiguration())
    }

    @Test func configuredValuesReplaceTheDefaults() throws {
        let json = #"""
            {"walletAccountId": "acct-7", "device": {"deviceId": "watch-1", "deviceType": "WATCH"},
             "risk": {"accountScore": 2, "deviceScore": 5, "recommendation": "require_authentication"}}
            """#
        let parsed = try WalletConfiguration.parse(Data(json.utf8), path: "w.json")
        #expect(parsed.walletAccountID == "acct-7" && parsed.device.deviceID == "watch-1")
        #expect(parsed.device.deviceType == "WATCH" && parsed.device.osName == WalletConfiguration().device.osName)
        #expect(
            parsed.risk
                == CardV1.WalletRiskData(accountScore: 2, deviceScore: 5, recommendation: .requireAuthentication))
    }

    @Test func outOfRangeScoresAndUnknownRecommendationsAreRefused() {
        for json in [
            #"{"risk": {"accountScore": 0}}"#, #"{"risk": {"deviceScore": 6}}"#,
            #"{"risk": {"recommendation": "MAYBE"}}"#, #"{"walletAccountId": ""}"#, "[1]",
        ] {
            #expect(throws: (any Error).self) { try WalletConfiguration.parse(Data(json.utf8), path: "w.json") }
        }
    }

    /// A score that is a fraction, negative or too large for its field is named with its key; it was "not valid
    /// JSON", which the file is.
    @Test(arguments: [
        (
            #"{"risk": {"accountScore": 2.5}}"#,
            "risk.accountScore is 2.5; scores are whole numbers from 1 (lowest) to 5"
        ),
        (#"{"risk": {"deviceScore": -1}}"#, "risk.deviceScore is -1; scores are whole numbers from 1 (lowest) to 5"),
        (#"{"risk": {"accountScore": 99999999999}}"#, "risk.accountScore is 99999999999; scores are whole numbers"),
        (#"{"risk": {"accountScore": 1e300}}"#, "risk.accountScore is too large; scores are whole numbers"),
        (#"{"risk": {"accountScore": 18446744073709551616}}"#, "risk.accountScore is too large; scores are whole"),
    ])
    func aScoreThatIsNoWholeNumberFromOneToFiveIsNamed(json: String, message: String) throws {
        let failure = try #require(throws: NodeError.self) {
            try WalletConfiguration.parse(Data(json.utf8), path: "w.json")
        }
        #expect(failure.exitStatus == 2)
        #expect(failure.description.contains("w.json: " + message), "\(failure.description)")
        #expect(
            try WalletConfiguration.parse(Data(#"{"risk": {"accountScore": 3.0}}"#.utf8), path: "w").risk.accountScore
                == 3)
    }

    /// Values the wallet or the TSP would refuse later (use-account refuses such an account; an empty device id
    /// failed every add-card with the node up) stop the node at its start.
    @Test(arguments: [
        (
            #"{"walletAccountId": "a b"}"#,
            "walletAccountId must be 1 to 64 characters without spaces, control or format"
        ),
        (#"{"walletAccountId": "acct\n7"}"#, "walletAccountId must be 1 to 64 characters without spaces"),
        (#"{"device": {"deviceId": ""}}"#, "device.deviceId must be 1 to 64 characters without spaces"),
        (
            #"{"device": {"deviceId": "\#(String(repeating: "d", count: 65))"}}"#,
            "device.deviceId must be 1 to 64 characters"
        ),
        (#"{"device": {"deviceName": "a\u0007b"}}"#, "device.deviceName must be 1 to 64 characters without control"),
        (#"{"device": {"osVersion": ""}}"#, "device.osVersion must be 1 to 64 characters"),
    ])
    func anIdentifierTheTSPWouldRefuseStopsTheNode(json: String, message: String) throws {
        let failure = try #require(throws: NodeError.self) {
            try WalletConfiguration.parse(Data(json.utf8), path: "w.json")
        }
        #expect(failure.exitStatus == 2)
        #expect(failure.description.contains("w.json: " + message), "\(failure.description)")
        let accepted = #"{"walletAccountId": "ü-7", "device": {"deviceId": "watch-1", "deviceName": "Ana's watch"}}"#
        #expect(try WalletConfiguration.parse(Data(accepted.utf8), path: "w.json").device.deviceName == "Ana's watch")
    }

    /// A misspelt key stops the node instead of leaving the wallet on its default without a word.
    @Test(arguments: [
        (#"{"providr": "apple-pay"}"#, #"unknown key "providr" (known: walletAccountId, device, risk, provider)"#),
        (#"{"risk": {"acountScore": 5}}"#, #"unknown key "risk.acountScore" (known: accountScore,"#),
        (#"{"device": {"deviceID": "w"}}"#, #"unknown key "device.deviceID" (known: deviceId,"#),
    ])
    func anUnknownKeyIsRefused(json: String, message: String) throws {
        let failure = try #require(throws: NodeError.self) {
            try WalletConfiguration.parse(Data(json.utf8), path: "w.json")
        }
        #expect(failure.exitStatus == 2)
        #expect(failure.description.contains("w.json: " + message), "\(failure.description)")
    }

    /// Foundation's decoder keeps one of two values for a key without a word, and accepts a trailing comma; both
    /// stop the node, the repeated key named with its place.
    @Test(arguments: [
        (#"{"provider": "apple-pay", "provider": "samsung-pay"}"#, #""provider" appears twice; give each key once"#),
        (#"{"risk": {"accountScore": 1, "accountScore": 5}}"#, #""risk.accountScore" appears twice"#),
        (#"{"walletAccountId": "a",}"#, "not valid JSON: trailing comma before '}'"),
    ])
    func aRepeatedKeyOrATrailingCommaIsRefused(json: String, message: String) throws {
        let failure = try #require(throws: NodeError.self) {
            try WalletConfiguration.parse(Data(json.utf8), path: "w.json")
        }
        #expect(failure.exitStatus == 2)
        #expect(failure.description.contains("w.json: " + message), "\(failure.description)")
    }

    /// A value of the wrong type names its key, in words rather than as Foundation's `DecodingError` dump.
    @Test(arguments: [
        (#"{"device": {"deviceId": 5}}"#, #""device.deviceId" must be a string, not a number"#),
        (#"{"device": "x"}"#, #""device" must be a JSON object, not a string"#),
        (#"{"risk": {"accountScore": "2"}}"#, #""risk.accountScore" must be a number, not a string"#),
        (#"{"risk": [1]}"#, #""risk" must be a JSON object, not an array"#),
        (#"{"provider": true}"#, #""provider" must be a string, not a boolean"#),
        ("[1, 2]", "it holds an array, not a JSON object"),
    ])
    func aValueOfTheWrongTypeIsNamedByItsKey(json: String, message: String) throws {
        let failure = try #require(throws: NodeError.self) {
            try WalletConfiguration.parse(Data(json.utf8), path: "w.json")
        }
        #expect(failure.exitStatus == 2)
        #expect(failure.description == "w.json is not a wallet configuration: " + message)
    }

    /// A write the disk has no room for (SQLite's SQLITE_FULL, here from a database held to the size it has) keeps its
    /// StorageError, and the caller gets RESOURCE_EXHAUSTED saying what to do, as gRPC has it for a file system out of
    /// space; any other internal failure stays INTERNAL.
    /// A suspend or delete the TSP applied but the wallet could not record (a full disk) said "then try again", and
    /// the repeat was refused, the TSP's token having changed already: it now says what happened, and not to repeat.
    @Test func aChangeTheTSPMadeButTheWalletCouldNotRecordIsSaidSo() throws {
        let store = try WalletStore.inMemory()
        try FullDisk.hold(store.database)
        let error = try #require(
            #expect(throws: WalletError.self) {
                try store.run("update the card's token state") { try FullDisk.overfill(store.database) }
            })
        let status = WalletLifecycleService.notRecorded(error, state: .deactivated)
        #expect(status.code == .resourceExhausted)
        #expect(
            status.message
                == "the TSP changed the token (it is DEACTIVATED now), but the wallet could not record it: its disk "
                + "is full; free space on the disk that holds its data directory. The wallet takes the change from the "
                + "TSP's notification once it can write again; do not repeat the command")
    }

    /// A data directory that refuses writes (SQLite's "disk I/O error" of a file made immutable, a read-only mount)
    /// was INTERNAL, "could not store the new card": UNAVAILABLE now, with where to look.
    @Test func anUnwritableDataDirectoryIsUnavailableWithWhereToLook() throws {
        let store = try WalletStore.inMemory()
        try store.database.execute("PRAGMA query_only = 1")
        let error = try #require(
            #expect(throws: WalletError.self) {
                try store.run("store the new card") { try store.database.execute("CREATE TABLE t (x INTEGER)") }
            })
        let status = error.rpcError
        #expect(status.code == .unavailable)
        #expect(
            status.message.hasPrefix("the wallet could not store the new card: the wallet cannot use its data "),
            "\(status.message)")
        #expect(status.message.contains("whether it is mounted read-only, then try again"), "\(status.message)")
        // A change the TSP made is not to be repeated: neither UNAVAILABLE (read as safe to retry) nor "try again".
        let notRecorded = WalletLifecycleService.notRecorded(error, state: .suspended)
        #expect(notRecorded.code == .internal)
        #expect(notRecorded.message.contains("but the wallet could not record it: the wallet cannot use its data"))
        #expect(notRecorded.message.contains("do not repeat the command"))
        #expect(!notRecorded.message.contains("try again"), "\(notRecorded.message)")
    }

    @Test func aFullDiskIsResourceExhaustedWithWhatToDo() throws {
        let store = try WalletStore.inMemory()
        try FullDisk.hold(store.database)
        let error = #expect(throws: WalletError.self) {
            try store.run("save the card") { try FullDisk.overfill(store.database) }
        }
        #expect((error?.cause as? StorageError)?.code == .full, "\(String(describing: error))")
        let status = try #require(error).rpcError
        #expect(status.code == .resourceExhausted)
        #expect(
            status.message
                == "the wallet could not save the card: the wallet's disk is full; free space on the disk that holds "
                + "its data directory, then try again")
        #expect(status.cause is ServerFailure, "the node's log gets the cause")
        let other = WalletError(
            .internal, "the wallet could not read the cards", cause: StorageError(.constraint, "UNIQUE"))
        #expect(other.rpcError.code == .internal)
    }
}
