import Foundation
import TestSupport
import Testing

/// TestSupport's process helper: what every process test relies on (output, exit status, stopping).
@Suite("ManagedProcess: children run to completion or stopped, their exit awaited")
struct ManagedProcessTests {
    static let bash = URL(fileURLWithPath: "/bin/bash")

    @Test("a run captures standard output and error apart, or merged in order, and its stdin and working directory")
    func capturesOutput() async throws {
        let separate = try await ManagedProcess.run(Self.bash, ["-c", "echo out; echo err >&2"])
        #expect(separate.exit == .exited(0))
        #expect(separate.stdout == "out\n" && separate.stderr == "err\n")
        let merged = try await ManagedProcess.run(Self.bash, ["-c", "echo one; echo two >&2; echo three"], streams: .merged)
        #expect(merged.stdout == "one\ntwo\nthree\n")
        let fed = try await ManagedProcess.run(
            Self.bash, ["-c", "cat; pwd; echo \"$ONLY\""], stdin: "in\n", environment: ["ONLY": "this"],
            workingDirectory: URL(fileURLWithPath: "/tmp"))
        #expect(fed.stdout == "in\n/tmp\nthis\n")
    }

    @Test("a nonzero exit status is reported, not thrown")
    func nonzeroExit() async throws {
        let result = try await ManagedProcess.run(Self.bash, ["-c", "echo failing >&2; exit 3"])
        #expect(result.exit == .exited(3) && result.status == 3)
        #expect(result.stderr == "failing\n")
        let inherited = try await ManagedProcess.run(Self.bash, ["-c", "echo to the test log; exit 4"], streams: .inherited)
        #expect(inherited.exit == .exited(4) && inherited.output.isEmpty, "a script's output goes to the test's own")
    }

    @Test("terminate() ends a long-running child by SIGTERM, reported as signalled")
    func terminateEndsChild() async throws {
        let child = try await ManagedProcess(
            path: Self.bash, arguments: ["-c", "exec sleep 1000"], environment: [:], logName: "managed-process-sleep")
        #expect(child.isRunning)
        #expect(child.exitStatus == nil)
        let status = await child.terminate()
        #expect(status == .signalled(SIGTERM))
        #expect(!child.isRunning && child.exitStatus == status)
        #expect(await child.terminate() == status, "a second terminate() reports the same exit")
    }

    @Test("a child that ignores SIGTERM is killed once the grace period has passed")
    func killedAfterGrace() async throws {
        let child = try await ManagedProcess(
            path: Self.bash, arguments: ["-c", "trap '' TERM; echo trapped; exec sleep 1000"], environment: [:], logName: "managed-process-trap")
        // SIGTERM is ignored once the trap is set (it says so), by sleep too, which inherits it.
        while !child.output.contains("trapped") { try await Task.sleep(for: .milliseconds(20)) }
        let start = ContinuousClock.now
        #expect(await child.terminate(grace: .milliseconds(500)) == .signalled(SIGKILL))
        #expect(ContinuousClock.now - start >= .milliseconds(500), "SIGKILL came only after the grace period")
    }

    @Test("a child's own exit is awaited: waitForExit() and isRunning report it")
    func exitAwaited() async throws {
        let child = try await ManagedProcess(
            path: Self.bash, arguments: ["-c", "echo \"$GIVEN\"; exit 7"], environment: ["GIVEN": "given"], logName: "managed-process-exit")
        #expect(await child.waitForExit() == .exited(7))
        #expect(!child.isRunning)
        #expect(child.output == "given\n")
        #expect(await child.kill9() == .exited(7), "killing an exited child changes nothing")
    }
}
