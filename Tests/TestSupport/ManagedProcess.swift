import Foundation
import Subprocess
import Synchronization

#if canImport(System)
    import System
#else
    import SystemPackage
#endif

/// A child process of a test, on swift-subprocess, which waits on the child's pid itself (Foundation's
/// `Process` could miss the exit of a child that left a daemon behind). Either run to completion
/// (``run(_:_:stdin:environment:workingDirectory:streams:timeout:)``), or started and left running, its
/// output in `.local/logs/<logName>.log`: then its exit is awaited by a task that owns the child, so
/// ``isRunning`` and ``waitForExit()`` report that exit, never a poll, and the child dies with the object.
public final class ManagedProcess: Sendable {
    public let name: String
    public let logPath: String
    public let pid: Int32
    private let commands: AsyncStream<Command>.Continuation
    private let child: Task<ExitStatus, Never>
    private let exit: ExitRecord

    /// The package's `executable` (``BuiltProducts``), with `environment` over this process's.
    public convenience init(_ executable: String, arguments: [String] = [], environment: [String: String], logName: String? = nil) async throws {
        try await self.init(
            path: try BuiltProducts.executable(executable), arguments: arguments, environment: environment, logName: logName ?? executable)
    }

    /// Any program at `path` (a test's helper in Python, say), with `environment` over this process's,
    /// its standard output and error in `.local/logs/<logName>.log`.
    public init(
        path: URL, arguments: [String] = [], environment: [String: String], logName: String, workingDirectory: URL? = nil
    ) async throws {
        name = path.lastPathComponent
        let logs = TestServices.repositoryRoot.appendingPathComponent(".local/logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        logPath = logs.appendingPathComponent("\(logName).log").path
        let log = try FileDescriptor.open(
            FilePath(logPath), .writeOnly, options: [.create, .truncate, .append], permissions: [.ownerReadWrite, .groupRead, .otherRead])
        let configuration = Configuration(
            executable: .path(FilePath(path.path)), arguments: Arguments(arguments),
            environment: .inherit.updating(Dictionary(uniqueKeysWithValues: environment.map { (Environment.Key(rawValue: $0.key)!, $0.value) })),
            workingDirectory: workingDirectory.map { FilePath($0.path) }, platformOptions: Self.options)
        let (commands, commander) = AsyncStream.makeStream(of: Command.self)
        let (started, starter) = AsyncThrowingStream.makeStream(of: Int32.self)
        let exit = ExitRecord()
        let logPath = logPath
        let child = Task {
            let status: ExitStatus
            do {
                let result = try await Subprocess.run(
                    configuration, input: .none, output: .fileDescriptor(log, closeAfterSpawningProcess: true), error: .combinedWithOutput
                ) { execution in
                    starter.yield(execution.processIdentifier.value)
                    await Self.serve(execution, commands)
                }
                status = ExitStatus(result.terminationStatus)
            } catch {
                starter.finish(throwing: error)
                // Not started, or started and not monitored (never seen): said in its log.
                try? "\n[ManagedProcess] \(error)\n".write(toFile: logPath, atomically: false, encoding: .utf8)
                status = .exited(-1)
            }
            exit.record(status)
            return status
        }
        var iterator = started.makeAsyncIterator()
        guard let pid = try await iterator.next() else {
            child.cancel()  // the caller was cancelled: the child must not outlive it
            throw TestSupportError("\(path.path) did not start")
        }
        self.pid = pid
        self.commands = commander
        self.child = child
        self.exit = exit
    }

    /// A child nobody stops any more is torn down (SIGTERM, SIGKILL after 5 s) by cancelling its task.
    deinit { child.cancel() }

    /// Whether the child has not exited yet, as its awaited exit says.
    public var isRunning: Bool { exit.status == nil }

    /// How it ended; `nil` while it runs.
    public var exitStatus: ExitStatus? { exit.status }

    /// Waits for the child to exit on its own.
    @discardableResult
    public func waitForExit() async -> ExitStatus { await child.value }

    /// SIGTERM, then SIGKILL if it is still running after `grace`; returns once it has exited.
    @discardableResult
    public func terminate(grace: Duration = .seconds(60)) async -> ExitStatus {
        commands.yield(.terminate(grace: grace))
        return await child.value
    }

    /// SIGKILL: no shutdown code runs, as when a machine dies. Returns once it has exited.
    @discardableResult
    public func kill9() async -> ExitStatus {
        sendKill()
        return await child.value
    }

    /// SIGKILL without waiting, for a `defer` (which cannot await); the child's task still reaps it.
    public func sendKill() { commands.yield(.kill) }

    /// Its standard output and error so far.
    public var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    // MARK: Running

    private enum Command: Sendable {
        case terminate(grace: Duration)
        case kill
    }

    /// When a child's task is cancelled (the object went away, or a run timed out).
    private static let options: PlatformOptions = {
        var options = PlatformOptions()
        options.teardownSequence = [.gracefulShutDown(allowedDurationToNextStep: .seconds(5))]
        return options
    }()

    /// Serves `commands` until the child exits. swift-subprocess has no public wait inside the body; a
    /// teardown whose one step sends signal 0 (no signal at all) and allows a year awaits the exit.
    private static func serve(_ execution: Execution<NoInput, FileDescriptorOutput, CombinedErrorOutput>, _ commands: AsyncStream<Command>) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await execution.teardown(using: [.send(signal: Signal(rawValue: 0), allowedDurationToNextStep: .seconds(365 * 86_400))])
            }
            group.addTask {
                for await command in commands {
                    switch command {
                    case .terminate(let grace): await execution.teardown(using: [.gracefulShutDown(allowedDurationToNextStep: grace)])
                    case .kill: try? execution.send(signal: .kill)
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    // MARK: Run to completion

    /// Where a run's standard output and error go.
    public enum Streams: Sendable {
        /// Captured apart (``CommandResult/stdout``, ``CommandResult/stderr``).
        case separate
        /// Standard error into standard output as it comes (`2>&1`): all in ``CommandResult/stdout``.
        case merged
        /// This process's own: nothing captured (a script whose progress belongs in the test's log).
        case inherited
    }

    /// Runs `path` with `arguments` to completion, feeding `stdin` (none when nil), in `environment`
    /// (this process's when nil) and `workingDirectory`. After `timeout` it is torn down (SIGTERM,
    /// SIGKILL 5 s later) and this throws: a guard against a hung child, not a measurement.
    public static func run(
        _ path: URL, _ arguments: [String], stdin: String? = nil, environment: [String: String]? = nil, workingDirectory: URL? = nil,
        streams: Streams = .separate, timeout: Duration? = nil
    ) async throws -> CommandResult {
        let configuration = Configuration(
            executable: .path(FilePath(path.path)), arguments: Arguments(arguments),
            environment: environment.map { .custom(Dictionary(uniqueKeysWithValues: $0.map { (Environment.Key(rawValue: $0.key)!, $0.value) })) }
                ?? .inherit,
            workingDirectory: workingDirectory.map { FilePath($0.path) }, platformOptions: options)
        guard let timeout else { return try await run(configuration, stdin: stdin, streams: streams) }
        return try await withThrowingTaskGroup(of: CommandResult.self) { group in
            group.addTask { try await run(configuration, stdin: stdin, streams: streams) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw TestSupportError("\(path.lastPathComponent) \(arguments) did not finish within \(timeout)")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// Standard input comes from a file, as a pipe would give the test process SIGPIPE were the child
    /// to exit without reading it.
    private static func run(_ configuration: Configuration, stdin: String?, streams: Streams) async throws -> CommandResult {
        guard let stdin else { return try await run(configuration, input: .none, streams: streams) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("stdin-\(UUID().uuidString.prefix(8))")
        try Data(stdin.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let input = try FileDescriptor.open(FilePath(file.path), .readOnly)
        return try await run(configuration, input: .fileDescriptor(input, closeAfterSpawningProcess: true), streams: streams)
    }

    private static func run(_ configuration: Configuration, input: some InputProtocol, streams: Streams) async throws -> CommandResult {
        let limit = 256 << 20
        switch streams {
        case .separate:
            let result = try await Subprocess.run(configuration, input: input, output: .string(limit: limit), error: .string(limit: limit))
            return CommandResult(ExitStatus(result.terminationStatus), stdout: result.standardOutput, stderr: result.standardError)
        case .merged:
            let result = try await Subprocess.run(configuration, input: input, output: .string(limit: limit), error: .combinedWithOutput)
            return CommandResult(ExitStatus(result.terminationStatus), stdout: result.standardOutput, stderr: "")
        case .inherited:
            let result = try await Subprocess.run(configuration, input: input, output: .currentStandardOutput, error: .currentStandardError)
            return CommandResult(ExitStatus(result.terminationStatus), stdout: "", stderr: "")
        }
    }
}

/// How a child process ended.
public enum ExitStatus: Sendable, Hashable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)

    init(_ status: TerminationStatus) {
        switch status {
        case .exited(let code): self = .exited(code)
        case .signaled(let signal): self = .signalled(signal)
        }
    }

    /// The shell's number for it: the exit code, or 128 + the signal.
    public var code: Int32 {
        switch self {
        case .exited(let code): code
        case .signalled(let signal): 128 + signal
        }
    }

    public var description: String {
        switch self {
        case .exited(let code): "exited \(code)"
        case .signalled(let signal): "killed by signal \(signal)"
        }
    }
}

/// What a finished command left: how it ended and its output.
public struct CommandResult: Sendable {
    public let exit: ExitStatus
    public let stdout: String
    public let stderr: String

    init(_ exit: ExitStatus, stdout: String, stderr: String) {
        self.exit = exit
        self.stdout = stdout
        self.stderr = stderr
    }

    /// The shell's number for how it ended (``ExitStatus/code``).
    public var status: Int32 { exit.code }

    /// Standard output, then standard error.
    public var output: String { stdout + stderr }
}

/// The exit a child's task recorded, for the synchronous ``ManagedProcess/isRunning``.
private final class ExitRecord: Sendable {
    private let value = Mutex<ExitStatus?>(nil)
    var status: ExitStatus? { value.withLock { $0 } }
    func record(_ status: ExitStatus) { value.withLock { $0 = status } }
}
