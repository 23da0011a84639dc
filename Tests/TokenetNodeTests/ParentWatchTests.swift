import Foundation
import Testing

@testable import TokenetNode

#if canImport(Glibc)
    import Glibc
#endif

/// `--parent-pid` names a process whose end stops the node: one that ended and waits to be reaped (a zombie, whose
/// parent has not collected it) has ended too. A harness that killed its runner without reaping it left the nodes
/// running.
@Suite struct ParentWatchTests {
    @Test func anEndedProcessNotYetReapedHasEnded() throws {
        var pid: pid_t = 0
        let arguments = ["/bin/true"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let spawned = posix_spawn(&pid, "/bin/true", nil, nil, &argv, environ)
        try #require(spawned == 0)
        // Not reaped until waitpid below: it is a zombie once it has exited.
        for _ in 0..<500 where !ParentWatch.isZombie(pid) { usleep(10_000) }
        #expect(ParentWatch.isZombie(pid))
        #expect(ParentWatch.ended(pid, wasChild: false))
        #expect(throws: NodeError.self) { try ParentWatch.checkRunning(pid) }
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        #expect(ParentWatch.ended(pid, wasChild: false))
        #expect(!ParentWatch.isZombie(getpid()) && !ParentWatch.ended(getpid(), wasChild: false))
    }
}
