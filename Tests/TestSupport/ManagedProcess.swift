import Foundation
import Synchronization

/// One of the project's executables started as a child process, for tests that crash, restart
/// and measure whole processes. Output goes to a log file under `.local/logs/`.
public final class ManagedProcess: @unchecked Sendable {
    public let name: String
    private let process = Process()
    public let logPath: String

    public convenience init(_ executable: String, arguments: [String] = [], environment: [String: String], logName: String? = nil) throws {
        try self.init(path: try BuiltProducts.executable(executable), arguments: arguments, environment: environment, logName: logName ?? executable)
    }

    /// Any program at `path` (a test's helper in Python, say), its output in `.local/logs/<logName>.log`.
    public init(path: URL, arguments: [String] = [], environment: [String: String], logName: String) throws {
        name = path.lastPathComponent
        let logs = TestServices.repositoryRoot.appendingPathComponent(".local/logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        logPath = logs.appendingPathComponent("\(logName).log").path
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.executableURL = path
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        process.environment = env
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// SIGKILL: no shutdown code runs, as when a machine dies.
    public func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM, then wait for the exit status; SIGKILL once `timeout` (when given) has passed.
    @discardableResult
    public func terminate(timeout: Duration? = nil) async -> Int32 {
        process.terminate()
        if let timeout {
            let deadline = ContinuousClock.now + timeout
            while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        return await waitForExit()
    }

    public func waitForExit() async -> Int32 {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
        return process.terminationStatus
    }

    /// Standard output so far (for programs whose stdout is captured to the log).
    public var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}

public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Small HTTP helpers for process tests.
public enum LocalHTTP {
    /// Every port this process handed out: the kernel may offer a released port again at once, and
    /// two pipelines started side by side then gave one port to two children (grant stopped on
    /// "Address already in use" while the other's listener answered for it).
    private static let handedOut = Mutex<Set<Int>>([])

    /// A TCP port that was free a moment ago and that this process never handed out before.
    public static func freePort() -> Int {
        for _ in 0..<1_000 {
            guard let held = try? HeldPort() else { return 0 }
            defer { held.release() }
            if handedOut.withLock({ $0.insert(held.port).inserted }) { return held.port }
        }
        return 0
    }

    /// Waits until `127.0.0.1:port` accepts connections.
    public static func waitForPort(_ port: Int, timeout: Duration = .seconds(120)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if TestServices.portOpen("127.0.0.1:\(port)") { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestSupportError("nothing listens on 127.0.0.1:\(port) after \(timeout)")
    }

    /// Runs a shell script of the repository (e.g. `deploy/local/down broker`) and waits for it.
    /// Uses posix_spawn and waitpid directly: Foundation's `Process` can miss the exit of a
    /// script that leaves a daemon behind (as `up` does with the broker).
    public static func runScript(_ path: String, _ arguments: [String]) async throws {
        let argv = ["/bin/bash", TestServices.repositoryRoot.appendingPathComponent(path).path] + arguments
        let status: Int32 = await withCheckedContinuation { continuation in
            let thread = Thread {
                var pid: pid_t = 0
                var cArgs = argv.map { strdup($0) } + [nil]
                defer { for a in cArgs { free(a) } }
                guard posix_spawn(&pid, "/bin/bash", nil, nil, &cArgs, environ) == 0 else {
                    continuation.resume(returning: -1)
                    return
                }
                var status: Int32 = 0
                while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                continuation.resume(returning: (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f))
            }
            thread.start()
        }
        guard status == 0 else { throw TestSupportError("\(path) \(arguments) exited \(status)") }
    }
}

/// A listening socket on a loopback port, so that a process started on that port cannot bind it.
public final class HeldPort {
    private var fd: Int32
    public let port: Int

    public init() throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, len) } }
        guard bound == 0, listen(socketFD, 1) == 0 else {
            close(socketFD)
            throw TestSupportError("could not hold a loopback port")
        }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &len) } }
        fd = socketFD
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    public func release() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit { release() }
}
