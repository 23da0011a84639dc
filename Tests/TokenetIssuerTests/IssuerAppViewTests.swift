import Synchronization
import Testing
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// The issuer app's view of its cards: the pure table, the link that fills it from a wallet, and CardView.
@Suite struct IssuerAppViewTests {
    static let visa = "DNITHE000000000000000001"
    static let mastercard = "DWSPMC000000000000000002"

    static func event(
        _ sequence: UInt64, _ kind: WalletV1.WalletEventKind, _ id: String = "", _ state: CardV1.TokenState = .active,
        account: String = ""
    ) -> WalletV1.WalletEvent {
        WalletV1.WalletEvent(
            sequence: sequence, kind: kind, walletAccountID: account, digitalCardID: id, tokenState: state)
    }

    static func pull(_ tokens: [(String, CardV1.TokenState)]) -> WalletV1.CurrentTokensResponse {
        WalletV1.CurrentTokensResponse(
            walletAccountID: "wallet-account-1",
            tokens: tokens.map { WalletV1.TokenStatus(digitalCardID: $0.0, tokenState: $0.1) })
    }

    /// Removed rows are kept up to `removedRowsKept`, the oldest removal going first: kept for every token ever
    /// deleted, a sandbox's table grew with each one until its answer would not fit in a message. Rows of tokens
    /// still held stay, however many removals follow.
    @Test func removedRowsAreKeptUpToALimit() {
        var table = AppViewTable()
        table.apply(event: Self.event(1, .tokenizedCardAdded, Self.visa))
        let limit = AppViewTable.removedRowsKept
        var sequence: UInt64 = 1
        for index in 0..<(limit + 10) {
            let id = "DNITHE\(index)"
            sequence += 1
            table.apply(event: Self.event(sequence, .tokenizedCardAdded, id, .inactive))
            sequence += 1
            table.apply(event: Self.event(sequence, .tokenizedCardRemoved, id, .deactivated))
        }
        #expect(table.rows.count == limit + 1)
        #expect(table.rows[Self.visa]?.removed == false)
        #expect(table.rows["DNITHE0"] == nil && table.rows["DNITHE9"] == nil)
        #expect(table.rows["DNITHE10"]?.removed == true)
        #expect(table.rows["DNITHE\(limit + 9)"]?.tokenState == .deactivated)
        // A removed row still kept ignores a late event.
        table.apply(cardState: .active, digitalCardID: "DNITHE10")
        #expect(table.rows["DNITHE10"]?.tokenState == .deactivated)
        // CARD_STATE's DEACTIVATED counts as a removal too.
        table.apply(cardState: .deactivated, digitalCardID: Self.visa)
        #expect(table.rows[Self.visa]?.removed == true)
        #expect(table.rows["DNITHE10"] == nil)
        #expect(table.rows.count == limit)
    }

    /// A restarted issuer app starts from a pull: the selection comes with it, where before the app showed none
    /// until the person chose another card.
    @Test func thePullCarriesTheSelectedCard() {
        var table = AppViewTable()
        var pull = Self.pull([(Self.visa, .active)])
        pull.selectedDigitalCardID = Self.visa
        table.apply(pull: pull)
        #expect(table.response.selectedDigitalCardID == Self.visa)
        table.apply(pull: Self.pull([(Self.visa, .active)]))
        #expect(table.response.selectedDigitalCardID == "")
    }

    /// The TSP's DEACTIVATED of a token replaced as it was added can come before the wallet's event adding it, and
    /// changes no row then: the wallet's removal, which says DEACTIVATED, is what the row ends with. It kept the
    /// added event's INACTIVE for good.
    @Test func aRemovalSaysDeactivatedWhateverCameBefore() {
        var table = AppViewTable()
        table.apply(pull: Self.pull([]))
        table.apply(cardState: .deactivated, digitalCardID: Self.visa)
        table.apply(event: Self.event(1, .tokenizedCardAdded, Self.visa, .inactive))
        table.apply(event: Self.event(2, .tokenizedCardRemoved, Self.visa, .deactivated))
        #expect(table.response.cards.map(\.tokenState) == [.deactivated])
        #expect(table.response.cards.map(\.removed) == [true])
    }

    @Test func thePullFillsTheTableAndEventsChangeIt() {
        var table = AppViewTable()
        table.apply(pull: Self.pull([(Self.visa, .inactive)]))
        table.apply(event: Self.event(1, .tokenStatusChanged, Self.visa, .active))
        table.apply(event: Self.event(2, .tokenizedCardAdded, Self.mastercard, .inactive))
        table.apply(event: Self.event(3, .tokenizedCardRemoved, Self.mastercard))
        table.apply(event: Self.event(4, .activeWalletAccountChanged, account: "wallet-account-2"))
        table.apply(event: Self.event(5, .selectedCardChanged, Self.visa))
        // A repeated or older event changes nothing.
        table.apply(event: Self.event(2, .tokenizedCardAdded, Self.mastercard, .inactive))
        let view = table.response
        #expect(view.walletAccountID == "wallet-account-2" && view.lastSequence == 5 && view.pulls == 1)
        #expect(view.selectedDigitalCardID == Self.visa)
        #expect(view.cards.map(\.digitalCardID) == [Self.visa, Self.mastercard])
        #expect(view.cards.map(\.tokenState) == [.active, .inactive])
        #expect(view.cards.map(\.removed) == [false, true])
        #expect(
            view.cards.map(\.updatedBy) == [
                "WALLET_EVENT_KIND_TOKEN_STATUS_CHANGED", "WALLET_EVENT_KIND_TOKENIZED_CARD_REMOVED",
            ])
    }

    /// The TSP's CARD_STATE (through its broker) and the wallet's events (through the wallet's stream) travel apart,
    /// so a wallet event from before a delete can arrive after the TSP's DEACTIVATED: a deleted token never changes
    /// state again, and its row stays DEACTIVATED and removed whatever arrives late.
    @Test func aDeletedTokenStaysDeletedWhateverArrivesLate() {
        var table = AppViewTable()
        table.apply(event: Self.event(1, .tokenizedCardAdded, Self.visa, .active))
        table.apply(cardState: .deactivated, digitalCardID: Self.visa)
        table.apply(event: Self.event(2, .tokenStatusChanged, Self.visa, .suspended))
        table.apply(cardState: .active, digitalCardID: Self.visa)
        table.apply(event: Self.event(3, .tokenizedCardRemoved, Self.visa, .deactivated))
        #expect(table.response.cards.map(\.tokenState) == [.deactivated])
        #expect(table.response.cards.map(\.removed) == [true])
    }

    /// Once it has pulled a wallet's tokens the view is that wallet's: a CARD_STATE about a token of another
    /// wallet node changes nothing (it showed until a restart's pull dropped it); one about this wallet's does.
    @Test func aCardStateAboutAnotherWalletsTokenChangesNothingOnceAWalletIsPulled() {
        var table = AppViewTable()
        table.apply(cardState: .active, digitalCardID: "DNITHE-OTHER-1")
        #expect(table.response.cards.map(\.digitalCardID) == ["DNITHE-OTHER-1"])
        table.apply(
            pull: WalletV1.CurrentTokensResponse(
                tokens: [WalletV1.TokenStatus(digitalCardID: Self.visa, tokenState: .active)]))
        table.apply(cardState: .suspended, digitalCardID: "DNITHE-OTHER-2")
        table.apply(cardState: .suspended, digitalCardID: Self.visa)
        #expect(table.response.cards.map(\.digitalCardID) == [Self.visa])
        #expect(table.response.cards.map(\.tokenState) == [.suspended])
    }

    /// A restarted app (or one that connected again) pulls a deleted token the wallet still lists: it is removed, as
    /// the events had marked it, not a DEACTIVATED card like any other.
    @Test func aPulledDeletedTokenIsRemovedAsTheEventsMarkedIt() {
        var table = AppViewTable()
        table.apply(event: Self.event(1, .tokenizedCardAdded, Self.visa, .active))
        table.apply(event: Self.event(2, .tokenizedCardRemoved, Self.visa, .deactivated))
        let before = table.response.cards
        table.apply(pull: Self.pull([(Self.visa, .deactivated), (Self.mastercard, .active)]))
        #expect(before.map(\.removed) == [true])
        #expect(table.response.cards.map(\.digitalCardID) == [Self.mastercard, Self.visa].sorted())
        #expect(
            table.response.cards.map(\.removed)
                == [Self.mastercard, Self.visa].sorted().map { $0 == Self.visa })
    }

    @Test func aPullReplacesTheTableAndRestartsTheSequence() {
        var table = AppViewTable()
        table.apply(event: Self.event(7, .tokenizedCardAdded, Self.mastercard))
        table.apply(pull: Self.pull([(Self.visa, .suspended)]))
        table.apply(event: Self.event(1, .tokenStatusChanged, Self.visa, .active))
        #expect(table.response.cards.map(\.digitalCardID) == [Self.visa])
        #expect(table.response.cards.map(\.tokenState) == [.active] && table.response.lastSequence == 1)
    }

    @Test func theLinkPullsThenAppliesEventsOnEachConnection() async throws {
        let wallet = FakeWalletEvents()
        wallet.set(tokens: [(Self.visa, .inactive)], events: [Self.event(1, .tokenStatusChanged, Self.visa, .active)])
        var router = RPCRouter()
        wallet.register(on: &router)
        let view = IssuerAppView()
        let slept = Mutex(0)
        let link = IssuerAppLink(
            wallet: Support.connect(router, as: .issuer), view: view, logger: Support.logger(),
            sleep: { _ in
                // The wallet restarts between connections: a new card, events numbered from 1 again.
                let count = slept.withLock { count in
                    count += 1
                    return count
                }
                guard count == 1 else { throw CancellationError() }
                wallet.set(
                    tokens: [(Self.visa, .active)],
                    events: [Self.event(1, .tokenizedCardAdded, Self.mastercard, .inactive)])
            })
        await link.run()
        let answer = try await IssuerV1.IssuerApp.Client(Support.connect(Self.router(view), as: .operator))
            .cardView(.init())
        #expect(answer.pulls == 2 && answer.lastSequence == 1 && !answer.listening)
        #expect(answer.cards.map(\.digitalCardID) == [Self.visa, Self.mastercard])
        #expect(answer.cards.map(\.tokenState) == [.active, .inactive])
        #expect(answer.cards.map(\.updatedBy) == ["pull", "WALLET_EVENT_KIND_TOKENIZED_CARD_ADDED"])
    }

    /// A wallet of more tokens than one page: the pull reads every page before the table is replaced, so no
    /// token past the first page is missing from the app's view.
    @Test func thePullReadsEveryPage() async throws {
        let wallet = FakeWalletEvents(pageSize: 2)
        let ids = (1...5).map { "DNITHE00000000000000000\($0)" }
        wallet.set(tokens: ids.map { ($0, .active) }, events: [])
        var router = RPCRouter()
        wallet.register(on: &router)
        let view = IssuerAppView()
        let link = IssuerAppLink(
            wallet: Support.connect(router, as: .issuer), view: view, logger: Support.logger(),
            sleep: { _ in throw CancellationError() })
        await link.run()
        let answer = try await IssuerV1.IssuerApp.Client(Support.connect(Self.router(view), as: .operator))
            .cardView(.init())
        #expect(answer.pulls == 1)
        #expect(answer.cards.map(\.digitalCardID) == ids)
    }

    @Test func aWalletThatIsDownIsRetriedWithOneWarning() async throws {
        let sink = MemoryLogSink()
        let tries = Mutex(0)
        // A wallet without the events service: every connection fails with UNIMPLEMENTED.
        let link = IssuerAppLink(
            wallet: Support.connect(RPCRouter(), as: .issuer), view: IssuerAppView(), logger: Support.logger(sink),
            sleep: { _ in
                let count = tries.withLock { count in
                    count += 1
                    return count
                }
                if count == 3 { throw CancellationError() }
            })
        await link.run()
        #expect(tries.withLock { $0 } == 3)
        #expect(sink.lines.filter { $0.contains("app listener to the wallet failed") }.count == 3)
        #expect(sink.lines.filter { $0.contains("warning") && $0.contains("app listener") }.count == 1, "\(sink.lines)")
    }

    /// A wallet not up while the node starts is said at info, once; the first failure after the start is the
    /// warning, and the ones after it are not repeated.
    @Test func aWalletNotUpWhileTheNodeStartsIsSaidAtInfoAndWarnedAfterTheStart() async throws {
        let sink = MemoryLogSink()
        let tries = Mutex(0)
        let link = IssuerAppLink(
            wallet: UnreachableCaller(), view: IssuerAppView(), logger: Support.logger(sink),
            sleep: { _ in
                let count = tries.withLock { count in
                    count += 1
                    return count
                }
                if count == 4 { throw CancellationError() }
            },
            isStarting: { tries.withLock { $0 } < 2 })
        await link.run()
        let lines = sink.lines.filter { $0.contains("wallet") && !$0.contains("pulled") }
        #expect(lines.count == 4, "\(lines)")
        #expect(lines.first?.contains(" info ") == true && lines.first?.contains("may still be starting") == true)
        #expect(lines.filter { $0.contains(" warning ") }.count == 1, "\(lines)")
        #expect(lines.firstIndex { $0.contains(" warning ") } == 2, "\(lines)")
    }

    @Test func cardViewIsForOperatorsOnly() async throws {
        let client = IssuerV1.IssuerApp.Client(Support.connect(Self.router(IssuerAppView()), as: .wallet))
        let error = await Support.rpcError { _ = try await client.cardView(.init()) }
        #expect(error?.code == .permissionDenied)
    }

    static func router(_ view: IssuerAppView) -> RPCRouter {
        var router = RPCRouter()
        IssuerAppService(view: view).register(on: &router)
        return router
    }
}

/// A wallet's events service: answers the pull with `tokens`, in pages of at most `pageSize`, and streams `events`,
/// then ends the stream.
final class FakeWalletEvents: WalletV1.WalletEvents.ServiceProtocol {
    private let state = Mutex<([WalletV1.TokenStatus], [WalletV1.WalletEvent])>(([], []))
    let pageSize: Int

    init(pageSize: Int = PageRequest.maximumSize) { self.pageSize = pageSize }

    func set(tokens: [(String, CardV1.TokenState)], events: [WalletV1.WalletEvent]) {
        state.withLock {
            $0 = (tokens.map { WalletV1.TokenStatus(digitalCardID: $0.0, tokenState: $0.1) }, events)
        }
    }

    func listen(
        _ request: WalletV1.ListenRequest, responses: ResponseWriter<WalletV1.WalletEvent>, context: ServerContext
    ) async throws {
        for event in state.withLock({ $0.1 }) { try await responses.send(event) }
    }

    func currentTokens(_ request: WalletV1.CurrentTokensRequest, context: ServerContext) async throws
        -> WalletV1.CurrentTokensResponse
    {
        let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "CurrentTokens")
        let start = Int(try page.afterRow(call: "CurrentTokens"))
        let tokens = state.withLock { $0.0 }.dropFirst(start).prefix(min(page.size, pageSize))
        let next = start + tokens.count < state.withLock({ $0.0 }).count ? start + tokens.count : 0
        return WalletV1.CurrentTokensResponse(
            walletAccountID: "wallet-account-1", tokens: Array(tokens),
            nextPageToken: next == 0 ? "" : page.token(after: PageRequest.key(row: Int64(next))))
    }
}

/// A peer that cannot be connected to: every call fails UNAVAILABLE before it is sent, as a channel's do.
private struct UnreachableCaller: RPCCaller {
    static var failure: RPCError {
        RPCError(.unavailable, "cannot connect to the wallet (test)", cause: NotConnected(reason: "refused"))
    }

    func unary<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, _ request: Request, options: CallOptions
    ) async throws -> Response {
        throw Self.failure
    }

    func serverStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, _ request: Request, options: CallOptions
    ) async throws -> ResponseStream<Response> {
        throw Self.failure
    }

    func clientStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, options: CallOptions,
        requests: @Sendable (RequestWriter<Request>) async throws -> Void
    ) async throws -> Response {
        throw Self.failure
    }

    func bidirectional<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, options: CallOptions
    ) async throws -> (requests: RequestWriter<Request>, responses: ResponseStream<Response>) {
        throw Self.failure
    }
}
