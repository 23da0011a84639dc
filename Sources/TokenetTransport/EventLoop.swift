import CTokenetShims
import Dispatch
import Foundation
import Glibc
import Synchronization

/// Which readiness a registered file descriptor wants to hear about.
struct Interest: Equatable, Sendable, CustomStringConvertible {
    var read: Bool
    var write: Bool

    static let none = Interest(read: false, write: false)
    static let readOnly = Interest(read: true, write: false)
    static let writeOnly = Interest(read: false, write: true)

    var epollEvents: UInt32 {
        (read ? CTK_EPOLLIN : 0) | (write ? CTK_EPOLLOUT : 0)
    }

    var description: String { "[\(read ? "r" : "-")\(write ? "w" : "-")]" }
}

/// Something the event loop calls back on its own thread.
protocol EventLoopHandler: AnyObject {
    /// `failed` reports EPOLLERR/EPOLLHUP, which epoll delivers whatever the interest.
    func handleEvent(readable: Bool, writable: Bool, failed: Bool)
    /// The loop is shutting down; release the descriptor and fail anything waiting.
    func eventLoopStopping()
}

/// A handle to cancel a scheduled timer.
public struct EventLoopTimer: Sendable, Hashable {
    let id: UInt64
}

/// One thread multiplexing many sockets with epoll (level-triggered), plus a work queue and timers.
///
/// Other threads hand work to the loop with `execute`, which wakes it through an eventfd. All socket and TLS
/// state of a connection is touched only on this thread, so it needs no locks; only the work queue and timers are
/// shared and live in a `Mutex`.
///
/// The loop is also a `TaskExecutor` (see `EventLoop+TaskExecutor.swift`): a task that prefers it runs its jobs
/// here between epoll iterations, in the same queue as `execute`'s closures.
public final class EventLoop: @unchecked Sendable {
    /// One unit of queued work: a closure from `execute`, or a job of a task that prefers this loop.
    enum Work: Sendable {
        case closure(@Sendable () -> Void)
        case job(UnownedJob)
    }

    struct Shared {
        var work: [Work] = []
        /// Live timers by id; `timerOrder` holds their ids by deadline, and also the ids of cancelled timers until
        /// they come to the top or a compaction drops them (see `DeadlineHeap`).
        var timers: [UInt64: @Sendable () -> Void] = [:]
        var timerOrder = DeadlineHeap<UInt64>()
        var nextTimerID: UInt64 = 1
        /// The loop is in (or about to enter) `epoll_wait` with nothing queued: new work must signal the eventfd.
        var sleeping = false
        var stopping = false
        var stopped = false
        /// How many times work queued from another thread had to wake the loop through the eventfd.
        var wakeUpSignals = 0
        /// How many times the loop slept at once after a busy iteration because a peer on its CPU had sent.
        var idlePollsSkipped = 0
    }

    /// Registration id 0 is the wake-up eventfd.
    private static let wakeRegistration: UInt64 = 0
    private static let maxEventsPerWait: Int32 = 64

    public let name: String
    /// How long the loop keeps polling after it was busy before it sleeps (see `pollWhileIdle`).
    public let idlePoll: Duration
    private let idlePollNanoseconds: Int64
    private let epollFD: Int32
    let wakeFD: Int32
    let shared = Mutex(Shared())
    /// `pthread_self()` of the loop thread (0 before it starts): read on every `inEventLoop`, so an atomic.
    private let loopThread = Atomic<UInt>(0)
    private let exited = DispatchSemaphore(value: 0)

    // Loop-thread only, so unchecked for exclusivity (see `ConnectionDriver`).
    @exclusivity(unchecked) private var handlers: [UInt64: any EventLoopHandler] = [:]
    @exclusivity(unchecked) private var nextRegistration: UInt64 = 1
    /// A connection read in this iteration has its peer on this thread's CPU (`PeerPlacement`): the loop then
    /// sleeps at once instead of polling (see `pollWhileIdle`). Set by the connections' drivers.
    @exclusivity(unchecked) var peerSharedCPUThisIteration = false
    /// Items of the batch `runTasks` took from the queue that have not run yet.
    @exclusivity(unchecked) private var workLeftInBatch = 0
    /// The previous batch's array, emptied: swapped into the queue for the next batch, so queueing work does not
    /// allocate a new array after every batch (about one allocation for every three calls a busy server serves).
    @exclusivity(unchecked) private var spareWork: [Work] = []

    /// The idle poll a loop gets unless its creator says otherwise: long enough to catch the answer to a request
    /// on this machine's loopback, short enough to cost nothing measurable on an idle node.
    public static let defaultIdlePoll: Duration = .microseconds(defaultIdlePollMicroseconds)
    public static let defaultIdlePollMicroseconds = 50

    /// Starts the loop thread. `idlePoll` of zero makes the loop sleep as soon as it runs out of work.
    public init(name: String = "tokenet-event-loop", idlePoll: Duration = defaultIdlePoll) throws(TransportError) {
        self.name = name
        let (seconds, attoseconds) = max(idlePoll, .zero).components
        self.idlePoll = max(idlePoll, .zero)
        // Capped at a day, far beyond any sensible poll, so that the nanoseconds cannot overflow.
        idlePollNanoseconds = min(seconds, 86_400) * 1_000_000_000 + attoseconds / 1_000_000_000
        ctk_ignore_sigpipe()
        let epollFD = ctk_epoll_create()
        guard epollFD >= 0 else { throw TransportError.system("epoll_create1", errno: errno) }
        let wakeFD = ctk_eventfd_create()
        guard wakeFD >= 0 else {
            let err = errno
            close(epollFD)
            throw TransportError.system("eventfd", errno: err)
        }
        guard ctk_epoll_add(epollFD, wakeFD, CTK_EPOLLIN, Self.wakeRegistration) == 0 else {
            let err = errno
            close(epollFD)
            close(wakeFD)
            throw TransportError.system("epoll_ctl", errno: err)
        }
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        let started = DispatchSemaphore(value: 0)
        let failure = NamedThread.start(name) { [self] in
            loopThread.store(UInt(pthread_self()), ordering: .releasing)
            started.signal()
            run()
            // OpenSSL frees this thread's state in a thread-exit destructor, which runs after this closure; a
            // process that exits as soon as `shutdown` returns would race it. Freed here, it is gone before then.
            OPENSSL_thread_stop()
            // A thread started later may get this thread's id (glibc reuses an ended thread's descriptor), and would
            // then pass for the loop in `inEventLoop`.
            loopThread.store(0, ordering: .releasing)
            exited.signal()
        }
        guard failure == 0 else {
            // Waited for, the thread that never started hung the node at start. (The descriptors are closed by
            // `deinit`, which runs as the initializer throws.)
            throw TransportError(
                .io,
                "cannot start the event loop's thread: \(String(cString: strerror(failure))) (errno \(failure)); the "
                    + "process may be at its address-space or thread limit (ulimit -v, ulimit -u), or each thread "
                    + "may reserve too much of it (ulimit -s)")
        }
        started.wait()
    }

    deinit {
        close(epollFD)
        close(wakeFD)
    }

    /// True when called on the loop thread.
    public var inEventLoop: Bool {
        loopThread.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Runs `task` on the loop thread. Returns false (and drops the task) when the loop has stopped, so callers
    /// can fail whatever the task was going to complete instead of leaving it waiting.
    @discardableResult
    public func execute(_ task: @escaping @Sendable () -> Void) -> Bool {
        enqueue(.closure(task))
    }

    /// Queues work; signals the eventfd only when the loop sleeps, so work queued by the loop itself (a task
    /// resumed while handling a read) costs no system call. False when the loop has stopped.
    func enqueue(_ work: Work) -> Bool {
        let wake: Bool? = shared.withLock { state in
            guard !state.stopped else { return nil }
            state.work.append(work)
            defer { state.sleeping = false }
            if state.sleeping { state.wakeUpSignals += 1 }
            return state.sleeping
        }
        guard let wake else { return false }
        if wake { _ = ctk_eventfd_signal(wakeFD) }
        return true
    }

    /// Whether work is queued behind what runs now. Called on the loop, false means nothing else runs before the
    /// loop polls its sockets again, so a writer that waits for the rest of the iteration waits for nothing.
    public var hasQueuedWork: Bool {
        precondition(inEventLoop, "hasQueuedWork asked off the event loop")
        return workLeftInBatch > 0 || shared.withLock { !$0.work.isEmpty }
    }

    /// How many times `execute` (or a job) from another thread found the loop asleep and signalled the eventfd.
    var wakeUpSignals: Int { shared.withLock { $0.wakeUpSignals } }

    /// How many times the loop skipped its idle poll because a peer on its CPU had just sent (for tests).
    var idlePollsSkipped: Int { shared.withLock { $0.idlePollsSkipped } }

    /// Runs `body` on the loop thread after `delay`, unless cancelled first.
    @discardableResult
    public func scheduleTimer(after delay: Duration, _ body: @escaping @Sendable () -> Void) -> EventLoopTimer {
        scheduleTimer(at: ContinuousClock.now.advanced(by: delay), body)
    }

    /// Runs `body` on the loop thread once `deadline` has passed, unless cancelled first.
    @discardableResult
    public func scheduleTimer(
        at deadline: ContinuousClock.Instant, _ body: @escaping @Sendable () -> Void
    ) -> EventLoopTimer {
        let (id, earliest) = shared.withLock { state in
            let id = state.nextTimerID
            state.nextTimerID += 1
            // Cancelled timers' ids are dropped once they outnumber the live ones: the heap stays O(live timers).
            if state.timerOrder.count >= 2 * state.timers.count + Self.cancelledTimersKept {
                let live = state.timers
                state.timerOrder.removeAll { live[$0] == nil }
            }
            state.timers[id] = body
            state.timerOrder.insert(id, deadline: deadline)
            return (id, state.timerOrder.earliest?.value == id)
        }
        // The loop may be sleeping past the new deadline; a later one changes nothing for it.
        if earliest && !inEventLoop { _ = ctk_eventfd_signal(wakeFD) }
        return EventLoopTimer(id: id)
    }

    public func cancelTimer(_ timer: EventLoopTimer) {
        _ = shared.withLock { $0.timers.removeValue(forKey: timer.id) }
    }

    /// How many cancelled timers the heap may hold beyond twice the live ones before it is compacted.
    private static let cancelledTimersKept = 64

    /// Stops the loop: registered connections are failed with `.eventLoopStopped`, then the thread exits.
    /// Blocks until the thread has exited unless called from the loop itself.
    public func shutdown() {
        let first = shared.withLock { state in
            defer { state.stopping = true }
            return !state.stopping
        }
        if first { _ = ctk_eventfd_signal(wakeFD) }
        if !inEventLoop {
            exited.wait()
            exited.signal()  // let later shutdown calls return too
        }
    }

    // MARK: Registration (loop thread only)

    func register(fd: Int32, interest: Interest, handler: any EventLoopHandler) throws(TransportError) -> UInt64 {
        precondition(inEventLoop, "register called off the event loop")
        guard !shared.withLock({ $0.stopping }) else {
            throw TransportError(.eventLoopStopped, "event loop \(name) is shutting down")
        }
        let id = nextRegistration
        nextRegistration += 1
        guard ctk_epoll_add(epollFD, fd, interest.epollEvents, id) == 0 else {
            throw TransportError.system("epoll_ctl(ADD)", errno: errno)
        }
        handlers[id] = handler
        return id
    }

    func setInterest(_ interest: Interest, fd: Int32, registration: UInt64) {
        precondition(inEventLoop, "setInterest called off the event loop")
        // Fails only for a descriptor that is not registered, which the callers rule out.
        _ = ctk_epoll_mod(epollFD, fd, interest.epollEvents, registration)
    }

    /// Removes the descriptor from epoll; the caller closes it afterwards.
    func deregister(fd: Int32, registration: UInt64) {
        precondition(inEventLoop, "deregister called off the event loop")
        _ = ctk_epoll_del(epollFD, fd)
        handlers.removeValue(forKey: registration)
    }

    // MARK: Loop

    private func run() {
        var events = [ctk_event](repeating: ctk_event(), count: Int(Self.maxEventsPerWait))
        var busy = false
        while true {
            var count: Int32 = 0
            let skipPoll = busy && idlePollNanoseconds > 0 && peerSharedCPUThisIteration
            if busy && idlePollNanoseconds > 0 && !skipPoll {
                let (stopping, timeout) = shared.withLock { ($0.stopping, Self.timeout(&$0)) }
                if stopping { break }
                if timeout != 0 { count = pollWhileIdle(&events, timerDueInMilliseconds: timeout) }
            }
            if count == 0 {
                let (stopping, timeout) = shared.withLock { state in
                    let timeout = Self.timeout(&state)
                    state.sleeping = timeout != 0
                    if skipPoll && timeout != 0 { state.idlePollsSkipped += 1 }
                    return (state.stopping, timeout)
                }
                if stopping { break }
                count = ctk_epoll_wait(epollFD, &events, Self.maxEventsPerWait, timeout)
                if count < 0 && errno != EINTR {
                    fatalError("epoll_wait failed on \(name): \(String(cString: strerror(errno)))")
                }
                if timeout != 0 { shared.withLock { $0.sleeping = false } }
            }
            peerSharedCPUThisIteration = false
            for index in 0..<max(0, Int(count)) {
                let event = events[index]
                if event.data == Self.wakeRegistration {
                    _ = ctk_eventfd_drain(wakeFD)
                    continue
                }
                // A handler removed earlier in this batch may still have an event here; skip it.
                guard let handler = handlers[event.data] else { continue }
                handler.handleEvent(
                    readable: event.events & CTK_EPOLLIN != 0,
                    writable: event.events & CTK_EPOLLOUT != 0,
                    failed: event.events & (CTK_EPOLLERR | CTK_EPOLLHUP) != 0)
            }
            let ranWork = runTasks()
            let ranTimers = runDueTimers()
            busy = count > 0 || ranWork || ranTimers
        }
        for handler in Array(handlers.values) { handler.eventLoopStopping() }
        handlers.removeAll()
        // The timers are dropped after the lock is released: a timer's closure may hold the last reference to an
        // object whose deinit queues work on this loop, which takes the same lock.
        let droppedTimers = shared.withLock { state in
            state.stopped = true
            state.timerOrder.removeAll()
            defer { state.timers = [:] }
            return state.timers
        }
        _ = consume droppedTimers
        // Work queued before `stopped` was set still runs, against stopped handlers; jobs queued after it go to
        // the global executor (see `enqueue(_: ExecutorJob)`).
        while shared.withLock({ !$0.work.isEmpty }) { runTasks() }
    }

    /// Runs queued work, including work the work itself queues (a resumed task queueing a flush, say), for a
    /// bounded number of rounds so that sockets are still polled under a steady stream of work.
    @discardableResult
    private func runTasks() -> Bool {
        var ran = false
        for _ in 0..<Self.workRoundsPerIteration {
            var work = spareWork.exchange([])
            shared.withLock { state in
                if !state.work.isEmpty { swap(&state.work, &work) }
            }
            if work.isEmpty {
                spareWork = work
                return ran
            }
            ran = true
            workLeftInBatch = work.count
            for item in work {
                workLeftInBatch -= 1
                switch item {
                case .closure(let closure): closure()
                case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
                }
            }
            // A burst's large array is let go rather than kept for good.
            work.removeAll(keepingCapacity: work.capacity <= Self.spareWorkCapacity)
            spareWork = work
        }
        return ran
    }

    private static let workRoundsPerIteration = 8
    private static let spareWorkCapacity = 1024

    private func runDueTimers() -> Bool {
        let now = ContinuousClock.now
        let due: [@Sendable () -> Void] = shared.withLock { state in
            // Checked first without building anything: this runs on every iteration, and mostly nothing is due.
            guard let first = state.timerOrder.earliest, first.deadline <= now else { return [] }
            var due: [@Sendable () -> Void] = []
            while let id = state.timerOrder.removeDue(at: now) {
                if let body = state.timers.removeValue(forKey: id) { due.append(body) }
            }
            return due
        }
        for body in due { body() }
        return !due.isEmpty
    }

    /// Checks the sockets and the work queue without sleeping, yielding the CPU between checks, until something
    /// arrives or `idlePoll` has passed since the loop ran out of work. Returns the number of socket events.
    ///
    /// Why: a thread that sleeps in `epoll_wait` takes a long time to wake when its CPU halted meanwhile — on the
    /// virtual machines Tokenet is measured on, about 50 µs per wake-up, more than a whole unary call costs. A
    /// request's answer usually comes back within tens of microseconds, so the loop that just sent it waits awake.
    /// `sched_yield` between checks lets any other thread that shares the CPU (the peer on a one-CPU machine) run
    /// first, and the poll ends after `idlePoll`, so a loop that is idle for longer costs nothing. Work queued from
    /// other threads meanwhile needs no eventfd signal: `sleeping` stays false and the queue is checked here.
    /// The poll also ends when the earliest timer is due (`timerDueInMilliseconds`, -1 for none), so a long
    /// configured poll never delays a timer.
    ///
    /// No poll follows an iteration that read from a peer on this thread's CPU (`peerSharedCPUThisIteration`): that
    /// peer answers only after this loop gives up the CPU, so the CPU does not halt meanwhile and the poll only
    /// competes with the peer for it. Measured with both benchmark processes on one CPU (one sitting, 06:16 UTC):
    /// a transport echo took 30.6 µs at p50 with the poll and 19.0 µs without it; a unary call 60.5 and 36.7 µs.
    /// Peers on other CPUs or hosts keep the poll.
    private func pollWhileIdle(_ events: inout [ctk_event], timerDueInMilliseconds: Int32) -> Int32 {
        let start = ctk_monotonic_ns()
        var window = idlePollNanoseconds
        if timerDueInMilliseconds >= 0 { window = min(window, Int64(timerDueInMilliseconds) * 1_000_000) }
        while true {
            if shared.withLock({ !$0.work.isEmpty || $0.stopping }) { return 0 }
            let count = ctk_epoll_wait(epollFD, &events, Self.maxEventsPerWait, 0)
            if count > 0 { return count }
            if ctk_monotonic_ns() - start >= window { return 0 }
            sched_yield()
        }
    }

    /// Milliseconds until the earliest timer (rounded up), or -1 to wait for I/O only. Cancelled timers that reached
    /// the top of the heap are dropped on the way.
    private static func timeout(_ state: inout Shared) -> Int32 {
        if !state.work.isEmpty { return 0 }
        while let first = state.timerOrder.earliest, state.timers[first.value] == nil {
            state.timerOrder.removeEarliest()
        }
        guard let deadline = state.timerOrder.earliest?.deadline else { return -1 }
        let remaining = ContinuousClock.now.duration(to: deadline)
        if remaining <= .zero { return 0 }
        let (seconds, attoseconds) = remaining.components
        // epoll_wait takes an Int32 of milliseconds (24 days); a later timer is simply looked at again then.
        if seconds >= Int64(Int32.max) / 1000 { return Int32.max }
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }
}

extension Array {
    /// Replaces the array and returns the old contents without copying.
    fileprivate mutating func exchange(_ replacement: [Element]) -> [Element] {
        let old = self
        self = replacement
        return old
    }
}

/// A loop-confined object carried across threads; it may only be touched on its loop.
struct LoopBound<Value: AnyObject>: @unchecked Sendable {
    let loop: EventLoop
    private let wrapped: Value

    init(_ value: Value, loop: EventLoop) {
        self.loop = loop
        wrapped = value
    }

    var value: Value {
        precondition(loop.inEventLoop, "loop-bound value used off its event loop")
        return wrapped
    }
}
