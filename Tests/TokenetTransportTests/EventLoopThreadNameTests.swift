import Foundation
import Testing

@testable import TokenetTransport

/// The loop's thread carries its name where `top -H`, perf and debuggers look for it, cut to the 15 bytes the
/// kernel keeps (a longer name used to leave the thread named after the process).
@Suite struct EventLoopThreadNameTests {
    @Test func theLoopThreadIsNamedAfterTheLoop() async throws {
        let loop = try EventLoop(name: "tokenet-name-test-loop")
        defer { loop.shutdown() }
        let name: String = await withCheckedContinuation { continuation in
            loop.execute {
                let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                continuation.resume(returning: comm.trimmingCharacters(in: .newlines))
            }
        }
        #expect(name == "tokenet-name-te")
    }
}
